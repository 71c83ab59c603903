"""Compressor Reflex (seed 001): line-level keep/drop conditioned on the step's intent.

Responsible for scoring p(keep) per line with a small logistic model over hand-made line
features (weights and the threshold tau live in data/reflex.json, written by
benchmarks/reflex_calibration.py from the corpus must-keep anchors). Not responsible
for the pipeline's marker and footer, nor for archiving what it drops.
Invariant: fail-open — <= 5 lines or <= 64 tokens pass untouched, any internal error passes
the raw text, and an error/warning line is always kept; kept lines keep their order and
carry their original line numbers.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from functools import lru_cache
from importlib import resources

from capsule.observe.keep import extra
from capsule.observe.transform_types import MAX_INTENT_TOKENS, Context, Removal, TransformResult

TRANSFORM_ID = "reflex"
MIN_LINES = 5
MIN_TOKENS = 64

ERROR = re.compile(
    r"(?i)(?:\berror\b|\berrors\b|\bERR!|\bfail(?:ed|ure|ures|s)?\b|\bfatal\b|\bpanic(?:ked)?\b|"
    r"exception\b|traceback|\babort(?:ed)?\b|segmentation fault|core dumped|\bdenied\b|"
    r"\brefused\b|\bcannot\b|\bcan't\b|\bunable to\b|\bnot found\b|\bundefined\b|\binvalid\b|"
    r"\bconflict\b|\brejected\b|✗|✕|×|\bE\d{3,4}\b|error\[|\bERESOLVE\b|\bETARGET\b)")
WARNING = re.compile(r"(?i)\bwarn(?:ing|ings)?\b|\bdeprecat\w*")
LOCATION = re.compile(
    r"(?:[\w./\\-]+\.[A-Za-z]{1,5}:\d+(?::\d+)?|File \"[^\"]+\", line \d+|-->\s*\S+:\d+|"
    r"\(\S+:\d+:\d+\)|\bline \d+\b)")
SUMMARY = re.compile(
    r"(?i)(?:\b\d+ (?:passed|failed|errors?|warnings?|skipped|problems?|fixable|"
    r"files? (?:would be )?(?:re)?formatted|vulnerabilit\w+)\b|\bfound \d+|"
    r"test result|successfully|^\s*finished\b|all checks passed|^\s*ok\b|^\s*FAILED|^\s*PASS\b|"
    r"^\s*Tests?:|^\s*Test (?:Suites|Files):|\bRan \d+ tests?|^\s*OK\b|\bexit(?:ed)? (?:code|status))")
ASSERT = re.compile(
    r"(?i)(?:\bexpected\b|\breceived\b|\bactual\b|\bassert\w*|\bleft\b|\bright\b|^\s*E\s|"
    r"^\s*[-+](?![-+])\s*\S|\bwant\b|\bgot\b|\bmismatch\b|\bdiffer)")
PROGRESS = re.compile(r"\r|(?:\d{1,3}(?:\.\d+)?%)|━|█|#{5,}|={5,}>|\bETA\b|\d+/\d+ \[|it/s|B/s")
FRAME = re.compile(
    r"(?:^\s+at\s|site-packages|node_modules|/usr/lib/|/rustc/|\bruntime/|<frozen |"
    r"^\s+File \"/usr|^\s*\d+: 0x[0-9a-f]+|^\s+from\s)")
POINTER = re.compile(r"^\s*>\s*\d+\s*\||^\s*\^[\^~-]*\s*$|^\s*\|\s*\^|!==|===|\s!=\s|"
                     r"\b[A-Z]{1,5}\d{3,4}\b|\[\*\]|^\s*[\w.-]+: \S")
VCS = re.compile(r"^commit [0-9a-f]{7,40}\b|^\s*(?:modified|deleted|new file|renamed|both modified|"
                 r"added by us|added by them|both added|typechange):\s|^[0-9a-f]{7,12} |^\* |"
                 r"^(?:<{7}|>{7}|={7})")
HINT = re.compile(r"(?i)^\s*(?:hint|note|help|info)\b[:\s]")
TIMING = re.compile(r"\b\d+(?:\.\d+)?\s*(?:ms|s|sec|seconds|µs|us|m)\b")
_MASK = re.compile(r"0x[0-9a-fA-F]+|[0-9a-f]{7,}|\d+")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}|\d{2,}")
_STOP = frozenset(
    "the and for with from this that what which why how are was were been being into onto "
    "out off over under about after before all any each every some such than then them they "
    "there these those their its it's has have had not but can could should would will shall "
    "may might must our your you see check find show get make run runs running ran whether "
    "test tests file files line lines output command commands".split())

FEATURES = (
    "bias", "error", "warning", "location", "summary", "assert", "intent_hits", "intent_rare",
    "first", "last", "tail3", "blank", "repeat_log", "unique", "progress", "frame", "hint",
    "timing", "indent", "long", "short", "error_near", "pointer", "vcs", "summary_tail",
    "error_location", "kv_intent", "unprintable", "template_share", "json_line",
)
_JSONISH = re.compile(r'^\s*(?:[\[\]{},]+|"[^"]+"\s*:.*)$')


def intent_terms(intent: str | None) -> list[str]:
    if not intent:
        return []
    words = _WORD.findall(intent)[: MAX_INTENT_TOKENS]
    return sorted({w.lower() for w in words if w.lower() not in _STOP})


def features(lines: list[str], intent: str | None) -> list[list[float]]:
    """One feature vector per line (order of FEATURES)."""
    n = len(lines)
    masked = [_MASK.sub("#", ln.strip()) for ln in lines]
    counts = Counter(masked)
    lowered = [ln.lower() for ln in lines]
    terms = [t[:6] for t in intent_terms(intent)]   # a crude stem: "depends" ~ "depend"
    df = {t: sum(1 for lw in lowered if t in lw) for t in terms}
    nonblank = [i for i, ln in enumerate(lines) if ln.strip()]
    tail = set(nonblank[-3:])
    last = nonblank[-1] if nonblank else -1
    errs = [bool(ERROR.search(ln)) for ln in lines]
    seen: Counter = Counter()
    out = []
    for i, ln in enumerate(lines):
        stripped = ln.strip()
        seen[masked[i]] += 1
        lw = lowered[i]
        hits = [t for t in terms if t in lw]
        rare = any(df[t] <= max(2, n // 20) for t in hits)
        near = any(errs[j] for j in range(max(0, i - 2), min(n, i + 3)) if j != i)
        out.append([
            1.0,
            float(errs[i]),
            float(bool(WARNING.search(ln))),
            float(bool(LOCATION.search(ln))),
            float(bool(SUMMARY.search(ln))),
            float(bool(ASSERT.search(ln))),
            min(len(hits), 3) / 3.0,
            float(rare),
            float(i == (nonblank[0] if nonblank else -1)),
            float(i == last),
            float(i in tail),
            float(not stripped),
            math.log(seen[masked[i]]) if stripped else 0.0,
            float(counts[masked[i]] == 1 and bool(stripped)),
            float(bool(PROGRESS.search(ln))),
            float(bool(FRAME.search(ln))),
            float(bool(HINT.search(ln))),
            float(bool(TIMING.search(ln))),
            min(len(ln) - len(ln.lstrip()), 16) / 16.0,
            float(len(stripped) > 200),
            float(0 < len(stripped) <= 3),
            float(near),
            float(bool(POINTER.search(ln))),
            float(bool(VCS.search(ln))),
            float(i in tail and bool(SUMMARY.search(ln))),
            float(errs[i] and bool(LOCATION.search(ln))),
            float(bool(hits) and ":" in ln and len(stripped) < 120),
            _unprintable(ln),
            counts[masked[i]] / n if stripped else 0.0,
            float(bool(_JSONISH.match(ln))),
        ])
    return out


def relevance(lines: list[str], intent: str | None) -> list[float]:
    """How much each line speaks to the intent: the summed rarity (idf) of the intent's terms
    it contains, so `refund` found once outranks `where` found everywhere. All 0 without
    intent terms. Filters that must cut rank their candidate lines by it."""
    terms = [t[:6] for t in intent_terms(intent)]
    if not terms or not lines:
        return [0.0] * len(lines)
    lowered = [ln.lower() for ln in lines]
    n = len(lines)
    idf = {}
    for t in set(terms):
        df = sum(1 for lw in lowered if t in lw)
        if df and df <= n // 2:          # a term on most lines tells them apart from nothing
            idf[t] = math.log(n / df)
    return [sum(w for t, w in idf.items() if t in lw) for lw in lowered]


def _unprintable(line: str) -> float:
    if not line:
        return 0.0
    bad = sum(1 for ch in line if (ord(ch) < 0x20 and ch not in "\t\r\x1b") or 0xDC80 <= ord(ch) <= 0xDCFF)
    return min(1.0, 4.0 * bad / len(line))


def forced(line: str) -> bool:
    """Lines kept whatever the model says: errors and warnings, and every line the
    pipeline's verbatim policy would refuse to lose (INV-7)."""
    if ERROR.search(line) or WARNING.search(line):
        return True
    try:
        from capsule.observe.verbatim import is_verbatim
    except ImportError:
        return False
    return is_verbatim(line)


@lru_cache(maxsize=1)
def model() -> dict:
    data = resources.files("capsule.observe.content").joinpath("data/reflex.json").read_text()
    return json.loads(data)


def probabilities(lines: list[str], intent: str | None, weights=None) -> list[float]:
    w = weights if weights is not None else model()["weights"]
    probs = []
    for vec in features(lines, intent):
        z = sum(a * b for a, b in zip(w, vec))
        probs.append(1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z)))))
    return probs


def decide(lines: list[str], intent: str | None, tau: float | None = None,
           weights=None, pinned=frozenset()) -> list[bool]:
    """Keep flags per line at threshold tau (the calibrated one by default); `pinned` holds
    the indices observe/keep.py protects (error blocks, anomalies, rare lines)."""
    t = model()["tau"] if tau is None else tau
    probs = probabilities(lines, intent, weights)
    return [p >= t or i in pinned or forced(ln) for i, (p, ln) in enumerate(zip(probs, lines))]


def _tokens(text: str) -> int:
    try:
        from capsule.ground.tokens import count
        return count(text)
    except ImportError:  # the estimate the tokens module also falls back to
        return (len(text.encode("utf-8", "surrogateescape")) + 3) // 4


def reflex(text: str, ctx: Context) -> TransformResult:
    """Transform entry point: keep the lines that matter for ctx.intent, numbered."""
    lines = text.split("\n")
    trailing = lines and lines[-1] == ""
    if trailing:
        lines = lines[:-1]
    if len(lines) <= MIN_LINES or _tokens(text) <= MIN_TOKENS:
        return TransformResult(text, TRANSFORM_ID, lossless=True, notes=["short: passed untouched"])
    try:
        keep = decide(lines, ctx.intent, pinned=extra(text, ctx.exit_code))
    except Exception as exc:  # fail open: the raw text, with the reason
        return TransformResult(text, TRANSFORM_ID, notes=[f"reflex failed open: {exc!r}"])
    if all(keep):
        return TransformResult(text, TRANSFORM_ID, lossless=True, notes=["every line kept"])
    out, removals, run = [], [], []
    for i, line in enumerate(lines + [None]):
        if line is not None and not keep[i]:
            run.append(i)
            continue
        if run:
            removals.append(Removal(reason="p(keep) below tau for the intent", count=len(run),
                                    start=run[0] + 1, end=run[-1] + 1,
                                    preview=lines[run[0]].strip()[:120]))
            run = []
        if line is not None:
            out.append(f"{i + 1}: {line}")
    return TransformResult("\n".join(out) + ("\n" if trailing else ""), TRANSFORM_ID,
                           removals=removals, notes=[f"tau={model()['tau']:.4f}"])
