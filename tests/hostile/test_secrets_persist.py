"""Issue 31: one redaction pass for every persisted byte. Real runs (`ctx run`, the intent hook, a
quota sample, `fleet sync` into SQLite) with the planted secrets of tests/store/test_secret_forms.py,
then every file under the state dir (archive.db, ledger.db and their WAL, journals, intents, caches)
and the fleet database are searched for them; the agent's view keeps them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from capsule.agents import session
from capsule.route import quota
from tests.hostile.killing import kill_with_its_groups
from tests.hostile.test_secret_redaction import _holding, _run
from tests.store.test_secret_forms import FORMS, GHP

SECRETS = sorted({s for _, secrets, _ in FORMS.values() for s in secrets if len(s) >= 10}, key=len)
LOG = "".join(f"2026-01-01 10:00:{i % 60:02d} INFO worker-{i % 7} handled request {i} in {i % 13} ms\n"
              for i in range(3000))
PW = "Sup3rS3cret!"


def _output() -> bytes:
    """A log whose middle carries every form: most of those lines are cut (the ledger's previews)."""
    middle = "".join(f"{text}\n" for text, _, _ in FORMS.values())
    return (LOG + middle + LOG).encode()


def test_no_file_under_the_state_dir_holds_a_planted_secret_after_real_runs(tmp_path):
    state = tmp_path / "state"
    data = tmp_path / "out.txt"
    data.write_bytes(_output())
    # 1. a command's output (archive, ledger manifest and previews) and its command line (ledger, journal)
    run = _run(state, "ctx", "run", "--", "sh", "-c", f"cat {data}; : curl -u admin:{PW} https://x")
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    assert len(run.stdout) < len(_output())                     # compressed: archived, a manifest written
    assert _run(state, "ctx", "gain").returncode == 0           # the detached ledger writer has finished
    # 2. a killed run's journal (its engine writes it once the run is gone): its command line redacted
    flag = tmp_path / "started"
    proc = subprocess.Popen([sys.executable, "-m", "capsule", "ctx", "run", "--", "sh", "-c",
                             f"echo started; touch {flag}; : curl -u admin:{PW} https://x token={GHP}; sleep 30"],
                            env={**os.environ, "JACKIN_CTX_STATE_DIR": str(state)}, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not flag.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    kill_with_its_groups(proc)
    cmds = []
    while not cmds and time.monotonic() < deadline + 30:
        cmds = list((state / "journal").glob("*.cmd")) if (state / "journal").is_dir() else []
        time.sleep(0.05)
    assert cmds, "no journal for the killed run"
    text = cmds[0].read_bytes()
    assert PW.encode() not in text and GHP.encode() not in text and b"[capsule redacted: " in text, text
    for p in (state / "journal").glob("*"):
        p.unlink()                  # (a killed run's raw bytes: the next run archives them, redacted)
    # 3. the intent hook: a prompt and a Bash call that carry a key
    d = session.prepare(state)
    session.claude_argv(["claude", "-p", "hi"], d, state, mcp=False, intent=True, python=sys.executable)
    settings = json.loads((d / "settings.json").read_text())
    (hook,) = {h["hooks"][0]["command"] for e in settings["hooks"].values() for h in e}
    for event in ({"hook_event_name": "UserPromptSubmit", "session_id": "s-1",
                   "prompt": f"use GITHUB_TOKEN={GHP} and curl -u admin:{PW} to fetch it"},
                  {"hook_event_name": "PreToolUse", "session_id": "s-1", "tool_use_id": "t1",
                   "tool_input": {"command": f"curl -u admin:{PW} -H 'Authorization: Bearer {GHP}' x",
                                  "description": f"fetch with {GHP}"}}):
        got = subprocess.run(["sh", "-c", hook], input=json.dumps(event), capture_output=True, text=True, timeout=60)
        assert got.returncode == 0 and got.stderr == "", got.stderr
    records = [json.loads(x) for x in (session.intents_dir(state) / "s-1.jsonl").read_text().splitlines()]
    assert len(records) == 2 and records[0]["prompt"].startswith("use GITHUB_TOKEN=[capsule redacted: ")
    # 4. a quota sample whose text came from outside
    store = quota.QuotaStore(state / quota.QUOTA_DB)
    store.add([quota.Sample(ts=1.0, account=f"team {GHP}", regime="api", api="anthropic", window="5h",
                            utilization=0.5, resets_at=2.0, session=f"s {GHP}")])
    store.close()
    # 5. a ledger row kept verbatim (JACKIN_CTX_NO_REDACT) is redacted on its way to the fleet
    raw = tmp_path / "raw"
    assert _run(raw, "ctx", "run", "--", "sh", "-c", f"cat {data}", env={"JACKIN_CTX_NO_REDACT": "1"}).returncode == 0
    assert _run(raw, "ctx", "gain", env={"JACKIN_CTX_NO_REDACT": "1"}).returncode == 0
    assert _holding(raw, [s.encode() for s in SECRETS])                 # (the switch works: it is there)
    fleet = tmp_path / "fleet.db"
    sync = _run(tmp_path / "host", "fleet", "sync", "--dsn", f"sqlite:///{fleet}", "--state", str(state),
                "--state", str(raw))
    assert sync.returncode == 0, sync.stderr.decode()[-2000:]
    leaks = _holding(state, [s.encode() for s in SECRETS] + [PW.encode()])
    assert leaks == [], leaks
    fleet_leaks = [f for f in _holding(tmp_path, [s.encode() for s in SECRETS]) if f.startswith("fleet.db")]
    assert fleet_leaks == [], fleet_leaks
