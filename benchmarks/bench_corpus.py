"""Run the observation pipeline over every tool-output corpus and print per-source and per-family tables.

    python benchmarks/bench_corpus.py [--corpus [NAME=]DIR ...] [--no-defaults] [--no-shared] [--json] [--intent] [--misses]
                                      [--by-source-family]

Default corpora: the ones shipped in the repo (benchmarks/corpus/dev, holdout and fresh, made by
benchmarks/corpus/make_corpus.py from disjoint real registry projects: dev is tuned on, holdout only
checked, fresh measured once by the lead and never tuned) and ../shared/corpus when it exists; each
is its own source row, and "not shared (unseen)" sums every source but ../shared/corpus.
--corpus DIR (repeatable) adds others; --no-defaults measures only those.
Columns: tokens before/after (cl100k), reduction, net tokens and net reduction (after, plus for
each lost must-keep line the recovery it forces: a `ctx expand --lines N-N` call with its framing
and the line read back, budgets.toml [bounce]), ceiling (the reduction if only the must-keep
lines were emitted: the most any compressor can reach at 100% recall), must-keep lines kept,
recall, cases whose output grew (worse than raw), for bounded reads (family `read`) the share
of their lines kept, cases whose second run differs (nondeterm), engine time per case.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus_cases import run_corpus  # noqa: E402
from corpora import AGENT_READ_FAMILIES, READ_FAMILIES, default_corpora  # noqa: E402

COLS = ["cases", "raw_tok", "out_tok", "reduction", "net_tok", "net_red", "ceiling", "must_keep", "recall", "worse",
        "read_lines", "nondeterm", "p50_ms", "p95_ms"]


def row(name: str, rs: list) -> dict:
    """One table row; `ceiling` is the reduction left if only the must-keep lines were emitted."""
    raw = sum(r.raw_tokens for r in rs)
    floor = sum(min(r.floor_tokens, r.raw_tokens) for r in rs)
    out = sum(r.emitted_tokens for r in rs)
    net = out + sum(r.bounce_tokens for r in rs)
    mk, kept = sum(r.must_keep for r in rs), sum(r.kept for r in rs)
    times = sorted(r.ms for r in rs)
    reads = [r for r in rs if r.family in READ_FAMILIES]
    rmk, rkept = sum(r.must_keep for r in reads), sum(r.kept for r in reads)
    return {"name": name, "cases": len(rs), "raw_tokens": raw, "emitted_tokens": out,
            "reduction_pct": round(100.0 * (raw - out) / raw, 1) if raw else 0.0,
            "net_tokens": net, "net_reduction_pct": round(100.0 * (raw - net) / raw, 1) if raw else 0.0,
            "ceiling_pct": round(100.0 * (raw - floor) / raw, 1) if raw else 0.0,
            "must_keep_kept": kept, "must_keep_total": mk,
            "recall_pct": round(100.0 * kept / mk, 1) if mk else 100.0,
            "worse": sum(r.worse for r in rs),
            "read_lines_kept_pct": round(100.0 * rkept / rmk, 1) if rmk else None,
            "nondeterministic": sum(not r.deterministic for r in rs),
            "p50_ms": round(statistics.median(times), 2) if times else 0.0,
            "p95_ms": round(times[min(len(times) - 1, int(0.95 * len(times)))], 2) if times else 0.0}


def print_table(title: str, rows: list[dict]) -> None:
    w = max([len(title)] + [len(r["name"]) for r in rows]) + 2
    print(f"{title:<{w}}" + "".join(f"{c:>13}" for c in COLS))
    for r in rows:
        rl = "-" if r["read_lines_kept_pct"] is None else f"{r['read_lines_kept_pct']}%"
        vals = [r["cases"], r["raw_tokens"], r["emitted_tokens"], f"{r['reduction_pct']}%", r["net_tokens"],
                f"{r['net_reduction_pct']}%", f"{r['ceiling_pct']}%",
                f"{r['must_keep_kept']}/{r['must_keep_total']}", f"{r['recall_pct']}%", r["worse"], rl,
                r["nondeterministic"], r["p50_ms"], r["p95_ms"]]
        print(f"{r['name']:<{w}}" + "".join(f"{v:>13}" for v in vals))
    print()


def measure(corpora: list[tuple[str, Path]], use_intent: bool) -> list[tuple[str, object]]:
    from capsule.ground import tokens

    tagged = []
    for name, folder in corpora:
        for r in run_corpus(folder, use_intent=use_intent):
            mk = folder / r.case / "must_keep.txt"
            r.floor_tokens = tokens.count_bytes(mk.read_bytes()) if mk.exists() else 0
            tagged.append((name, r))
    return tagged


def tables(tagged: list[tuple[str, object]], by_source_family: bool = False) -> dict:
    sources = list(dict.fromkeys(s for s, _ in tagged))
    by_source = [row(s, [r for t, r in tagged if t == s]) for s in sources]
    reads = [r for _, r in tagged if r.family in AGENT_READ_FAMILIES]
    if reads:
        by_source.append(row("agent reads (all)", reads))
    unseen = [r for s, r in tagged if s != "shared"]
    if unseen and len(unseen) != len(tagged):
        by_source.append(row("not shared (unseen)", unseen))
    by_source.append(row("ALL", [r for _, r in tagged]))
    families = sorted({r.family for _, r in tagged})
    by_family = [row(f, [r for _, r in tagged if r.family == f]) for f in families]
    out = {"by_source": by_source, "by_family": by_family}
    if by_source_family:
        out["by_source_family"] = [row(f"{s}/{f}", rs) for s in sources for f in families
                                   if (rs := [r for t, r in tagged if t == s and r.family == f])]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", action="append", default=[], metavar="[NAME=]DIR",
                    help="another corpus folder, optionally named (repeatable)")
    ap.add_argument("--no-defaults", action="store_true", help="measure only the --corpus folders")
    ap.add_argument("--no-shared", action="store_true", help="leave out ../shared/corpus even if it exists")
    ap.add_argument("--json", action="store_true", help="print the tables and cases as JSON")
    ap.add_argument("--intent", action="store_true", help="pass each case's intent.txt to the engine")
    ap.add_argument("--misses", action="store_true", help="list cases with a lost must-keep line or worse than raw")
    ap.add_argument("--by-source-family", action="store_true", help="also print one row per source and family")
    args = ap.parse_args(argv)
    corpora = [] if args.no_defaults else default_corpora(with_shared=not args.no_shared)
    for spec in args.corpus:
        name, _, folder = spec.rpartition("=") if "=" in spec and not Path(spec).is_dir() else ("", "", spec)
        extra = Path(folder)
        if not extra.is_dir():
            print(f"bench_corpus: no corpus folder at {extra}", file=sys.stderr)
            return 2
        if extra.resolve() in {p.resolve() for _, p in corpora}:
            continue                                    # already measured (e.g. ../shared/corpus by default)
        name = name or (extra.name if extra.name not in {n for n, _ in corpora} else str(extra))
        corpora.append((name, extra))
    if not corpora:
        print("bench_corpus: no corpus: the shipped ones are missing and no --corpus DIR was given",
              file=sys.stderr)
        return 2
    tagged = measure(corpora, args.intent)
    t = tables(tagged, args.by_source_family)
    if args.json:
        print(json.dumps({**t, "corpora": {n: str(p) for n, p in corpora},
                          "cases": [{"source": s, **r.__dict__} for s, r in tagged]}, indent=1))
        return 0
    print("corpora: " + ", ".join(f"{n}={p}" for n, p in corpora) + (" (intent on)" if args.intent else ""))
    print_table("source", t["by_source"])
    print_table("family (all sources)", t["by_family"])
    if args.by_source_family:
        print_table("source/family", t["by_source_family"])
    if args.misses:
        for s, r in tagged:
            if r.missing or r.worse or not r.deterministic:
                print(f"{s}/{r.case} [{r.family}, {r.transform}] {r.raw_tokens}->{r.emitted_tokens} tok"
                      f" worse={r.worse} missing {len(r.missing)}/{r.must_keep}")
                for miss in r.missing[:5]:
                    print(f"   missing: {miss[:150]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
