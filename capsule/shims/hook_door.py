"""The hook door: a Claude Code `PostToolUse` event (native Read, Grep, Glob, WebFetch, another MCP
server's result) made into one Observation for the engine, and the engine's answer put back in the
shape the tool's output has (`updatedToolOutput` must match the tool's output schema: a plain
string is dropped by the client, checked with 2.1.332).

Not responsible for running the hook (agents/hook_template/tool_hook.py, which asks the supervisor's
socket, supervisor/control_server.py, or runs `python -m capsule.shims.hook_door` when none answers) nor
for the pipeline. Invariant: one answer per tool call and content, written once to the state dir
(the same bytes on a repeated event, so prompt caches hold); any failure -> None (the client sends
its own output); the shell tool is the shims' (INV-8) and capsule's own MCP tools are the engine's
own output: neither is touched here.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import sys
from pathlib import Path

from capsule.agents import intent_log as intents
from capsule.agents import claude, limits, session
from capsule.ground import switches
from capsule.ground.types import Observation

log = logging.getLogger("capsule.hook")

MEMO_DIR = session.HOOK_MEMO_DIR  # in the state dir: one file per answered tool call (kept 24 h)
MIN_CHARS = 256                   # shorter results are not worth an engine call (as the proxy's)
# Claude Code numbers a Read's lines itself from `startLine`, one by one: in a shrunk view those
# numbers are positions, not the file's line numbers. Said once, first, so no offset is built on them.
READ_NOTE = "[capsule: a shrunk view; its line numbers count this view, not the file. Read with offset/limit for exact lines]"


def _text_of(tool: str, args: dict, out) -> tuple[str, str | None, str | None] | None:
    """(text, command, path) of a tool output, or None when the door leaves it alone."""
    if tool == "Read":
        f = out.get("file") if isinstance(out, dict) and out.get("type") == "text" else None
        if not isinstance(f, dict) or not isinstance(f.get("content"), str):
            return None
        path = str(f.get("filePath") or args.get("file_path") or "")
        offset, limit = args.get("offset"), args.get("limit")
        if isinstance(offset, int) or isinstance(limit, int):
            first = offset if isinstance(offset, int) and offset > 0 else 1
            last = first + (limit if isinstance(limit, int) and limit > 0 else 2000) - 1
            command = f"sed -n '{first},{last}p' {shlex.quote(path)}"
        else:
            command = f"cat {shlex.quote(path)}"
        return f["content"], command, path
    if tool == "Grep":
        if not isinstance(out, dict):
            return None
        command = claude.grep_command(args)
        if isinstance(out.get("content"), str) and out.get("content"):
            return out["content"], command, None
        names = out.get("filenames")
        if isinstance(names, list) and all(isinstance(n, str) for n in names):
            return "\n".join(names), command + " -l", None
        return None
    if tool == "Glob":
        names = out.get("filenames") if isinstance(out, dict) else None
        if isinstance(names, list) and all(isinstance(n, str) for n in names):
            return "\n".join(names), "find " + shlex.quote(str(args.get("path") or ".")) + " -name " + \
                shlex.quote(str(args.get("pattern") or "*")), None
        return None
    if tool == "WebFetch":
        if isinstance(out, dict) and isinstance(out.get("result"), str):
            return out["result"], "curl " + shlex.quote(str(args.get("url") or "")), None
        return None
    # another MCP server's tool: a string, or text blocks; no command (as the proxy sees them), the
    # engine classifies the text itself
    if isinstance(out, str):
        return out, None, None
    if isinstance(out, list) and out and all(isinstance(b, dict) and b.get("type") == "text"
                                             and isinstance(b.get("text"), str) for b in out):
        return "\n".join(b["text"] for b in out), None, None
    return None


def _put_back(tool: str, out, new: str):
    """The tool's output with its text replaced by `new`, in the same shape."""
    if tool == "Read":
        file = dict(out["file"])
        file.update(content=f"{READ_NOTE}\n{new}", numLines=new.count("\n") + 2)
        return {**out, "file": file}
    if tool == "Grep":
        if isinstance(out.get("content"), str) and out.get("content"):
            return {**out, "content": new, "numLines": new.count("\n") + 1}
        return {**out, "filenames": new.split("\n")}
    if tool == "Glob":
        names = new.split("\n")
        return {**out, "filenames": names, "numFiles": len(names)}
    if tool == "WebFetch":
        return {**out, "result": new}
    if isinstance(out, str):
        return new
    return [{"type": "text", "text": new}]


def _key(event: dict, text: str) -> str:
    from blake3 import blake3  # noqa: PLC0415

    h = blake3(f"{event.get('session_id')}\0{event.get('tool_use_id')}\0{event.get('tool_name')}\0".encode())
    h.update(text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:32]


def _memo_path(state_dir: Path, key: str) -> Path:
    return Path(state_dir) / MEMO_DIR / key[:2] / f"{key}.json"


def _remember(path: Path, value) -> object:
    """Store the first answer for a key; returns what is stored (a racing writer's, if it came first)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps({"answer": value}, ensure_ascii=False, sort_keys=True), encoding="utf-8")
    os.chmod(tmp, 0o600)
    try:
        os.link(tmp, path)          # atomic, and never replaces a stored answer
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
    return json.loads(path.read_text(encoding="utf-8"))["answer"]   # the stored bytes' value, keys in order


def answer(engine, event: dict):
    """The `updatedToolOutput` for one PostToolUse event, or None (the client's own output stands)."""
    try:
        return _answer(engine, event)
    except Exception as exc:  # noqa: BLE001 - the door fails open
        log.warning("hook door failed on a %s result (%r); the client's output stands",
                    event.get("tool_name") if isinstance(event, dict) else "?", exc)
        return None


def _answer(engine, event: dict):
    if not isinstance(event, dict) or event.get("hook_event_name") != "PostToolUse":
        return None
    tool = str(event.get("tool_name") or "")
    args = event.get("tool_input") if isinstance(event.get("tool_input"), dict) else {}
    out = event.get("tool_response")
    if not claude.hook_owns(tool):
        return None
    found = _text_of(tool, args, out)
    if found is None or len(found[0]) < MIN_CHARS or "<<ccr:" in found[0]:
        return None
    text, command, path = found
    key = _key(event, text)
    memo = _memo_path(engine.state_dir, key)
    if memo.is_file():
        return json.loads(memo.read_text(encoding="utf-8"))["answer"]
    sid = str(event.get("session_id") or "") or None
    limit = limits.detect({switches.AGENT_MARKER: "claude"})     # the hook runs for the Claude Code capsule launched
    intent = intents.lookup(session.intents_dir(engine.state_dir), sid, command)
    prompt, edits = intents.said(session.intents_dir(engine.state_dir), sid)
    em = engine.observe(Observation(text.encode("utf-8", "surrogatepass"), command=command, stream="stdout",
                                    intent=intent, scope=sid, prompt=prompt, edits=edits, limit=limit, budget=limit.budget() if limit else None,
                                    path=path, cwd=event.get("cwd") if isinstance(event.get("cwd"), str) else None))
    new = em.data.decode("utf-8", "surrogateescape")
    value = _put_back(tool, out, new) if em.applied and new != text and len(new) < len(text) else None
    return _remember(memo, value)


def hook_output(value) -> bytes:
    """What the hook prints: Claude Code's PostToolUse answer, or nothing (the output stands)."""
    if value is None:
        return b""
    return json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": value}},
                      ensure_ascii=False, sort_keys=True).encode("utf-8")


def main() -> int:
    """The embedded door (no supervisor answered): one event on stdin, the answer on stdout; exit 0 always."""
    try:
        event = json.loads(sys.stdin.buffer.read() or b"{}")
        from capsule.engine import Engine  # noqa: PLC0415

        engine = Engine()
        try:
            sys.stdout.buffer.write(hook_output(answer(engine, event)))
        finally:
            engine.close()
    except Exception as exc:  # noqa: BLE001 - fail open: no answer, the client's output stands
        log.warning("embedded hook door failed (%r)", exc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
