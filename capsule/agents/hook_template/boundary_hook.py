# capsule boundary hook (written per session by capsule.agents.session; Claude Code runs it).
# SessionStart (startup/resume/clear/compact), UserPromptSubmit, SubagentStart, PreCompact and
# SessionEnd are task boundaries: each is appended as one JSON line to BOUNDARIES, which the
# ledger's route log reads into `boundary` rows (capsule/store/route_rows.py). A model switch the
# user makes (PreModelSwitch / PostModelSwitch, Claude Code 2.1.332+) is a boundary when asked and a
# `change` row when done, with the cache write the client itself estimated for it (the INV-9 audit). One O_APPEND
# write, no lock: Claude Code does not wait long for these hooks. Never blocks or changes
# anything: no output, exit 0, on any error too.
import json
import os
import sys
import time

BOUNDARIES = @BOUNDARIES@
WHAT = {"SessionStart": "session {source}", "UserPromptSubmit": "user prompt", "SubagentStart": "subagent start",
        "PreCompact": "compaction ({trigger})", "SessionEnd": "session end ({reason})",
        "PreModelSwitch": "model switch requested ({source})", "PostModelSwitch": "model switched by the client ({source})"}
NOTIFICATION = "<task-notification>"
# What a switch (or a resume) event says about the cache it costs, as the client computed it.
SWITCH_FIELDS = ("from_model", "to_model", "requested_model", "context_tokens", "prompt_cache_warm", "cache_ttl",
                 "estimated_cache_write_usd", "pricing", "seconds_since_last_response", "prompt_cache_likely_expired")


def main():
    event = json.loads(sys.stdin.read() or "{}")
    name = event.get("hook_event_name")
    if name not in WHAT:
        return
    if name == "UserPromptSubmit" and str(event.get("prompt") or "").startswith(NOTIFICATION):
        return   # 2.1.332 submits a finished background subagent's notice as a prompt: not the user's
    fields = {k: str(event.get(k) or "?")[:40] for k in ("source", "trigger", "reason")}
    agent = event.get("agent_type")
    record = {"ts": time.time(), "session": str(event.get("session_id") or "")[:80],
              "reason": WHAT[name].format(**fields),
              "task_class": ("explore" if agent == "Explore" else "plan" if agent == "Plan" else "subagent")
              if name == "SubagentStart" else "main",
              "detail": {k: v for k, v in {"event": name, "agent_type": agent, "agent_id": event.get("agent_id"),
                                           "model": event.get("model")}.items() if v}}
    for k in SWITCH_FIELDS:
        v = event.get(k)
        if isinstance(v, (bool, int, float)) or (isinstance(v, str) and v):
            record["detail"][k] = v if not isinstance(v, str) else v[:80]
    if name in ("PreModelSwitch", "PostModelSwitch"):
        record["detail"]["source"] = fields["source"]
    if name == "PostModelSwitch":
        record["kind"] = "change"
    fd = os.open(BOUNDARIES, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (json.dumps(record, sort_keys=True) + "\n").encode())
    finally:
        os.close(fd)


try:
    main()
except Exception:
    pass
