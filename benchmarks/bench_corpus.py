"""Run the observation pipeline over a tool-output corpus and print a per-family table.

    python benchmarks/bench_corpus.py [--corpus DIR] [--json] [--intent] [--misses]

Default corpus: ../shared/corpus relative to the repository (see its README).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from capsule.measure.corpus import run_corpus, summarise  # noqa: E402

DEFAULT_CORPUS = REPO.parent / "shared" / "corpus"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="corpus folder (default: %(default)s)")
    ap.add_argument("--json", action="store_true", help="print the table as JSON")
    ap.add_argument("--intent", action="store_true", help="pass each case's intent.txt to the engine")
    ap.add_argument("--misses", action="store_true", help="list cases with a lost must-keep line or worse than raw")
    args = ap.parse_args()
    if not args.corpus.is_dir():
        print(f"bench_corpus: no corpus folder at {args.corpus}; pass --corpus DIR", file=sys.stderr)
        return 2
    results = run_corpus(args.corpus, use_intent=args.intent)
    rows = summarise(results)
    if args.json:
        print(json.dumps({"rows": rows, "cases": [r.__dict__ for r in results]}, indent=1))
        return 0
    cols = ["family", "cases", "raw_tokens", "emitted_tokens", "reduction_pct", "must_keep", "worse", "nondeterm",
            "p50_ms", "p95_ms"]
    print(f"{cols[0]:<18}" + "".join(f"{c:>13}" for c in cols[1:]))
    for r in rows:
        mk = f"{r['must_keep_kept']}/{r['must_keep_total']}"
        vals = [r["cases"], r["raw_tokens"], r["emitted_tokens"], f"{r['reduction_pct']}%", mk, r["worse"], r["nondeterministic"], r["p50_ms"], r["p95_ms"]]
        print(f"{r['family']:<18}" + "".join(f"{v:>13}" for v in vals))
    if args.misses:
        for r in results:
            if r.missing or r.worse or not r.deterministic:
                print(f"\n{r.case} [{r.transform}] worse={r.worse}")
                for m in r.missing:
                    print(f"   missing: {m[:150]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
