# capsule intent hook (written per session by capsule.agents.session; Claude Code runs it).
# PreToolUse(Bash): records the call's command and its stated `description`; PreToolUse(Edit, Write,
# MultiEdit, NotebookEdit): the path and the new text (the task's cues); UserPromptSubmit: records the
# user's prompt. The engine reads them back as the intent and cues of the shim's observation
# (capsule/agents/intent_log.py). Never blocks or changes the call: no output, exit 0, on any error too.
import json
import os
import sys
import time

INTENTS_DIR = @INTENTS_DIR@
IMPORT_PATH = @IMPORT_PATH@     # where capsule and its libraries are (this runs with -IS: no site)
STATE_DIR = @STATE_DIR@         # capsule's caches (the redaction patterns) live there
MAX_CHARS = 2000
EDIT_TOOLS = ("Edit", "MultiEdit", "Write", "NotebookEdit")


def _redacted(record):
    """Every text of the record with its secrets redacted (capsule/store/redact.py), as anything capsule
    stores; without capsule's redaction at hand, the texts are not kept at all."""
    try:
        sys.path[:0] = [p for p in IMPORT_PATH if p not in sys.path]
        os.environ.setdefault("JACKIN_CTX_STATE_DIR", STATE_DIR)
        from capsule.store import redact

        return redact.redacted_value(record)
    except Exception:
        return {k: ("" if isinstance(v, str) and k != "kind" else v) for k, v in record.items()}


def main():
    event = json.loads(sys.stdin.read() or "{}")
    session = "".join(c for c in str(event.get("session_id") or "") if c.isalnum() or c in "-_")
    if not session:
        return
    name = event.get("hook_event_name")
    if name == "PreToolUse" and event.get("tool_name") in EDIT_TOOLS:
        ti = event.get("tool_input") or {}
        parts = [ti.get("new_string"), ti.get("content"), ti.get("new_source")]
        parts += [e.get("new_string") for e in ti.get("edits") or [] if isinstance(e, dict)]
        record = {"kind": "edit", "path": str(ti.get("file_path") or ti.get("notebook_path") or "")[:MAX_CHARS],
                  "text": "\n".join(p for p in parts if isinstance(p, str))[:MAX_CHARS]}
    elif name == "PreToolUse":
        tool_input = event.get("tool_input") or {}
        record = {"kind": "tool", "command": str(tool_input.get("command") or "")[:MAX_CHARS],
                  "description": str(tool_input.get("description") or "")[:MAX_CHARS],
                  "id": event.get("tool_use_id")}
    elif name == "UserPromptSubmit":
        record = {"kind": "prompt", "prompt": str(event.get("prompt") or "")[:MAX_CHARS]}
    else:
        return
    record = _redacted(record)
    record["t"] = time.time()
    os.makedirs(INTENTS_DIR, mode=0o700, exist_ok=True)
    fd = os.open(os.path.join(INTENTS_DIR, session + ".jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (json.dumps(record) + "\n").encode())
    finally:
        os.close(fd)


try:
    main()
except Exception:
    pass
