"""Calibrate the Compressor Reflex: fit its line model and pick tau on corpus must-keep anchors.

Responsible for building the anchor set from a tool-output corpus (each case's output.txt,
must_keep.txt and intent.txt), splitting it by case into a training part and a held-back part,
fitting logistic weights (IRLS, L2) on the training part, choosing tau there, and measuring
recall and reduction on the held-back part. Not responsible for scoring at run time (reflex.py).
Invariant: tau is chosen on training cases only; the held-back figures are reported, never tuned.

    python benchmarks/reflex_calibration.py [CORPUS] [--write]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path


REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from capsule.observe.content import reflex  # noqa: E402
from corpora import shared_corpus  # noqa: E402

DATA_FILE = REPO / "capsule" / "observe" / "content" / "data" / "reflex.json"
HELD_BACK = 4            # one case in HELD_BACK (by hash of its id) is held back
TRAIN_RECALL = 0.995
L2 = 1.0
POS_WEIGHT = 8.0         # must-keep lines are rare; weigh them up while fitting


@dataclass
class Case:
    name: str
    lines: list[str]
    intent: str
    keep: set[int]        # indices of every occurrence of a must-keep line
    anchors: dict[str, list[int]]   # distinct must-keep line -> its occurrences
    short: bool           # passes untouched (<= 5 lines or <= 64 tokens)

    @property
    def held_back(self) -> bool:
        return is_held_back(self.name)


def is_held_back(name: str) -> bool:
    return hashlib.sha256(name.encode()).digest()[0] % HELD_BACK == 0


def load(corpus: Path) -> list[Case]:
    cases = []
    for folder in sorted(p for p in corpus.iterdir() if (p / "output.txt").exists()):
        text = (folder / "output.txt").read_bytes().decode("utf-8", "surrogateescape")
        mk_path = folder / "must_keep.txt"
        must = mk_path.read_bytes().decode("utf-8", "surrogateescape") if mk_path.exists() else ""
        wanted = {m.strip() for m in must.split("\n") if m.strip()}
        intent_path = folder / "intent.txt"
        intent = intent_path.read_text().strip() if intent_path.exists() else ""
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines = lines[:-1]
        keep = {i for i, ln in enumerate(lines) if ln.strip() in wanted}
        anchors: dict[str, list[int]] = {}
        for i in sorted(keep):
            anchors.setdefault(lines[i].strip(), []).append(i)
        short = len(lines) <= reflex.MIN_LINES or reflex._tokens(text) <= reflex.MIN_TOKENS
        cases.append(Case(folder.name, lines, intent, keep, anchors, short))
    return cases


def _samples(cases: list[Case]):
    xs, ys, ws = [], [], []
    for c in cases:
        if c.short or not c.lines:
            continue
        feats = reflex.features(c.lines, c.intent)
        scale = 1.0 / math.sqrt(len(c.lines))
        for i, f in enumerate(feats):
            y = 1.0 if i in c.keep else 0.0
            xs.append(f)
            ys.append(y)
            ws.append(scale * (POS_WEIGHT if y else 1.0))
    return xs, ys, ws


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for col in range(n):
        piv = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[piv] = m[piv], m[col]
        p = m[col][col] or 1e-12
        for r in range(n):
            if r != col and m[r][col]:
                f = m[r][col] / p
                for k in range(col, n + 1):
                    m[r][k] -= f * m[col][k]
    return [m[i][n] / (m[i][i] or 1e-12) for i in range(n)]


def fit(xs, ys, ws, iterations: int = 25) -> list[float]:
    """Weighted L2 logistic regression by Newton's method (IRLS); no numpy needed."""
    d = len(xs[0])
    w = [0.0] * d
    for _ in range(iterations):
        grad = [-L2 * wi for wi in w]
        grad[0] = 0.0
        hess = [[(L2 if i == j and i else 0.0) for j in range(d)] for i in range(d)]
        for x, y, sw in zip(xs, ys, ws):
            z = sum(a * b for a, b in zip(w, x))
            p = 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))
            g = sw * (y - p)
            h = sw * p * (1.0 - p)
            for i in range(d):
                xi = x[i]
                if xi:
                    grad[i] += g * xi
                    hrow = hess[i]
                    hx = h * xi
                    for j in range(i, d):
                        if x[j]:
                            hrow[j] += hx * x[j]
        for i in range(d):
            for j in range(i):
                hess[i][j] = hess[j][i]
        hess[0][0] += 1e-6
        step = _solve(hess, grad)
        w = [a + b for a, b in zip(w, step)]
        if max(abs(s) for s in step) < 1e-6:
            break
    return w


def evaluate(cases: list[Case], weights, tau: float) -> dict:
    """Recall of must-keep lines and token reduction at tau (short cases pass untouched)."""
    anchors = kept_anchors = 0
    raw_tokens = out_tokens = 0
    missed: list[str] = []
    for c in cases:
        text = "\n".join(c.lines)
        raw = reflex._tokens(text)
        raw_tokens += raw
        anchors += len(c.anchors)
        if c.short:
            kept_anchors += len(c.anchors)
            out_tokens += raw
            continue
        flags = reflex.decide(c.lines, c.intent, tau, weights)
        for line, where in c.anchors.items():
            if any(flags[i] for i in where):
                kept_anchors += 1
            else:
                missed.append(f"{c.name}: {line[:80]}")
        out_tokens += reflex._tokens("\n".join(f"{i + 1}: {ln}" for i, ln in enumerate(c.lines)
                                              if flags[i]))
    return {
        "cases": len(cases),
        "anchors": anchors,
        "recall": kept_anchors / anchors if anchors else 1.0,
        "raw_tokens": raw_tokens,
        "kept_tokens": out_tokens,
        "reduction": 1.0 - out_tokens / raw_tokens if raw_tokens else 0.0,
        "missed": missed,
    }


def choose_tau(cases: list[Case], weights) -> float:
    """The highest tau whose training recall is at least TRAIN_RECALL."""
    scores = []
    for c in cases:
        if c.short or not c.keep:
            continue
        probs = reflex.probabilities(c.lines, c.intent, weights)
        for where in c.anchors.values():
            if not any(reflex.forced(c.lines[i]) for i in where):
                scores.append(max(probs[i] for i in where))
    total = sum(len(c.anchors) for c in cases)
    allowed = int(total * (1 - TRAIN_RECALL))
    scores.sort()
    if allowed >= len(scores):
        return 0.5
    return max(1e-6, scores[allowed] - 1e-9)


def calibrate(corpus: Path) -> dict:
    cases = load(corpus)
    train = [c for c in cases if not c.held_back]
    held = [c for c in cases if c.held_back]
    weights = fit(*_samples(train))
    tau = choose_tau(train, weights)
    return {
        "features": list(reflex.FEATURES),
        "weights": [round(w, 6) for w in weights],
        "tau": round(tau, 6),
        "split": {"rule": f"sha256(case id)[0] % {HELD_BACK} == 0 is held back",
                  "train_cases": [c.name for c in train], "held_back_cases": [c.name for c in held]},
        "train": {k: v for k, v in evaluate(train, weights, tau).items() if k != "missed"},
        "held_back": evaluate(held, weights, tau),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("corpus", nargs="?", default=str(shared_corpus() or ""))
    ap.add_argument("--write", action="store_true", help=f"write {DATA_FILE}")
    args = ap.parse_args(argv)
    result = calibrate(Path(args.corpus))
    held = result["held_back"]
    print(f"tau={result['tau']}  train recall={result['train']['recall']:.4f} "
          f"reduction={result['train']['reduction']:.3f}  held-back recall={held['recall']:.4f} "
          f"({held['anchors']} anchors, {held['cases']} cases) reduction={held['reduction']:.3f}")
    for m in held["missed"]:
        print("  missed:", m)
    if args.write:
        DATA_FILE.parent.mkdir(parents=True, exist_ok=True)
        DATA_FILE.write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {DATA_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
