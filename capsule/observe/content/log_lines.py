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

from capsule.observe import rarity
from capsule.observe.content import templates as word_templates   # `templates` below is rarity's miner
from capsule.observe.content.reflex import relevance
from capsule.observe.transform_types import Context, Removal, TransformResult
from capsule.observe.keep import extra

TRANSFORM_ID = "logs"
MIN_REPEAT = 3
INTENT_KEEP = 20     # folded lines the intent picks out (most relevant first) stay, up to this many
OUTLIER_MAX_LINES = 20000   # a template group this large is folded without the word-level outlier pass (bounded work)

# The masks and the templates are the salience model's (observe/rarity.py): one template miner for
# every door and family.
template, templates = rarity.template, rarity.templates
_REQUEST = rarity.REQUEST


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
    folds, outliers = word_templates.cluster(lines)
    main = max(folds, key=lambda f: len(f.members), default=None)
    if main is None:
        return outliers, []
    rest = set(range(len(lines))) - {m for f in folds for m in f.members} - outliers
    if len(main.members) >= word_templates.DOMINANT * len(lines) and len(rest) <= max(1, word_templates.RARE * len(lines)):
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
    pinned = extra(text, ctx.exit_code) | failed_requests(lines)
    shown_lines = [ln.rsplit("\r", 1)[-1] if "\r" in ln.rstrip("\r") else ln for ln in lines]
    if ctx.intent:
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
