"""The benchmark harness over a tool-output corpus: reduction, must-keep recall, never-worse.

Not responsible for printing tables (benchmarks/ does). Reads the corpus layout described
in the corpus README (cmd.txt, output.txt, exit_code.txt, must_keep.txt, meta.json).
Invariant: every case runs through the same Engine.observe the CLI uses.
"""

from __future__ import annotations

import json
import re
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from capsule.ground.types import Observation

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


@dataclass
class CaseResult:
    case: str
    family: str
    raw_tokens: int
    emitted_tokens: int
    must_keep: int
    kept: int
    worse: bool
    ms: float
    missing: list[str] = field(default_factory=list)
    transform: str = ""
    deterministic: bool = True
    bounce_tokens: int = 0       # what recovering each lost must-keep line costs (bounce_cost)


def load_case(folder: Path) -> dict:
    def read(name: str, default: bytes = b"") -> bytes:
        p = folder / name
        return p.read_bytes() if p.exists() else default

    meta = json.loads(read("meta.json", b"{}") or b"{}")
    return {
        "case": folder.name,
        "command": read("cmd.txt").decode("utf-8", "replace").strip() or None,
        "output": read("output.txt"),
        "exit_code": int(read("exit_code.txt", b"0").strip() or 0),
        "must_keep": [l for l in read("must_keep.txt").decode("utf-8", "surrogateescape").split("\n") if l.strip()],
        "intent": read("intent.txt").decode("utf-8", "replace").strip() or None,
        "family": meta.get("family", "unknown"),
    }


def norm(s: str) -> str:
    return ANSI.sub("", s).replace("\r", "").strip()


def run_case(engine, case: dict, use_intent: bool = False) -> CaseResult:
    start = time.perf_counter()
    outcome = engine.observe(Observation(case["output"], command=case["command"], exit_code=case["exit_code"],
                             intent=case["intent"] if use_intent else None))
    ms = (time.perf_counter() - start) * 1000
    again = engine.observe(Observation(case["output"], command=case["command"], exit_code=case["exit_code"],
                           intent=case["intent"] if use_intent else None))
    from capsule.ground import tokens

    raw_tokens = tokens.count_bytes(case["output"])
    emitted = outcome.data.decode("utf-8", "surrogateescape")
    emitted_tokens = tokens.count(emitted)
    # A grouped search view states a file's path once above its `N:text` hits: a must-keep
    # `path:N:text` line counts as kept when the view says exactly that (search_stream.ungroup).
    from capsule.observe.filters.search_stream import ungroup

    hay = norm(emitted) + "\n" + "\n".join(norm(line) for line in ungroup(emitted))
    missing = [l for l in case["must_keep"] if norm(l) not in hay]
    row = engine.ledger.get(outcome.emission_id) if outcome.emission_id else None
    return CaseResult(case["case"], case["family"], raw_tokens, emitted_tokens, len(case["must_keep"]),
                      len(case["must_keep"]) - len(missing), emitted_tokens > raw_tokens, ms, missing,
                      row["transform"] if row else "passthrough", again.data == outcome.data,
                      bounce_cost(case["output"], missing, row["handle"] if row and row["handle"] else "0" * 24))


def bounce_cost(raw: bytes, missing: list[str], handle: str) -> int:
    """Tokens the agent spends getting each lost line back: one `ctx expand --lines N-N` call per
    line (the command as written, in a tool call's framing) and the line read back in a tool
    result's framing (budgets.toml [bounce])."""
    from capsule.ground import tokens
    from capsule.observe.guard import budgets

    if not missing:
        return 0
    price = budgets()["bounce"]
    lines = raw.decode("utf-8", "surrogateescape").split("\n")
    where = {}
    for no, line in enumerate(lines, 1):
        where.setdefault(line, no)
    total = 0
    for line in missing:
        no = where.get(line, 1)
        call = f"capsule ctx expand '<<ccr:{handle}>>' --lines {no}-{no}"
        total += tokens.count(call) + price["call_framing_tokens"] + tokens.count(line) + price["result_framing_tokens"]
    return total


def run_corpus(corpus: Path, use_intent: bool = False) -> list[CaseResult]:
    from capsule.engine import Engine

    cases = sorted(p for p in corpus.iterdir() if (p / "output.txt").exists())
    with tempfile.TemporaryDirectory() as state:
        engine = Engine(Path(state), mode="standard", scope="bench")
        return [run_case(engine, load_case(c), use_intent) for c in cases]


def summarise(results: list[CaseResult]) -> list[dict]:
    groups: dict[str, list[CaseResult]] = {}
    for r in results:
        groups.setdefault(r.family, []).append(r)
    rows = [_row(f, rs) for f, rs in sorted(groups.items())]
    rows.append(_row("OVERALL", results))
    return rows


def _row(family: str, rs: list[CaseResult]) -> dict:
    raw = sum(r.raw_tokens for r in rs)
    out = sum(r.emitted_tokens for r in rs)
    times = sorted(r.ms for r in rs)
    return {
        "family": family, "cases": len(rs), "raw_tokens": raw, "emitted_tokens": out,
        "reduction_pct": round(100.0 * (raw - out) / raw, 1) if raw else 0.0,
        "must_keep_kept": sum(r.kept for r in rs), "must_keep_total": sum(r.must_keep for r in rs),
        "worse": sum(r.worse for r in rs),
        "nondeterministic": sum(not r.deterministic for r in rs),
        "p50_ms": round(statistics.median(times), 2) if times else 0.0,
        "p95_ms": round(times[min(len(times) - 1, int(0.95 * len(times)))], 2) if times else 0.0,
    }
