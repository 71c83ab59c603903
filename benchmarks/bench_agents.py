"""What the model sees through the real agent clients, plain vs capsule, in one run.

Runs the session of issues 9 and 25 (a failing pytest naming `refund_half`, `git log --stat -15`,
`cat` of 400 records with one failed as a JSON array written one record a line and as JSON Lines,
`grep -rn TODO src` with one decisive hit among 300 routine ones) through the real Claude Code and the real Codex,
each driven by a scripted fake model on 127.0.0.1, once plain and once under
`capsule up --role python-dev --local`, and prints per call and per client: tool-result tokens
(cl100k) plain and capsule, their ratio, and how many of the needed facts the model saw.
Target (issue 25): capsule <= 0.55 of plain for each client, every fact kept.

    python benchmarks/bench_agents.py [--client claude|codex] [--json FILE]
    python benchmarks/bench_agents.py --container    # also inside the capsule image (`capsule up`,
        # the fake on a docker network's gateway), next to plain and --local; the image has no
        # pytest, so this table leaves out the pytest call in all three columns
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
    ap.add_argument("--container", action="store_true", help="also run each session inside the capsule image")
    args = ap.parse_args()
    if args.container:
        return container_table(args.client or sorted(harness.RUNNERS))
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


def container_table(clients: list[str]) -> int:
    calls = tuple(c for c in harness.CALLS if c.name != "pytest")
    rows = [f"{'client':7} {'call':9} {'plain':>7} {'--local':>8} {'image':>7}  facts plain  --local  image"]
    with tempfile.TemporaryDirectory(prefix="capsule-bench-agents-") as tmp:
        Path(tmp).chmod(0o755)
        for client in clients:
            plain, local = harness.run_pair(client, Path(tmp) / "pair", calls)
            inside = harness.run_in_container(client, Path(tmp), calls)
            totals = [0, 0, 0]
            kept = [0, 0, 0]
            for i, call in enumerate(calls):
                toks = [s.tokens()[i] for s in (plain, local, inside)]
                got = [len(s.facts[i]) - len(s.missing(i)) for s in (plain, local, inside)]
                n = len(plain.facts[i])
                totals = [a + b for a, b in zip(totals, toks)]
                kept = [a + b for a, b in zip(kept, got)]
                rows.append(f"{client:7} {call.name:9} {toks[0]:>7} {toks[1]:>8} {toks[2]:>7}  "
                            f"{got[0]}/{n}{'':9} {got[1]}/{n}{'':5} {got[2]}/{n}")
            n = sum(len(f) for f in plain.facts)
            rows.append(f"{client:7} {'TOTAL':9} {totals[0]:>7} {totals[1]:>8} {totals[2]:>7}  "
                        f"{kept[0]}/{n}{'':9} {kept[1]}/{n}{'':5} {kept[2]}/{n}")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
