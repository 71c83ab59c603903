"""What both transcript readers share: timestamps, tool classification, tool-result fields.

Not responsible for either agent's line format. Invariant: the same tool call is classified the
same way for every agent (read | edit | command | expand | other), from data in tool_kinds.toml;
a line that fails to parse in any way is skipped and counted (guarded), never fatal.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from contextlib import contextmanager
from datetime import datetime
from functools import lru_cache
from pathlib import Path

from capsule.ground import tokens

COUNT_CHARS = 1 << 20      # a tool result's tokens are counted on this much, the rest estimated from its size


@contextmanager
def guarded(batch, state: dict):
    """One transcript line: any failure (bad JSON, nesting too deep, a dict where a name belongs)
    skips the line, undoes what it added to the batch, and counts it in state["bad_lines"]."""
    marks = (len(batch.calls), len(batch.tools))
    try:
        yield
    except (Exception, RecursionError):  # noqa: BLE001 - hostile input of any shape
        del batch.calls[marks[0]:]
        del batch.tools[marks[1]:]
        state["bad_lines"] = state.get("bad_lines", 0) + 1


def text(value) -> str | None:
    """A field that must be a string: anything else is absent."""
    return value if isinstance(value, str) else None


HANDLE_RE = re.compile(r"<<ccr:([0-9a-f]{24})>>")
EXPAND_CMD_RE = re.compile(r"\bctx\s+expand\b")


def iso_ts(value) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@lru_cache(maxsize=1)
def _kinds() -> dict:
    with open(Path(__file__).with_name("tool_kinds.toml"), "rb") as f:
        return tomllib.load(f)


def tool_kind(name: str, inp: dict) -> tuple[str, str | None]:
    """(kind, target) of one tool call: target is the file path or the command line."""
    table = _kinds()
    for kind in ("read", "edit", "command", "expand"):
        spec = table.get(kind, {})
        for pattern in spec.get("names", []):
            if name == pattern or (pattern.endswith("*") and name.startswith(pattern[:-1])) \
                    or (pattern.startswith("*") and name.endswith(pattern[1:])):
                target = next((inp[k] for k in spec.get("target", []) if isinstance(inp.get(k), str)), None)
                if target is None:
                    target = next((" ".join(map(str, inp[k])) for k in spec.get("target", [])
                                   if isinstance(inp.get(k), list)), None)
                if kind == "command" and target and EXPAND_CMD_RE.search(target):
                    return "expand", target
                return kind, target
    return "other", None


def result_fields(text: str, is_error: bool, file_content: str | None = None, state: dict | None = None) -> dict:
    """Token and byte size of what the model received, a hash of what was read, any capsule handle.
    A result over COUNT_CHARS is counted on its first COUNT_CHARS and estimated for the rest (a 50 MB
    result would cost a minute and GBs to count exactly); state["estimated_results"] says how many."""
    data = text.encode("utf-8", "surrogateescape")
    basis = file_content if isinstance(file_content, str) else text
    handle = HANDLE_RE.search(text)
    if len(text) > COUNT_CHARS:
        head = text[:COUNT_CHARS]
        counted = tokens.count(head) + tokens.estimate_bytes(len(data) - len(head.encode("utf-8", "surrogateescape")))
        if state is not None:
            state["estimated_results"] = state.get("estimated_results", 0) + 1
    else:
        counted = tokens.count(text)
    return {"result_tokens": counted, "result_bytes": len(data),
            "result_hash": hashlib.blake2b(basis.encode("utf-8", "surrogateescape"), digest_size=12).hexdigest(),
            "is_error": is_error, "handle": handle.group(1) if handle else None}
