"""Which register each agent session ran with, so `ctx usage` can compare output by register.

The supervisor appends one line per agent run (start, end, agent, workspace, role, register, guard
lines, the standing text's hash) to an owner-only JSONL file in the state dir; a usage session is
matched to the run whose workspace and agent it shares and whose time span holds its first call.
Not responsible for usage itself (measure/) or for the text (pack.py). Invariant: a session no run
covers is reported as "unrecorded", never guessed into a register.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from capsule.ground import paths
from capsule.prompt import pack

RUNS_FILE = "prompt_runs.jsonl"
SLACK_S = 5.0        # a transcript's first timestamp can trail the run's start by a moment


def runs_path(state_dir: Path | None = None) -> Path:
    return Path(state_dir or paths.state_dir()) / RUNS_FILE


def _append(path: Path, entry: dict) -> None:
    fd = paths.open_private(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry, sort_keys=True) + "\n")


def start(state_dir: Path, *, agent: str, cwd: str, role: str, output: dict, text: str) -> str:
    """Record a run's start; returns its id (for `end`)."""
    register, guard_lines, codebook = pack.settings(output)
    run = f"{os.getpid()}-{time.time_ns()}"
    _append(runs_path(state_dir), {"run": run, "event": "start", "ts": time.time(), "agent": agent, "cwd": cwd,
                                   "role": role, "register": register, "guard_lines": guard_lines,
                                   "codebook": codebook, "text_sha256": hashlib.sha256(text.encode()).hexdigest()})
    return run


def end(state_dir: Path, run: str) -> None:
    _append(runs_path(state_dir), {"run": run, "event": "end", "ts": time.time()})


def runs(state_dir: Path | None = None) -> list[dict]:
    """Recorded runs with start/end (end None while running); a corrupt line is skipped."""
    by_id: dict[str, dict] = {}
    try:
        lines = runs_path(state_dir).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if not isinstance(e, dict) or not isinstance(e.get("run"), str):
            continue
        if e.get("event") == "start":
            by_id[e["run"]] = {**e, "end": None}
        elif e.get("event") == "end" and e["run"] in by_id:
            by_id[e["run"]]["end"] = e.get("ts")
    return sorted(by_id.values(), key=lambda r: r.get("ts") or 0)


def register_of(session: dict, recorded: list[dict]) -> str:
    """The register a usage session ran with, or "unrecorded"."""
    first, cwd = session.get("first_ts"), session.get("cwd")
    if first is None:
        return "unrecorded"
    fits = [r for r in recorded if r.get("agent") == session.get("agent") and r.get("cwd") == cwd
            and r["ts"] - SLACK_S <= first <= (r["end"] or float("inf")) + SLACK_S]
    # the latest run started before the first call, else (the slack) the earliest started after it
    before = [r for r in fits if r["ts"] <= first]
    best = max(before, key=lambda r: r["ts"]) if before else min(fits, key=lambda r: r["ts"], default=None)
    return best["register"] if best else "unrecorded"


def by_register(sessions: list[dict], recorded: list[dict]) -> dict[str, dict]:
    """register -> {sessions, calls, output_tokens, output_per_call}. Output includes thinking:
    Claude Code's transcripts do not split it out, and Codex's output count includes reasoning."""
    out: dict[str, dict] = {}
    for s in sessions:
        reg = register_of(s, recorded)
        row = out.setdefault(reg, {"sessions": 0, "calls": 0, "output_tokens": 0})
        row["sessions"] += 1
        row["calls"] += s.get("calls", 0)
        row["output_tokens"] += s.get("output_tokens", 0)
    for row in out.values():
        row["output_per_call"] = round(row["output_tokens"] / row["calls"], 1) if row["calls"] else None
    return dict(sorted(out.items()))
