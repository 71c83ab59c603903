"""A newcomer's first day, scripted (issue 33): from a fresh clone, the README's first command; `capsule up
--local` running the real Claude Code against a fake Anthropic API; `ctx gain --by day`; `ctx report
--html` in headless Chromium; `capsule statusline` fed the JSON Claude Code sends. Asserts what the
user sees at each step."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

from tests.e2e import harness

REPO = Path(__file__).resolve().parents[2]
ONE_CALL = (harness.Call("git log", "git log --oneline -3", "Show the last three commits", (harness.HEAD_SUBJECT,)),)


def _readme_line(prefix: str) -> str:
    for line in (REPO / "README.md").read_text().splitlines():
        if line.startswith(prefix):
            return line.split("   #", 1)[0].strip()
    raise AssertionError(f"README has no line starting {prefix!r}")


def test_first_day(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = harness.base_env(home)          # a clean user; the venv (capsule + pytest) first on PATH
    clone = tmp_path / "capsule"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True, timeout=120)

    def sh(cmd: str, cwd=clone, extra=None):
        proc = subprocess.run(["bash", "-c", cmd], cwd=cwd, env={**env, **(extra or {})}, capture_output=True,
                              text=True, timeout=180, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, f"{cmd}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        return proc

    # 1. The README's first command, past its install step (the venv is installed already).
    first = _readme_line("python3 -m venv .venv && ")
    run = sh(first.split("pip install . && ", 1)[1])
    assert "[full output: capsule ctx expand '<<ccr:" in run.stdout and "TOTAL" in run.stdout
    assert re.search(r"\ngit\s+\d+\s+\d+\s+\d+\s+\d+\s+[\d.]+%", run.stdout), run.stdout[-800:]
    # … and the README's pytest example, as printed.
    pytest_line = _readme_line("pip install pytest && capsule ctx run -- python -m pytest")
    assert "1 passed" in sh(pytest_line).stdout

    # 2. `up --local` with the real Claude Code against a fake API: a block before, a line after, on stderr.
    ws = tmp_path / "ws"
    ws.mkdir()
    head = harness.build_workspace(ws)
    fake = harness.FakeClaudeModel(ONE_CALL)
    try:
        up = sh("capsule up --local --role python-dev -- claude -p 'Show me the history' --allowedTools Bash "
                "--output-format json", cwd=ws,
                extra={"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{fake.port}", "ANTHROPIC_API_KEY": "test",
                       "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"})
    finally:
        fake.close()
    assert harness.HEAD_SUBJECT in fake.tool_results()[0] and head
    session = json.loads(up.stdout)["session_id"]                       # the agent's stdout is the agent's
    said = [line for line in up.stderr.splitlines() if line.startswith("capsule: ")]
    assert said[0].startswith("capsule: role python-dev (") and "mode standard, local" in said[0]
    assert re.fullmatch(r"capsule: agent Claude Code \d+\.\d+\.\d+ \(claude -p .*\)", said[1]), said[1]
    assert said[2] == "capsule: doors: shims on, proxy on, mcp on, register on, routing on"
    assert re.match(r"capsule: agent exited 0: [\d,]+ tokens saved over \d+ emissions? \([\d.]+%\)", said[-1]), said[-1]

    # 3. The history, by day.
    gain = sh("capsule ctx gain --by day", cwd=ws).stdout
    today = datetime.now().strftime("%Y-%m-%d")
    row = re.search(rf"^{today}\s+(\d+)\s+[\d,]+\s+[\d,]+\s+([\d,]+)\s+[\d.]+%$", gain, re.M)
    assert row and int(row.group(2).replace(",", "")) > 0, gain

    # 4. The report as a page, in headless Chromium: the same gross figure as gain's TOTAL.
    total = json.loads(sh("capsule ctx gain --json", cwd=ws).stdout)["total"]["saved_tokens"]
    page = tmp_path / "report.html"
    sh(f"capsule ctx report --html {page}", cwd=ws)
    chromium = shutil.which("chromium")
    assert chromium, "chromium is not installed; scripts/test-all installs it (apt-get install chromium)"
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    assert 'data-ready="1"' in dom and not re.search(r"<body[^>]*data-errors=", dom)
    assert f'data-kpi="gross"><span>gross saved</span><b>{total:,} tok</b>' in dom
    assert re.search(r'data-kpi="net"><span>net saved</span><b>-?[\d,]+ tok</b>', dom)   # transcripts were read

    # 5. The statusline, fed what Claude Code sends it.
    line = sh(f"""echo '{json.dumps({"session_id": session, "cwd": str(ws), "model": {"id": "claude-sonnet-4-5",
             "display_name": "Sonnet"}, "workspace": {"current_dir": str(ws), "project_dir": str(ws)},
             "cost": {"total_cost_usd": 0.0123}, "rate_limits": {"five_hour": {"used_percentage": 12,
             "resets_at": 4102444800}}})}' | capsule statusline""", cwd=ws).stdout
    assert re.fullmatch(r"capsule (saved [\d.,k]+ tok|: no savings yet) · \$0\.01 · 5h 12% \(resets in \d+h\d\d\)\n", line), line
