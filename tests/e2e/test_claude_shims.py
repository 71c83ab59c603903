"""Only the agent's view, in the real Claude Code (issue 9.1, 9.2): under `capsule up --local`,
driven by a scripted fake Messages API, the Bash tool's grep/find are capsule's PATH shims (the
snapshot's functions are unset by CLAUDE_ENV_FILE), a program capturing git inside a Bash call
gets git's bytes, and the same git command run directly by the model is compressed.
"""

from __future__ import annotations

import re

from tests.e2e import harness as h

LOG = "git log --stat -15"
CAPTURE = ("python3 -c \"import subprocess; "
           "print('captured', len(subprocess.run(['git', 'log', '--stat', '-15'], capture_output=True).stdout))\"")
CALLS = (
    h.Call("which", "type grep find", "Which grep and find run", ()),
    h.Call("capture", f"{CAPTURE}; echo piped $({LOG} | wc -c)", "Programs read git", ()),
    h.Call("direct", LOG, "Show history", ()),
)


def test_claude_bash_tool_reaches_the_shims_and_only_its_own_view_changes(tmp_path):
    ws = tmp_path / "shop"
    ws.mkdir()
    head = h.build_workspace(ws)
    raw = h._git(ws, *LOG.split()[1:]).encode()
    session = h.run_claude(ws, tmp_path / "home", "capsule", head, calls=CALLS)
    which, capture, direct = session.results
    shim_dir = str(tmp_path / "home" / ".local" / "state" / "capsule" / "shims")
    assert f"grep is {shim_dir}/grep" in which and f"find is {shim_dir}/find" in which, which
    counts = dict(re.findall(r"(captured|piped) (\d+)", capture))
    assert counts == {"captured": str(len(raw)), "piped": str(len(raw))}, capture
    assert "capsule ctx expand '<<ccr:" in direct and len(direct) < len(raw), direct[-500:]
