"""One simulated capsule for the fleet tests and benchmark: real `capsule` processes on its own state.

python writer.py STATE_DIR CLAUDE_DIR ITERATIONS TAG
Each iteration: `capsule ctx run -- seq 1 N` (a ledger row), then five model calls appended to a
Claude Code transcript (the last one mid-stream, finished in the next iteration: an updated row),
and two task boundaries appended to the state's boundaries.jsonl (as the client hooks do), then
`capsule ctx report --claude-dir` ingests both (usage rows, route_events). Exit status: the first failure's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

CALLS_PER_ITERATION = 5


def _ts(n: int) -> str:
    return datetime.fromtimestamp(1_780_000_000 + n, timezone.utc).isoformat().replace("+00:00", "Z")


def _assistant(session: str, mid: str, n: int, done: bool) -> dict:
    return {"type": "assistant", "sessionId": session, "timestamp": _ts(n), "cwd": "/workspace",
            "message": {"id": mid, "model": "claude-sonnet-4-5", "role": "assistant",
                        "content": [{"type": "tool_use", "id": f"toolu_{mid[4:]}", "name": "Bash",
                                     "input": {"command": f"seq 1 {n}"}}],
                        "stop_reason": "tool_use" if done else None,
                        "usage": {"input_tokens": 5 + n, "cache_read_input_tokens": 2000 + 100 * n,
                                  "cache_creation_input_tokens": 50 + n,
                                  "output_tokens": (30 + n) if done else 1}}}


def _result(session: str, mid: str, n: int) -> dict:
    return {"type": "user", "sessionId": session, "timestamp": _ts(n),
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{mid[4:]}",
                                                     "content": "\n".join(map(str, range(1, n + 1)))}]}}


def main() -> int:
    state, claude, iterations, tag = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    env = {**os.environ, "JACKIN_CTX_STATE_DIR": state}
    transcript = claude / "projects" / "-workspace" / f"{tag}.jsonl"
    transcript.parent.mkdir(parents=True, exist_ok=True)
    capsule = [sys.executable, "-m", "capsule"]
    pending = None
    for it in range(iterations):
        r = subprocess.run([*capsule, "ctx", "run", "--", "seq", "1", str(200 + 37 * it)], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if r.returncode != 0:
            sys.stderr.write(r.stderr.decode())
            return r.returncode
        lines = []
        if pending:
            lines.append(_assistant(tag, *pending, True))
            lines.append(_result(tag, *pending))
        for k in range(CALLS_PER_ITERATION):
            n = it * CALLS_PER_ITERATION + k + 1
            mid = f"msg_{tag}_{n:04d}"
            lines.append(_assistant(tag, mid, n, False))
            if k < CALLS_PER_ITERATION - 1:
                lines.append(_assistant(tag, mid, n, True))
                lines.append(_result(tag, mid, n))
            else:
                pending = (mid, n)
        with transcript.open("a") as f:
            f.write("".join(json.dumps(x) + "\n" for x in lines))
        with open(Path(state) / "boundaries.jsonl", "a") as f:
            for k in range(2):
                f.write(json.dumps({"ts": 1_780_000_000 + 10 * it + k, "session": tag, "task_class": "main",
                                    "reason": "user prompt", "detail": {"iteration": it}}) + "\n")
        r = subprocess.run([*capsule, "ctx", "report", "--claude-dir", str(claude), "--json"], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if r.returncode != 0:
            sys.stderr.write(r.stderr.decode())
            return r.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
