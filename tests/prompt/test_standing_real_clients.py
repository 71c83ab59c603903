"""INV-6 on the wire: what capsule adds to the real Claude Code's and Codex's requests is exactly
what `capsule ctx doctor` counts, it sits in the standing part of every request, and it is
byte-identical across the calls of a session and across two sessions of the same role.

Real clients against a local fake model API (tests/prompt/capture.py); a missing client is a
failure, never a skip.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from capsule.prompt import surface
from capsule.policy.manifest import load_role
from capsule.ground.switches import Switches
from capsule.prompt import budget, pack
from capsule.policy import plan as planning
from tests.prompt import capture

ROLE = "python-dev"


def _role_file(tmp_path, name: str, kind: str, output: str):
    path = tmp_path / f"{name}.toml"
    path.write_text(f'schema = 1\nname = "{name}"\n\n[agent]\nkind = "{kind}"\n\n[context]\nmode = "measure"\n\n'
                    f'[context.output]\n{output}\n')
    return path


@pytest.fixture
def ws(tmp_path):
    d = tmp_path / "ws"
    d.mkdir()
    (d / "README.md").write_text("# Demo\n\nIntro.\n")
    return d


def _expected_texts(client: str, role_name) -> dict[str, str]:
    role = load_role(role_name)
    return budget.texts(client, role, planning.plan(role, Switches.read({})))


def test_claude_code_requests_carry_exactly_what_doctor_counts(ws, tmp_path):
    """A role without routing: the plain run is the same model with the same agents, so every line
    capsule adds is the prompt layer's (the route layer's model and agent pins are issue 18's)."""
    home = tmp_path / "home"
    role = _role_file(tmp_path, "claude-dev", "claude", 'register = "terse"')
    plain = capture.claude(ws, home)
    first = capture.claude(ws, home, role=role)
    second = capture.claude(ws, home, role=role)
    assert len(first.requests) >= 2, first.stderr[-2000:]     # the scripted ctx_read, then the answer

    # tools: capsule's four as Claude Code wraps them, and no MCP resource tools
    added = capture.added_tools(plain.requests[0], first.requests[0])
    want = budget.wrapped_tools("claude", surface.load())
    deferred = capture.deferred_names(first.requests[0]) - capture.deferred_names(plain.requests[0])
    if deferred:   # 2.1.332 defers MCP tools: their names stand, a definition comes once the model loads it
        assert added == [] and sorted(deferred) == [t["name"] for t in want]
        loaded = [{k: v for k, v in t.items() if k != "defer_loading"}
                  for t in capture.added_tools(plain.requests[0], first.requests[-1])]
        assert loaded and all(t in want for t in loaded), loaded
    else:
        assert added == want
    assert not {"ListMcpResourcesTool", "ReadMcpResourceTool", "ReadMcpResourceDirTool"} & {t["name"] for t in added}

    # text: every counted part is in the standing part (system) of every request, verbatim
    expected = _expected_texts("claude", role)
    body_parts = {k: v for k, v in expected.items() if k not in ("mcp tools", "subagent contract")}
    assert budget.IDENTITY in body_parts         # --append-system-prompt's longer identity line
    assert {"register", "guards", "guard lines", "read-door note", "mcp instructions"} <= set(body_parts)
    for body in first.requests + second.requests:
        system = capture.claude_system_text(body)
        for name, text in body_parts.items():
            if name == "mcp instructions":   # a system message, or a <system-reminder> (counted as that, the larger)
                text = text.removeprefix("<system-reminder>\n").removesuffix("\n</system-reminder>")
            assert text in system, name
    # nothing else: the system text capsule added is those parts and nothing more
    base = set(capture.claude_system_text(plain.requests[0]).splitlines())
    extra = [ln for ln in capture.claude_system_text(first.requests[0]).splitlines() if ln and ln not in base]
    counted = "\n".join(body_parts.values())
    # (2.1.332's deferred-tools list names capsule's four tools: doctor counts them as "mcp tools")
    assert all(ln in counted or ln in deferred for ln in extra), [ln for ln in extra if ln not in counted]

    # byte-stable: every call of a session and a second session of the same role
    stand = {capture.standing_part("claude", b) for b in first.requests + second.requests}
    assert len(stand) == 1


def test_codex_requests_carry_exactly_what_doctor_counts(ws, tmp_path):
    home = tmp_path / "home"
    role = _role_file(tmp_path, "codex-dev", "codex", 'register = "compact"')
    plain = capture.codex(ws, home)
    first = capture.codex(ws, home, role=role)
    second = capture.codex(ws, home, role=role)
    assert len(first.requests) >= 2, first.stderr[-2000:]

    added = capture.added_tools(plain.requests[0], first.requests[0])
    want = budget.wrapped_tools("codex", surface.load()) + budget.added_tools("codex", surface.load())
    assert sorted(added, key=str) == sorted(want, key=str)

    expected = _expected_texts("codex", role)
    assert expected["register"] == pack.data()["register"]["compact"]["text"]
    text = pack.standing_text({"register": "compact"})
    for body in first.requests + second.requests:
        assert text in capture.codex_developer_text(body)
    stand = {capture.standing_part("codex", b) for b in first.requests + second.requests}
    assert len(stand) == 1


def test_register_off_sends_no_register_and_guard_lines_off_sends_none(ws, tmp_path):
    home = tmp_path / "home"
    role = _role_file(tmp_path, "quiet", "claude", 'register = "off"\nguard_lines = false')
    got = capture.claude(ws, home, role=role)
    system = capture.claude_system_text(got.requests[0])
    for key in ("terse", "compact"):
        assert pack.data()["register"][key]["text"] not in system
    assert pack.data()["guards"]["text"] not in system
    assert pack.data()["guard_lines"]["text"] not in system
    assert pack.data()["read_door"]["text"] in system          # the read door is still on: its one line
    assert pack.standing_text({"register": "off", "guard_lines": False}, read_door=False) == ""
    # ctx usage tells this session's output apart by register (prompt/record.py)
    usage = subprocess.run([sys.executable, "-m", "capsule", "ctx", "usage", "--claude-dir", str(home / "claude"),
                            "--json"], capture_output=True, text=True, timeout=120, env=capture.base_env(home))
    assert usage.returncode == 0, usage.stderr
    by = json.loads(usage.stdout)["by_register"]
    assert set(by) == {"off"} and by["off"]["sessions"] == 1 and by["off"]["output_tokens"] > 0
    report = subprocess.run([sys.executable, "-m", "capsule", "ctx", "report", "--claude-dir", str(home / "claude")],
                            capture_output=True, text=True, timeout=120, env=capture.base_env(home))
    assert report.returncode == 0, report.stderr
    assert f"output by register (thinking included): off {by['off']['output_tokens']:,} in" in report.stdout


class _SpawnsExplore(capture.ToolCalls):
    """Main: one Agent call (Explore) with a task; the subagent answers at once; then done."""

    TASK = "SUBAGENT-TASK: find every caller of parse_header() in src/ and list them ALL, with file:line."

    def __init__(self):
        super().__init__([])

    def answer(self, body):
        first = capture.json.dumps(body.get("messages", [])[:1])
        if "SUBAGENT-TASK" in first:
            return [{"type": "text", "text": "found: src/a.py:3\nanomalies: none"}]
        if not capture.tool_results_in(body):
            return [{"type": "tool_use", "id": "toolu_agent", "name": "Agent",
                     "input": {"description": "find callers", "prompt": self.TASK, "subagent_type": "Explore"}}]
        return [{"type": "text", "text": "done"}]


def test_claude_code_subagent_capsule_defines_gets_the_report_contract(ws, tmp_path):
    """The route layer's pinned Explore definition (--agents) carries the prompt layer's contract;
    the task the main agent hands over reaches the subagent exactly as written."""
    role = _role_file(tmp_path, "explorer", "claude", 'register = "terse"\n\n'
                      '[context.routing.lanes.explore]\nmodel = "claude-haiku-4-5"')
    fake = _SpawnsExplore()
    got = capture.claude(ws, tmp_path / "home", role=role, fake=fake, tools="Agent")
    sub = [b for b in fake.requests if "SUBAGENT-TASK" in capture.json.dumps(b.get("messages", [])[:1])]
    assert sub, got.stderr[-2000:]
    assert pack.report_contract() in capture.claude_system_text(sub[0])
    assert sub[0]["model"] == "claude-haiku-4-5"
    assert _SpawnsExplore.TASK in capture.json.dumps(sub[0]["messages"][0])
    main = [b for b in fake.requests if b not in sub]
    assert pack.report_contract() not in capture.claude_system_text(main[0])   # the main agent's own text is not the contract
