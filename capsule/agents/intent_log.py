"""The goal an agent stated for a shell call, read back for the engine as that observation's intent;
and the task's cues the same hook keeps (the user's last prompt, the session's Edit/Write calls).

Claude Code's PreToolUse hook (hook_template/intent_hook.py, set up by session.py) records each Bash
call's command and `description`, and UserPromptSubmit the user's prompt, per session. A shim's
observation carries the session id; the newest recorded call whose command contains the shim's
command, in order, gives its description; else the user's last prompt. Codex states no goal per
call (exec_command has none): its observations get the user's last prompt, read from the thread's
rollout file ($CODEX_HOME/sessions/Y/M/D/rollout-…-<thread id>.jsonl).
Not responsible for using the intent (the engine's filters rank by it).
Invariant: read-only and bounded (the file's last 64 KB); any failure means no intent.
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path

TAIL_BYTES = 64 << 10
MAX_AGE_S = 900.0
MAX_EDITS = 8


def _tokens(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _contains_in_order(haystack: str, needles: list[str]) -> bool:
    pos = 0
    for needle in needles:
        found = haystack.find(needle, pos)
        if found < 0:
            return False
        pos = found + len(needle)
    return True


def _records(path: Path) -> list[dict]:
    with open(path, "rb") as fh:
        size = fh.seek(0, 2)
        fh.seek(max(0, size - TAIL_BYTES))
        lines = fh.read().split(b"\n")
    if size > TAIL_BYTES:
        lines = lines[1:]   # the first line is cut
    out = []
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


def lookup(intents_dir: Path, session: str | None, command: str | None, now: float | None = None) -> str | None:
    if not session or not command:
        return None
    session = "".join(c for c in session if c.isalnum() or c in "-_")
    try:
        records = _records(Path(intents_dir) / f"{session}.jsonl")
    except OSError:
        return None
    now = time.time() if now is None else now
    needles = _tokens(command)
    prompt = None
    for rec in reversed(records):
        if now - float(rec.get("t") or 0) > MAX_AGE_S:
            break
        if rec.get("kind") == "tool" and rec.get("description") and \
                _contains_in_order(str(rec.get("command", "")), needles):
            return str(rec["description"])
        if rec.get("kind") == "prompt" and prompt is None and rec.get("prompt"):
            prompt = str(rec["prompt"])
    return prompt


def said(intents_dir: Path, session: str | None, now: float | None = None) -> tuple[str | None, tuple[str, ...]]:
    """The task's cues the hook recorded for a session: the user's last prompt, and its recent edits
    (newest first, at most MAX_EDITS, each "path\nnew text"); (None, ()) when there are none."""
    if not session:
        return None, ()
    session = "".join(c for c in session if c.isalnum() or c in "-_")
    try:
        records = _records(Path(intents_dir) / f"{session}.jsonl")
    except OSError:
        return None, ()
    now = time.time() if now is None else now
    prompt, edits = None, []
    for rec in reversed(records):
        if now - float(rec.get("t") or 0) > MAX_AGE_S:
            break
        if rec.get("kind") == "prompt" and prompt is None and rec.get("prompt"):
            prompt = str(rec["prompt"])
        elif rec.get("kind") == "edit" and len(edits) < MAX_EDITS and (rec.get("path") or rec.get("text")):
            edits.append(f"{rec.get('path') or ''}\n{rec.get('text') or ''}")
    return prompt, tuple(edits)


ROLLOUT_TAIL = 256 << 10
_rollouts: dict[tuple[str, str], Path] = {}


def _rollout(codex_home: Path, thread: str) -> Path | None:
    key = (str(codex_home), thread)
    if key not in _rollouts:
        found = sorted(Path(codex_home).glob(f"sessions/*/*/*/rollout-*-{thread}.jsonl"))
        if not found:
            return None
        _rollouts[key] = found[-1]
    return _rollouts[key]


def codex_prompt(codex_home: Path, thread: str | None) -> str | None:
    """The user's last prompt in a Codex thread (its own context blocks, `<…>`, are skipped)."""
    if not thread or not all(c.isalnum() or c in "-_" for c in thread):
        return None
    path = _rollout(codex_home, thread)
    if path is None:
        return None
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - ROLLOUT_TAIL))
            lines = fh.read().split(b"\n")
    except OSError:
        return None
    for line in reversed(lines):
        if b'"role":"user"' not in line:
            continue
        try:
            payload = json.loads(line).get("payload") or {}
        except ValueError:
            continue
        if payload.get("type") != "message" or payload.get("role") != "user":
            continue
        texts = [c.get("text", "") for c in payload.get("content") or [] if c.get("type") == "input_text"]
        texts = [t.strip() for t in texts if t.strip() and not t.lstrip().startswith("<")]
        if texts:
            return "\n".join(texts)[:2000]
    return None
