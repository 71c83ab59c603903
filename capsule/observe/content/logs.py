"""Log shaping: template clustering (numbers, ids, hashes, timestamps masked) with counts;
the first and last line of each repeated template kept verbatim; error lines untouched.

Not responsible for parsing structured (JSON) logs — the JSON crusher does — nor for the
`[N more lines]` marker (the pipeline adds it).
Invariant: every error/warning line, every line observe/keep.py protects (anomalies, error
blocks, rare lines of a failing run), the first of each distinct failing (4xx/5xx) request of
an access log, the INTENT_KEEP lines the intent speaks to most, every line whose template
occurs fewer than MIN_REPEAT times and every line that breaks its template by a word the masks
hid (content/templates.py: `GET /admin/export.csv` among 300 `GET /orders/N`) is kept
byte-exact, in order.
"""

from __future__ import annotations

import re
from collections import defaultdict

from capsule.observe import digits
from capsule.observe.types import Context, Removal, TransformResult

TRANSFORM_ID = "logs"
MIN_REPEAT = 3
INTENT_KEEP = 20     # folded lines the intent picks out (most relevant first) stay, up to this many
OUTLIER_MAX_LINES = 20000   # a template group this large is folded without the word-level outlier pass (bounded work)

_MASKS = [
    (re.compile(r"\b[a-z][a-z0-9+.-]*://\S+"), "<url>"),
    (re.compile(r"(?:\.{0,2}/[\w.@%+-]+){2,}/?"), "<path>"),
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"), "<ts>"),
    (re.compile(r"\b\d{1,2}[./]\d{1,2}[./]\d{2,4}\b"), "<date>"),
    (re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?\b"), "<time>"),
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), "<uuid>"),
    (re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b"), "<ip>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b|\b[0-9a-f]{7,64}\b"), "<hex>"),
    (re.compile(r"\b[A-Za-z]+[-_]?\d+[A-Za-z0-9_-]*\b"), "<id>"),
    (re.compile(r"\d+(?:\.\d+)?"), "<n>"),
]


# An HTTP request as access logs write it (Common/Combined Log Format, nginx, python's
# http.server): the target is the variable part; the method, protocol and status are the kind
# of request, so a 404 or a POST never shares a template with the 200 GETs around it.
_REQUEST = re.compile(r'"([A-Z]{3,7}) (\S+) (HTTP/[\d.]+)" (\d{3})\b')
_HOLE = "\x00"


def template(line: str) -> str:
    """The line with its variable parts masked."""
    t = line.strip()
    req = _REQUEST.search(t)
    if req:
        t = t[:req.start()] + _HOLE + t[req.end():]
    for pat, repl in _MASKS:
        t = pat.sub(repl, t)
    if req:
        t = t.replace(_HOLE, f'"{req.group(1)} <target> {req.group(3)}" {req.group(4)}', 1)
    return t


# A mask can match only where its text holds one of these (None: no such test): a whole text
# without them skips that mask's pass.
_NEEDED = ("://", "/", "-", None, ":", "-", ".", None, None, None)


def templates(lines: list[str]) -> list[str]:
    """[template(line) for line in lines] (lines without a newline). A template holds no ASCII
    digit and every mask reads a digit only as a digit, so lines that differ only in their digits
    share a template: it is worked out once per distinct digit-masked line (digits.masked), each
    mask one substitution over them joined (no mask spans a newline, which is a word boundary as
    a line's end is). A line holding an HTTP request (its status and protocol stay in the
    template) gets template() itself."""
    stripped = [ln.strip() for ln in lines]
    masked = digits.masked(stripped)
    if not stripped or masked is None:
        return [template(ln) for ln in lines]
    distinct = list(dict.fromkeys(masked))
    joined = "\n".join(distinct)
    for (pat, repl), needle in zip(_MASKS, _NEEDED):
        if needle is None or needle in joined:
            joined = pat.sub(repl, joined)
    template_of = dict(zip(distinct, joined.split("\n")))
    out = list(map(template_of.__getitem__, masked))
    for i, t in enumerate(stripped):
        if "HTTP/" in t and _REQUEST.search(t):
            out[i] = template(lines[i])
    return out


def failed_requests(lines: list[str]) -> set[int]:
    """The first line of each distinct failing request (4xx/5xx: method, target, status) of an
    access log: the errors of the log, kept even when failures are common enough to repeat."""
    seen: dict[tuple, int] = {}
    for i, ln in enumerate(lines):
        m = _REQUEST.search(ln)
        if m and m.group(4)[0] in "45":
            seen.setdefault((m.group(1), m.group(2), m.group(4)), i)
    return set(seen.values())


def _verbatim():
    try:
        from capsule.observe.verbatim import is_verbatim
        return is_verbatim
    except ImportError:  # the rule the policy module states, narrowed
        pat = re.compile(r"(?i)\b(error|fatal|fail\w*|panic|exception|traceback|warn\w*)\b")
        return lambda line: bool(pat.search(line))


def _outliers(lines: list[str]) -> tuple[set[int], list[str]]:
    """(indices of the lines that break the group's template by a word, what varied among the
    rest beyond the first and last line): the masks read `/orders/17` and `/admin/export.csv` alike, the words do not."""
    if len(lines) > OUTLIER_MAX_LINES:
        return set(), []
    from capsule.observe.content import templates

    folds, outliers = templates.cluster(lines)
    main = max(folds, key=lambda f: len(f.members), default=None)
    if main is None:
        return outliers, []
    rest = set(range(len(lines))) - {m for f in folds for m in f.members} - outliers
    if len(main.members) >= templates.DOMINANT * len(lines) and len(rest) <= max(1, templates.RARE * len(lines)):
        # nearly every line is one fine template: the rare few of another shape break it too
        outliers = outliers | rest
    # the first and last lines stay: a range they already bound (a rising id) says nothing; of the
    # rest one is said: a word slot's values, else the number of the widest magnitude (an amount,
    # a duration; not the clock's two-digit parts)
    said = [r for r, new in zip(main.ranges, main.beyond) if new]
    words = [r for r in said if r.startswith("<*>")]
    return outliers, (words or sorted(said, key=lambda r: -len(r.rsplit("…", 1)[-1])))[:1]


def cluster(text: str, ctx: Context) -> TransformResult:
    """Transform entry point."""
    lines = text.split("\n")
    trailing = bool(lines) and lines[-1] == ""
    if trailing:
        lines = lines[:-1]
    is_verbatim = _verbatim()
    from capsule.observe.keep import extra

    pinned = extra(text, ctx.exit_code) | failed_requests(lines)
    shown_lines = [ln.rsplit("\r", 1)[-1] if "\r" in ln.rstrip("\r") else ln for ln in lines]
    if ctx.intent:
        from capsule.observe.content.reflex import relevance

        scores = relevance(shown_lines, ctx.intent)
        pinned |= set(sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: (-scores[i], i))[:INTENT_KEEP])
    groups: dict[str, list[int]] = defaultdict(list)
    nonblank = [i for i, ln in enumerate(shown_lines) if ln.strip()]
    for i, tpl in zip(nonblank, templates([shown_lines[i] for i in nonblank])):
        groups[tpl].append(i)
    drop: dict[int, str] = {}
    counts: dict[int, int] = {}
    varied: dict[int, list[str]] = {}
    for tpl, idx in groups.items():
        if len(idx) < MIN_REPEAT:
            continue
        breakers, varied[idx[0]] = _outliers([shown_lines[i] for i in idx])
        pinned |= {idx[k] for k in breakers}
        middle = [i for i in idx[1:-1] if i not in pinned and not is_verbatim(lines[i])]
        if not middle:
            continue
        for i in middle:
            drop[i] = tpl
        counts[idx[0]] = len(idx)
    out: list[str] = []
    removals: list[Removal] = []
    run: list[int] = []
    redraws = 0
    for i in range(len(lines) + 1):
        if i < len(lines) and i in drop:
            run.append(i)
            continue
        if run:
            removals.append(Removal(f"repeated log template ({len(groups[drop[run[0]]])}×): "
                                    f"{drop[run[0]][:60]}", len(run), run[0] + 1, run[-1] + 1,
                                    lines[run[0]].strip()[:120]))
            run = []
        if i == len(lines):
            break
        line = lines[i]
        if shown_lines[i] is not line and not is_verbatim(line):
            redraws += 1
            line = shown_lines[i]
        if i in counts:
            what = "".join(f"; {r}" for r in varied.get(i, []))
            line += f"  [×{counts[i]} like this; first and last shown{what}]"
        out.append(line)
    if not removals and not redraws:
        return TransformResult(text, TRANSFORM_ID, lossless=True, notes=["no repeated templates"])
    if redraws:
        removals.append(Removal(f"terminal redraws (\\r) in {redraws} lines: last frame kept", 0))
    return TransformResult("\n".join(out) + ("\n" if trailing else ""), TRANSFORM_ID,
                           removals=removals,
                           notes=[f"{len(drop)} lines in {len(counts)} templates folded"])
