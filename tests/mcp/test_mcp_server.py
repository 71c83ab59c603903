"""The read door through the official SDK client over stdio, against `capsule mcp serve`."""

from __future__ import annotations

import json
import re

from capsule.ground.tokens import count

from tests.mcp.conftest import Session, text_of


def test_tools_list_names_plain_text_and_budget(session):
    (listing,) = session.run([("tools/list", None)])
    names = sorted(t.name for t in listing.tools)
    assert names == ["ctx_doc", "ctx_expand", "ctx_read", "ctx_search"]
    for tool in listing.tools:
        assert tool.output_schema is None, f"{tool.name} would reach the model as a JSON wrapper"
    wire = json.dumps(listing.model_dump(mode="json", by_alias=True, exclude_none=True))
    assert count(wire) <= 1500


def test_the_server_lists_exactly_the_data_file_and_declares_tools_only(workspace, state_dir):
    """doctor counts prompt/data/tools.toml; the live server must list exactly that, and declare no
    resources capability (else Claude Code adds its three MCP resource tools to every request)."""
    import asyncio

    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client

    from capsule.prompt import surface

    async def go():
        async with stdio_client(Session(workspace, state_dir).params) as (read, write):
            async with ClientSession(read, write) as client:
                init = await client.initialize()
                return init, await client.list_tools()

    init, listing = asyncio.run(go())
    assert init.capabilities.resources is None and init.capabilities.prompts is None
    assert init.capabilities.tools is not None
    assert init.instructions == surface.load()["instructions"]
    got = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listing.tools]
    want = [{"name": t["name"], "description": t["description"], "inputSchema": t["input_schema"]}
            for t in surface.load()["tools"]]
    assert got == want


def test_bad_arguments_are_is_error_naming_the_argument(session):
    unknown, wrong, missing = session.run([("ctx_read", {"path": "README.md", "turbo": True}),
                                           ("ctx_search", {"query": "x", "k": "many"}),
                                           ("ctx_doc", {})])
    assert unknown.is_error and "'turbo'" in text_of(unknown) and "path" in text_of(unknown)
    assert wrong.is_error and "'k' must be of type integer" in text_of(wrong)
    assert missing.is_error and "missing argument 'target'" in text_of(missing)


def test_read_full_is_verbatim_and_not_structured(session, workspace):
    (res,) = session.run([("ctx_read", {"path": "pkg/small.py", "mode": "full"})])
    assert not res.is_error
    assert text_of(res) == (workspace / "pkg" / "small.py").read_text()
    assert res.structured_content is None


def test_reread_same_scope_is_a_short_stub(session):
    first, second = session.run([("ctx_read", {"path": "README.md", "mode": "full"}),
                                 ("ctx_read", {"path": "README.md", "mode": "full"})])
    assert "pip install demo" in text_of(first)
    stub = text_of(second)
    assert "unchanged" in stub and "pip install demo" not in stub
    assert count(stub) <= 20


def test_subagent_task_never_gets_parent_stub(session):
    parent, child, child_again = session.run([
        ("ctx_read", {"path": "README.md", "mode": "full"}),
        ("ctx_read", {"path": "README.md", "mode": "full", "task": "t1"}),
        ("ctx_read", {"path": "README.md", "mode": "full", "task": "t1"})])
    assert "pip install demo" in text_of(parent)
    assert "pip install demo" in text_of(child)          # the task never saw it: full text
    assert "unchanged" in text_of(child_again)


def test_new_server_is_a_new_conversation(workspace, state_dir):
    s = Session(workspace, state_dir)
    (first,) = s.run([("ctx_read", {"path": "README.md", "mode": "full"})])
    (again,) = Session(workspace, state_dir).run([("ctx_read", {"path": "README.md", "mode": "full"})])
    assert "pip install demo" in text_of(first) and "pip install demo" in text_of(again)


def test_errors_are_is_error_with_the_fix(session):
    outside, unknown, missing = session.run([
        ("ctx_read", {"path": "../outside.txt"}),
        ("ctx_read", {"path": "README.md", "mode": "bogus"}),
        ("ctx_read", {"path": "nope.txt"})])
    assert outside.is_error and "outside the workspace" in text_of(outside)
    assert unknown.is_error and "unknown mode" in text_of(unknown) and "lines:N-M" in text_of(unknown)
    assert missing.is_error and "no such file" in text_of(missing)


def test_lines_and_anchored_modes(session):
    lines, anchored = session.run([("ctx_read", {"path": "README.md", "mode": "lines:1,5-7"}),
                                   ("ctx_read", {"path": "README.md", "mode": "anchored"})])
    assert text_of(lines).splitlines() == ["1| # Demo", "5| ## Install", "6| ", "7| pip install demo"]
    first = text_of(anchored).splitlines()[0]
    assert first.startswith("1#") and first.endswith("| # Demo")


def test_search_finds_camel_and_snake_parts_and_honours_gitignore(session):
    camel, snake = session.run([("ctx_search", {"query": "token parser"}),
                                ("ctx_search", {"query": "parse_header", "k": 3})])
    assert text_of(camel).splitlines()[0].startswith("pkg/parser.py:1:")
    assert "secret/keys.txt" not in text_of(camel)
    assert "pkg/parser.py:2:" in text_of(snake)


def test_doc_lists_headings_and_returns_a_section(session):
    listing, section = session.run([("ctx_doc", {"target": "README.md"}),
                                    ("ctx_doc", {"target": "install demo", "section": "Install"})])
    assert "Install (line 5)" in text_of(listing)
    assert text_of(section).startswith("## Install") and "Run it." not in text_of(section)


def test_expand_unknown_handle_is_error(session):
    (res,) = session.run([("ctx_expand", {"handle": "<<ccr:0000deadbeef>>"})])
    assert res.is_error and "ccr:0000deadbeef" in text_of(res)


def test_no_mcp_switch_keeps_server_off(workspace, state_dir):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "capsule", "mcp", "serve", "--root", str(workspace)],
                          input=b"", capture_output=True, timeout=60,
                          env={"JACKIN_CTX_STATE_DIR": str(state_dir), "JACKIN_CTX_NO_MCP": "1"})
    assert proc.returncode == 0 and b"JACKIN_CTX_NO_MCP" in proc.stderr


def test_expand_recovers_archived_original_lines_and_grep(session, state_dir):
    from capsule.store.archive import Archive

    original = b"".join(b"row %d value\n" % i for i in range(1, 41)) + b"ERROR boom\n"
    handle = Archive().put(original)
    full, part, grep = session.run([
        ("ctx_expand", {"handle": f"<<ccr:{handle}>>"}),
        ("ctx_expand", {"handle": handle, "lines": "2-3"}),
        ("ctx_expand", {"handle": handle, "grep": "error"})])
    assert text_of(full).encode() == original
    # one selection rule for both doors (retrieve/expand.py): the lines byte for byte, matches as
    # `N:line` (grep -n), a smart-case RE2 pattern — the same bytes `capsule ctx expand` writes
    assert text_of(part) == "row 2 value\nrow 3 value\n"
    assert text_of(grep) == "41:ERROR boom\n"


def test_reads_are_in_the_ledger(session, state_dir):
    from capsule.measure.ledger import Ledger

    session.run([("ctx_read", {"path": "pkg/big.py"}), ("ctx_read", {"path": "pkg/big.py"})])
    rows = [r for r in Ledger().rows() if r["family"] == "read"]
    assert [r["transform"] for r in rows] == ["read:signatures", "read:stub"]
    assert all(r["applied"] and r["emitted_tokens"] < r["raw_tokens"] for r in rows)
    assert rows[1]["emitted_tokens"] <= 20


def test_measure_mode_changes_nothing_unasked_but_counts(workspace, state_dir):
    from capsule.measure.ledger import Ledger
    from tests.mcp.conftest import BIG_PY

    s = Session(workspace, state_dir, {"JACKIN_CTX_MODE": "measure"})
    auto, again, asked = s.run([("ctx_read", {"path": "pkg/big.py"}), ("ctx_read", {"path": "pkg/big.py"}),
                                ("ctx_read", {"path": "pkg/big.py", "mode": "lines:1-2"})])
    assert text_of(auto) == BIG_PY and text_of(again) == BIG_PY      # no signatures, no stub
    assert text_of(asked).startswith("1| def function_0")             # an explicit mode is honoured
    rows = [r for r in Ledger().rows() if r["family"] == "read"]
    # Recorded like every door's measure row (one row builder): emitted is what was sent (the whole
    # file), would_emit what the active door would have sent (the stub).
    assert not rows[0]["applied"] and rows[1]["emitted_tokens"] == rows[1]["raw_tokens"]
    assert rows[1]["would_emit_tokens"] <= 20                               # what the stub would have saved


def test_codex_window_is_the_scope_compaction_and_subagent_threads_get_full_text(session):
    read = {"path": "README.md", "mode": "full"}
    first, same, compacted, subagent = session.run([
        ("ctx_read", read, {"threadId": "T", "windowId": "T:0"}),
        ("ctx_read", read, {"threadId": "T", "windowId": "T:0"}),
        ("ctx_read", read, {"threadId": "T", "windowId": "T:1"}),     # after a compaction
        ("ctx_read", read, {"threadId": "U", "windowId": "U:0"})])    # a spawned agent's thread
    assert "pip install demo" in text_of(first)
    assert "unchanged" in text_of(same)
    assert "pip install demo" in text_of(compacted) and "pip install demo" in text_of(subagent)


def test_non_utf8_file_answers_instead_of_hanging(session, workspace):
    (workspace / "latin1.txt").write_bytes(b"caf\xe9 ok\nline2\n")
    first, again = session.run([("ctx_read", {"path": "latin1.txt", "mode": "full"}),
                                ("ctx_read", {"path": "latin1.txt", "mode": "full"})])
    assert not first.is_error and text_of(first) == "caf\ufffd ok\nline2\n"
    assert "unchanged" in text_of(again)


def test_role_mode_measure_keeps_auto_reads_full(workspace, state_dir):
    from tests.mcp.conftest import BIG_PY

    (measured,) = Session(workspace, state_dir, {"JACKIN_CTX_ROLE": "default"}).run(
        [("ctx_read", {"path": "pkg/big.py"})])
    assert text_of(measured) == BIG_PY           # the default role is mode = "measure"
    (active,) = Session(workspace, state_dir, {"JACKIN_CTX_ROLE": "default", "JACKIN_CTX_MODE": "standard"}).run(
        [("ctx_read", {"path": "pkg/big.py"})])
    assert "def function_0(alpha, beta):" in text_of(active) and "x5 = alpha" not in text_of(active)


def test_doc_follows_the_callers_scope_and_reports_binary(session, workspace):
    (workspace / "blob.md").write_bytes(b"\x00\x01binary")
    a, b, other, binary = session.run([
        ("ctx_doc", {"target": "README.md", "section": "Install"}, {"threadId": "T", "windowId": "T:0"}),
        ("ctx_doc", {"target": "README.md", "section": "Install"}, {"threadId": "T", "windowId": "T:0"}),
        ("ctx_doc", {"target": "README.md", "section": "Install"}, {"threadId": "U", "windowId": "U:0"}),
        ("ctx_doc", {"target": "blob.md"})])
    assert "pip install demo" in text_of(a) and "unchanged" in text_of(b)
    assert "pip install demo" in text_of(other)
    assert binary.is_error and "binary" in text_of(binary)


def test_read_with_intent_keeps_relevant_lines_and_records_no_stub(session, workspace, tmp_path):
    import subprocess
    import sys

    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "test_many.py").write_text("".join(f"def test_ok_{i}():\n    assert True\n\n" for i in range(150))
                                       + "def test_money():\n    assert 0.1 + 0.2 == 0.3, 'float sum'\n")
    log = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "test_many.py"],
                         capture_output=True, text=True, cwd=proj).stdout
    (workspace / "pytest.log").write_text(log)
    focused, full = session.run([
        ("ctx_read", {"path": "pytest.log", "intent": "why does test_money fail"}),
        ("ctx_read", {"path": "pytest.log"}),
    ])
    text = text_of(focused)
    assert "E       AssertionError: float sum" in text
    # the engine's one marker and footer (the door contract): the original is one ctx_expand away
    assert re.search(r"\[\d+ more lines\]", text) and "<<ccr:" in text
    assert count(text) < count(log) // 2
    # The focused read sent part of the file: the next plain read is the whole file, not a stub.
    assert text_of(full) == log


def test_intent_over_the_limit_is_shortened_not_an_error(session):
    # Issue 25: an over-long goal was an error; the read must never be lost to it.
    (res,) = session.run([("ctx_read", {"path": "README.md", "intent": "word " * 300})])
    assert not res.is_error and text_of(res)
