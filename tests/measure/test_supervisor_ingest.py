"""The supervisor ingests the agent's transcripts while it runs, and once more after it exits."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from capsule.measure.usage import UsageStore

# A stand-in agent that writes a real Claude Code transcript in two parts: the second part only
# after the supervisor has ingested the first (seen in usage.db), then exits.
AGENT = textwrap.dedent("""
    import sys, time, apsw
    src, dst, db, split = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    data = open(src, "rb").read()
    open(dst, "wb").write(data[:split])
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            if apsw.Connection(db).execute("SELECT count(*) FROM calls").fetchone()[0] > 0:
                break
        except Exception:
            pass
        time.sleep(0.1)
    else:
        sys.exit(3)
    open(dst, "ab").write(data[split:])
""")


def test_supervisor_ingests_while_the_agent_runs(claude_run, tmp_path):
    src = claude_run["transcript"]
    data = src.read_bytes()
    first_part = claude_run["first_transcript"]
    proj = tmp_path / "cc" / "projects" / src.parent.name
    proj.mkdir(parents=True)
    state = tmp_path / "state"
    state.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("JACKIN_CTX_")}
    env.update({"JACKIN_CTX_STATE_DIR": str(state), "CLAUDE_CONFIG_DIR": str(tmp_path / "cc"),
                "CODEX_HOME": str(tmp_path / "codex"), "JACKIN_CTX_USAGE_INTERVAL": "0.2",
                "HOME": str(tmp_path)})
    proc = subprocess.run([sys.executable, "-m", "capsule", "supervise", "--role", "python-dev", "--",
                           sys.executable, "-c", AGENT, str(src), str(proj / src.name), str(state / "usage.db"),
                           str(len(first_part))], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (proj / src.name).read_bytes() == data
    store = UsageStore(state / "usage.db")
    ids = {c["call_id"] for c in store.calls()}
    want = {e["id"] for e in claude_run["compacted"]} & {
        ln.split(b'"id":"', 1)[1].split(b'"', 1)[0].decode() for ln in data.splitlines()
        if b'"type":"assistant"' in ln and b'"id":"msg_' in ln}
    assert ids == want and len(ids) > len(claude_run["first"]) - 2
