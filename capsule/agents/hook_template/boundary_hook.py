# capsule boundary hook (written per session by capsule.agents.session; Claude Code runs it).
# SessionStart (startup/resume/clear/compact), UserPromptSubmit, SubagentStart, PreCompact and
# SessionEnd are task boundaries: each is appended as one JSON line to BOUNDARIES, which the
# ledger's route log reads into `boundary` rows (capsule/measure/route_log.py). One O_APPEND
# write, no lock: Claude Code does not wait long for these hooks. Never blocks or changes
# anything: no output, exit 0, on any error too.
import json
import os
import sys
import time

BOUNDARIES = @BOUNDARIES@
WHAT = {"SessionStart": "session {source}", "UserPromptSubmit": "user prompt", "SubagentStart": "subagent start",
        "PreCompact": "compaction ({trigger})", "SessionEnd": "session end ({reason})"}


def main():
    event = json.loads(sys.stdin.read() or "{}")
    name = event.get("hook_event_name")
    if name not in WHAT:
        return
    fields = {k: str(event.get(k) or "?")[:40] for k in ("source", "trigger", "reason")}
    agent = event.get("agent_type")
    record = {"ts": time.time(), "session": str(event.get("session_id") or "")[:80],
              "reason": WHAT[name].format(**fields),
              "task_class": ("explore" if agent == "Explore" else "plan" if agent == "Plan" else "subagent")
              if name == "SubagentStart" else "main",
              "detail": {k: v for k, v in {"event": name, "agent_type": agent, "agent_id": event.get("agent_id"),
                                           "model": event.get("model")}.items() if v}}
    fd = os.open(BOUNDARIES, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (json.dumps(record, sort_keys=True) + "\n").encode())
    finally:
        os.close(fd)


try:
    main()
except Exception:
    pass
