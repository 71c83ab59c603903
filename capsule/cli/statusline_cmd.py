"""`capsule statusline`: Claude Code's statusLine command (its JSON on stdin, one line on stdout).

Not responsible for the figures (capsule.measure.statusline). Invariant: always exits 0 with one
line; bad or missing input still prints capsule's part (a statusline must never show an error).
"""

from __future__ import annotations

import json
import sys


def register(sub) -> None:
    p = sub.add_parser("statusline", help="one status line for Claude Code's statusLine (JSON on stdin)",
                       description="Read Claude Code's statusLine JSON on stdin and print one line: the tokens "
                       "capsule saved this session, the session's cost and the 5-hour window used and its reset. "
                       "`capsule up` sets it for the session when the role has statusline = true in [agent].")
    p.set_defaults(func=cmd_statusline)


def cmd_statusline(args) -> int:
    from capsule.measure.statusline import line  # noqa: PLC0415 - bench_startup "capsule --help"

    try:
        data = json.loads(sys.stdin.read() or "{}")
    except ValueError:
        data = {}
    print(line(data if isinstance(data, dict) else {}))
    return 0
