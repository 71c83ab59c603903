"""What the model sees through the real agent clients, plain vs capsule, in one run.

Runs the four-call session of issue 9 (failing pytest, `git log --stat -15`, `cat` of a 400-row JSON
export with one failed row, `grep -rn TODO src`) through the real Claude Code and the real Codex,
each driven by a scripted fake model on 127.0.0.1, once plain and once under
`capsule up --role python-dev --local`, and prints per call and per client: tool-result tokens
(cl100k) plain and capsule, their ratio, and how many of the needed facts the model saw.
Target (issue 9): capsule <= 0.60 of plain, every fact kept.

    python benchmarks/bench_agents.py [--client claude|codex] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e import harness  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--client", choices=sorted(harness.RUNNERS), action="append",
                    help="run only this client (repeatable; default: both)")
    ap.add_argument("--json", type=Path, help="also write the raw numbers here")
    args = ap.parse_args()
    pairs = []
    with tempfile.TemporaryDirectory(prefix="capsule-bench-agents-") as tmp:
        for client in args.client or sorted(harness.RUNNERS):
            pairs.append(harness.run_pair(client, Path(tmp)))
    print(harness.table(pairs))
    if args.json:
        args.json.write_text(json.dumps([{
            "client": p.client, "call": c.name, "plain_tokens": p.tokens()[i], "capsule_tokens": k.tokens()[i],
            "facts": len(p.facts[i]), "missing_plain": p.missing(i), "missing_capsule": k.missing(i)}
            for p, k in pairs for i, c in enumerate(harness.CALLS)], indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
