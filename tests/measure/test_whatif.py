"""`capsule ctx whatif` on sessions the real clients recorded against the caching fakes: actual equals
`ctx report`'s cost for the same data, the tool-result lever saves on a real `ls -la` and `git log
--stat`, a line capsule would have cut and the agent used later is listed as a bounce with its
recovery added, the role's lanes re-price the calls, and two runs print the same bytes."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.fakes.cache import CachingMessages, CachingResponses
from tests.measure import clients

# 250 JSON records (under Claude Code's 30,000-character cap): capsule shows a sample and the range
# of the ids it left out; the agent then asks for one of those
RECORDS = [{"id": f"ord-{i:05d}", "status": "ok", "amount": 100 + i, "customer": f"cust-{i % 17:03d}",
            "region": "eu-west"} for i in range(1, 251)]
LATER = "ord-00137"


def claude_script(image: str):
    steps = [{"command": "ls -la", "description": "list"}, {"command": "git log --stat -n 30", "description": "log"},
             {"command": "cat orders.json", "description": "the orders"},
             {"command": f"grep -n {LATER} orders.json", "description": "one order"}]

    def script(body, turn):
        tools = [t.get("name") for t in body.get("tools") or []]
        if "Bash" not in tools or "Read" not in tools:
            return [{"type": "text", "text": "side answer"}]
        if turn < len(steps):
            return [{"type": "tool_use", "id": f"toolu_w{turn}", "name": "Bash", "input": steps[turn]}]
        if turn == len(steps):      # a native Read of a large PNG: an image block in the result
            return [{"type": "tool_use", "id": "toolu_img", "name": "Read", "input": {"file_path": image}}]
        return [{"type": "text", "text": "done"}]

    return script


def codex_script(body, done):
    cmds = ["ls -la", "git log --stat -n 30"]
    if done < len(cmds):
        return [{"type": "function_call", "id": f"fc_{done}", "call_id": f"call_{done}", "name": "exec_command",
                 "arguments": json.dumps({"cmd": cmds[done]}), "status": "completed"}]
    return [{"type": "message", "role": "assistant", "id": "msg_d",
             "content": [{"type": "output_text", "text": "done", "annotations": []}]}]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    root = tmp_path_factory.mktemp("whatif")
    ws = clients.make_workspace(root / "ws")
    (ws / "orders.json").write_text(json.dumps(RECORDS, indent=1))
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (2400, 1600), "white")
    draw = ImageDraw.Draw(img)
    for x in range(0, 2400, 40):
        draw.line([(x, 0), (2400 - x, 1600)], fill=(x % 255, 80, 160), width=3)
    img.save(ws / "chart.png")
    cfg, home = root / "cc", root / "codex-home"
    home.mkdir()
    fake = CachingMessages(claude_script(str(ws / "chart.png")))
    try:
        clients.run_claude(fake, ws, cfg, "look around")   # allowed tools: Bash, Read, Agent
    finally:
        fake.close()
    rfake = CachingResponses(codex_script)
    (home / "config.toml").write_text(rfake.provider_config("gpt-5.5"))
    try:
        clients.run_codex(rfake, ws, home, "look around")
    finally:
        rfake.close()
    return {"cfg": cfg, "home": home, "claude_log": fake.log, "codex_log": rfake.log}


def run(capsule, *args):
    proc = capsule("ctx", *args, env={"HOME": os.environ.get("HOME", "/root")}, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    return proc.stdout


def test_whatif_on_real_claude_and_codex_sessions(recorded, capsule):
    dirs = ["--claude-dir", str(recorded["cfg"]), "--codex-dir", str(recorded["home"])]
    first = run(capsule, "whatif", "--role", "python-dev", "--json", *dirs)
    assert run(capsule, "whatif", "--role", "python-dev", "--json", *dirs) == first      # deterministic
    w = json.loads(first)
    report = json.loads(run(capsule, "report", "--json", *dirs))
    assert {s["agent"] for s in w["sessions"]} == {"claude", "codex"}
    # actual is the cost engine's figure for the same calls: what ctx report shows
    actual = sum(s["cost_usd"] or 0 for s in report["sessions"])
    assert w["total"]["actual_usd"] == pytest.approx(actual, abs=1e-5) and actual > 0
    lv = w["total"]["levers"]
    assert lv["tool_results"] < 0 and w["total"]["tokens_removed"] > 1000       # ls -la and git log shrink
    assert lv["standing_context"] > 0                                            # what capsule adds is counted
    # the agent asked for a record capsule would have left out: a bounce, its recovery added
    assert any(LATER in b["line"] for b in w["bounces"]), w["bounces"]
    assert lv["bounces"] > 0
    # the 2400x1600 PNG the agent read, resized to the model family's cap
    assert w["media"]["images"] == 1 and lv["media"] < 0
    # python-dev (a Claude role) re-prices the Claude session on its lanes and leaves Codex's alone
    codex = next(s for s in w["sessions"] if s["agent"] == "codex")
    assert codex["levers"]["lanes"] == 0
    total = sum(lv.values())
    assert w["total"]["projected_usd"] == pytest.approx(w["total"]["actual_usd"] + total, abs=1e-5)
    assert "model's behaviour is taken as unchanged" in w["assumption"]


def test_whatif_text_names_every_lever_and_the_assumption(recorded, capsule):
    out = run(capsule, "whatif", "--role", "python-dev", "--claude-dir", str(recorded["cfg"])).decode()
    assert "tool results" in out and "standing" in out and "bounces" in out and "lanes" in out
    assert "taken as unchanged" in out and "role python-dev" in out
    assert "claude" in out and "codex" not in out.split("\n\n")[1]


def test_the_html_report_shows_the_whatif_section_in_chromium(recorded, capsule, tmp_path):
    import re
    import shutil

    from tests.measure.test_report import CHROMIUM_FLAGS

    page = tmp_path / "report.html"
    run(capsule, "report", "--whatif", "--role", "python-dev", "--html", str(page), "--claude-dir", str(recorded["cfg"]))
    chromium = shutil.which("chromium")
    assert chromium, "chromium is not installed; scripts/test-all installs it (apt-get install chromium)"
    dom = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                          page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-1000:]
    html = dom.stdout
    assert 'data-ready="1"' in html and not re.search(r"<body[^>]*data-errors=", html)
    section = html[html.index('id="sec-whatif"'):]
    assert not re.match(r'id="sec-whatif"[^>]*hidden', section)
    assert "taken as unchanged" in section and "projected" in section and LATER in section


def test_a_word_the_agent_already_had_is_no_bounce():
    """A public session (issue 34's smoke run): every cut line of a spec 'used' later because a later
    Read path shared the words 'doctrine' or 'design' with it — words the user's prompt had given."""
    from capsule.cli.whatif_cmd import _bounces
    from capsule.measure.transcripts.exchanges import Exchange, Said

    text = "\n".join(["# The doctrine of design", "rule ord-00042 applies to design/forms", "plain words here"])
    e = Exchange("claude", "S", None, 10.0, "t1", "Read", {"file_path": "SPEC.md"}, text, False, "anthropic")
    said = [Said("claude", "S", None, 1.0, "review design/doctrine-r1.md against SPEC.md", "user"),
            Said("claude", "S", None, 20.0, json.dumps({"file_path": "design/doctrine-r1.md"})),
            Said("claude", "S", None, 30.0, "and what of ord-00042?")]
    got = _bounces(e, "# The doctrine of design\n[2 lines omitted]", said)
    assert [b.used for b in got] == ["ord-00042"]          # the one id only the cut line had
