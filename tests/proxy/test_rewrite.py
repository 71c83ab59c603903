"""The pure core: which tool results are rewritten, with what command/intent, and byte-stable output."""

from __future__ import annotations

import json

from capsule.proxy import rewrite
from capsule.ground.types import Observation

BIG = "\n".join(f"line {i} of a long output" for i in range(200))


def _anthropic(result_content, tool="Read", args=None, text="Reading the config to find the port."):
    return {"model": "m", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "text", "text": text},
                                          {"type": "tool_use", "id": "toolu_1", "name": tool,
                                           "input": args or {"file_path": "/w/app.cfg"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": result_content}]},
    ]}


def test_anthropic_result_gets_command_path_and_intent_of_the_preceding_turn():
    seen = []

    def shrink(call, text):
        seen.append(call)
        return "SHORT"

    body = _anthropic(BIG)
    out = rewrite.rewrite("anthropic", body, shrink, shims_on=False)
    assert json.loads(out)["messages"][2]["content"][0]["content"] == "SHORT"
    assert seen[0].path == "/w/app.cfg" and seen[0].intent == "Reading the config to find the port."
    assert seen[0].tool == "Read" and seen[0].call_id == "toolu_1"


def test_bash_result_carries_command_and_exit_code_and_is_left_to_shims_when_they_are_on():
    calls = []
    body = _anthropic("Exit code 2\n" + BIG, tool="Bash", args={"command": "make test", "description": "run tests"})
    rewrite.rewrite("anthropic", body, lambda c, t: rewrite.engine_view(c, t, lambda c2, t2: calls.append(c2) or t2),
                    shims_on=False)
    assert calls[0].command == "make test" and calls[0].exit_code == 2
    calls.clear()
    assert rewrite.rewrite("anthropic", _anthropic(BIG, tool="Bash", args={"command": "ls"}),
                           lambda c, t: calls.append(c) or "X", shims_on=True) is None
    assert calls == []


def test_blocks_capsule_already_shrank_small_blocks_and_own_tools_are_left_alone():
    never = lambda c, t: (_ for _ in ()).throw(AssertionError("called"))  # noqa: E731
    footer = BIG + "\n[full output: capsule ctx expand <<ccr:0123456789abcdef01234567>>]"
    assert rewrite.rewrite("anthropic", _anthropic(footer), never, shims_on=False) is None
    assert rewrite.rewrite("anthropic", _anthropic("short"), never, shims_on=False) is None
    assert rewrite.rewrite("anthropic", _anthropic(BIG, tool="mcp__capsule__ctx_read"), never, shims_on=False) is None


def test_list_content_rewrites_text_items_only():
    body = _anthropic([{"type": "text", "text": BIG}, {"type": "image", "source": {"data": "AAAA"}}])
    out = json.loads(rewrite.rewrite("anthropic", body, lambda c, t: "S", shims_on=False))
    content = out["messages"][2]["content"][0]["content"]
    assert content[0]["text"] == "S" and content[1] == {"type": "image", "source": {"data": "AAAA"}}


def test_openai_function_call_output_with_namespace_and_command():
    body = {"model": "gpt", "prompt_cache_key": "thread-1", "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "I will list files."}]},
        {"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": json.dumps({"cmd": "ls -la"})},
        {"type": "function_call_output", "call_id": "c1", "output": "Process exited with code 1\n" + BIG},
        {"type": "function_call", "call_id": "c2", "name": "ctx_read", "namespace": "mcp__capsule", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c2", "output": BIG},
    ]}
    calls = []
    out = json.loads(rewrite.rewrite("openai", body, lambda c, t: rewrite.engine_view(
        c, t, lambda c2, t2: calls.append(c2) or "S"), shims_on=False))
    assert [c.call_id for c in calls] == ["c1"]       # capsule's own MCP tool is left alone
    assert calls[0].command == "ls -la" and calls[0].exit_code == 1 and calls[0].intent == "I will list files."
    assert out["input"][3]["output"] == "S" and out["input"][5]["output"] == BIG
    assert rewrite.conversation("openai", body, {}) == "thread-1"


def test_serialization_is_compact_deterministic_and_unicode_safe():
    body = {"b": "ünï — 😀", "a": [1, 2.5, None, True], "lone": "\ud800"}
    once = rewrite.serialize(body)
    assert once == rewrite.serialize(json.loads(once))
    assert json.loads(once) == body


def test_unknown_shapes_change_nothing():
    for api in ("anthropic", "openai"):
        assert rewrite.rewrite(api, ["not", "a", "dict"], lambda c, t: "X", shims_on=False) is None
        assert rewrite.rewrite(api, {"messages": "x", "input": 3}, lambda c, t: "X", shims_on=False) is None


def test_conversation_label_from_claude_code_session():
    meta = {"user_id": json.dumps({"device_id": "d", "session_id": "abc-123"})}
    assert rewrite.conversation("anthropic", {"metadata": meta, "messages": []}, {}) == "abc-123"
    assert rewrite.conversation("anthropic", {"messages": []}, {"x-claude-code-session-id": "s9"}) == "s9"
    a = rewrite.conversation("anthropic", {"messages": [{"role": "user", "content": "one"}]}, {})
    b = rewrite.conversation("anthropic", {"messages": [{"role": "user", "content": "two"}]}, {})
    assert a != b and a.startswith("root-")


def test_numbered_read_goes_to_the_engine_as_the_files_text_and_kept_lines_get_their_numbers():
    numbered = "\n".join(f"{i + 1}\t{line}" for i, line in enumerate(["x = 1", "", "\tindented", "x = 1", "end", ""]))
    seen = []

    def shrink(call, text):
        seen.append(text)
        return "x = 1\n[3 more lines]\nend\n[full output: capsule ctx expand <<ccr:0123456789abcdef01234567>>]"

    body = _anthropic(numbered + "\n" + "\n".join(f"{i}\tpad {i}" for i in range(7, 40)))
    out = json.loads(rewrite.rewrite("anthropic", body, lambda c, t: rewrite.engine_view(c, t, shrink),
                                     shims_on=False))["messages"][2]["content"][0]["content"]
    assert seen[0].startswith("x = 1\n\n\tindented\nx = 1\nend\n\npad 7\n")
    assert out.splitlines()[:3] == ["1\tx = 1", "[3 more lines]", "5\tend"]
    assert rewrite.unnumber("1\ta\n3\tb") is None and rewrite.unnumber("a\tb") is None
    assert rewrite.unnumber("7\ta\n8\tb\n9\t") == ("a\nb\n", 7)


def test_bodies_orjson_refuses_are_read_and_written_back_by_the_json_module():
    for raw in (b'{"t": NaN, "n": 123456789012345678901234567890, "s": "\\ud800x"}',):
        body = rewrite.parse(raw)
        assert body["n"] == 123456789012345678901234567890 and body["s"] == "\ud800x"
        out = rewrite.serialize(body)
        assert out == rewrite.serialize(rewrite.parse(out))           # stable across requests
        assert b"NaN" in out and b"123456789012345678901234567890" in out
    plain = rewrite.parse(b'{"a": [1, 2.5, "\\u00fc"]}')
    assert rewrite.serialize(plain) == '{"a":[1,2.5,"ü"]}'.encode()


def test_memo_memory_is_bounded_and_values_survive_on_disk(tmp_path, monkeypatch):
    from capsule.store import conversation_memo as memo_mod

    monkeypatch.setattr(memo_mod, "LRU_CHARS", 10_000)
    m = memo_mod.Memo(tmp_path / "proxy.db")
    for i in range(50):
        assert m.put("anthropic", "s", f"c{i}", "x" * 1000 + str(i), f"short {i}") == f"short {i}"
    assert m._chars <= 10_000 and len(m._lru) < 50
    assert m.get("anthropic", "s", "c0", "x" * 1000 + "0") == "short 0"          # evicted from memory, read from disk
    assert m.put("anthropic", "s", "c0", "x" * 1000 + "0", "other") == "short 0"  # the first value stays (INV-1)
    assert m.get("anthropic", "s", "c0", "y") is memo_mod.Memo.MISSING
    m.close()


def _source(n: int) -> str:
    out = []
    for i in range(n // 5):
        out += [f"def step_{i}(value):", f"    total = value * {i}", f"    if total > {i * 7}:",
                f"        return total - {i}", "    return total"]
    return "\n".join(out) + "\n"


def _numbered(text: str, start: int = 1) -> str:
    return "\n".join(f"{start + i}\t{ln}" for i, ln in enumerate(text.split("\n")[:-1]))


def test_a_read_tool_call_is_given_to_the_engine_as_the_shell_read_it_stands_for():
    calls = []
    keep = lambda c, t: calls.append(c) or t  # noqa: E731
    rewrite.rewrite("anthropic", _anthropic(BIG, args={"file_path": "/w/a b.py", "offset": 100, "limit": 50}), keep,
                    shims_on=False)
    rewrite.rewrite("anthropic", _anthropic(BIG, args={"file_path": "/w/a.py", "offset": 10}), keep, shims_on=False)
    rewrite.rewrite("anthropic", _anthropic(BIG, args={"file_path": "/w/a.py"}), keep, shims_on=False)
    assert [c.command for c in calls] == ["sed -n '100,149p' '/w/a b.py'", "sed -n '10,2009p' /w/a.py", "cat /w/a.py"]


def test_reads_through_the_proxy_follow_the_read_rules_of_the_real_engine(tmp_path):
    """A bounded Read passes whole (the agent edits those very lines); a whole-file Read of long source
    becomes an outline with line numbers, so the next Read can be exact."""
    from capsule.engine import Engine

    engine = Engine(state_dir=tmp_path / "state")

    def observe(call, text):
        return engine.observe(Observation(text.encode(), command=call.command, path=call.path, intent=call.intent,
                              stream="stdout")).data.decode()

    source = _source(1500)
    window = "".join(ln + "\n" for ln in source.split("\n")[399:799])
    body = _anthropic(_numbered(window, 400), args={"file_path": "/w/steps.py", "offset": 400, "limit": 400})
    out = rewrite.rewrite("anthropic", body, lambda c, t: rewrite.engine_view(c, t, observe), shims_on=False)
    assert out is None    # unchanged: every line of the bounded view reaches the model
    whole = _anthropic(_numbered(source), args={"file_path": "/w/steps.py"})
    shown = json.loads(rewrite.rewrite("anthropic", whole, lambda c, t: rewrite.engine_view(c, t, observe),
                                       shims_on=False))["messages"][2]["content"][0]["content"]
    assert len(shown) < len(_numbered(source)) / 3
    assert "def step_250(value):" in shown and "<<ccr:" in shown


def test_results_the_hook_door_owns_are_left_alone_when_it_is_on():
    """Claude Code's hook door answers native reads and other MCP servers' results: with it on, the
    proxy never shrinks them (a result is shrunk once); Bash stays the shims' business either way."""
    calls = []
    for tool, args in (("Read", None), ("Grep", {"pattern": "x"}), ("Glob", {"pattern": "*"}),
                       ("WebFetch", {"url": "http://x"}), ("mcp__docs__search", {"q": "x"})):
        assert rewrite.rewrite("anthropic", _anthropic(BIG, tool=tool, args=args), lambda c, t: calls.append(c) or "X",
                               shims_on=True, hooks_on=True) is None
        assert rewrite.rewrite("anthropic", _anthropic(BIG, tool=tool, args=args), lambda c, t: calls.append(c) or "X",
                               shims_on=True, hooks_on=False) is not None
    assert [c.tool for c in calls] == ["Read", "Grep", "Glob", "WebFetch", "mcp__docs__search"]
    out = rewrite.rewrite("anthropic", _anthropic(BIG, tool="Bash", args={"command": "ls"}), lambda c, t: "X",
                          shims_on=False, hooks_on=True)
    assert json.loads(out)["messages"][2]["content"][0]["content"] == "X"
