"""Run one TOML filter's stages over a text, in the fixed order of the DSL.

Order: strip ANSI → replace → short-circuit summary (guarded by `unless`, the exit code and
the verbatim class) → strip/keep lines → dedupe lines shown above → collapse repeats → fold
templates → head/tail → max lines → on_empty.
Not responsible for choosing the filter or loading it (engine.py).
Invariant: a verbatim-class line (error, failure, warning; observe/verbatim.py), a line the
whole-text rules pin (observe/keep.py: error blocks, anomalies, rare lines of a failing run) or a
line matching the filter's `protect` is never dropped by any stage (a word in a line the tool
quotes, such as source in a code frame, does not make it verbatim-class; `dedupe_lines` drops a
protected line only when its exact text is already kept); every dropped original line
is accounted for in a Removal; a truncation carries exactly one `[N more lines]` marker;
a failed run is never emptied (its last lines stay when nothing else would).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import compress
from operator import eq

from capsule.observe import keep, markers, rarity
from capsule.observe.filters.spec import FilterSpec
from capsule.observe.guard import marker
from capsule.observe.transform_types import Removal
from capsule.observe.verbatim import is_verbatim

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
CR_REDRAW = re.compile(r"^.*\r(?!$)")   # progress redraws: keep what was drawn last


@dataclass
class Line:
    no: int          # original 1-based line number (0 for synthesised lines)
    text: str
    count: int = 1   # original lines this emitted line stands for (collapse)
    pinned: bool = False   # observe/keep.py says this original line must survive
    quoted: bool = False   # the tool quotes it (source, diff): its words are not the run's errors
    # What a filter's passes ask of the text, worked out once and carried with the line
    # (traceback.LineFacts; a pass that changes a text makes a new Line). Class attributes, not
    # fields: not part of a line's value, and a new line costs no more to make.
    numbered = None      # str: the text with each digit run read as `#`
    shape = None         # str: its first words, numbered
    verbatim = None      # bool: is_verbatim(text)


def split_lines(text: str) -> tuple[list[str], bool]:
    if not text:
        return [], False
    trailing = text.endswith("\n")
    body = text[:-1] if trailing else text
    return body.split("\n"), trailing


def _preview(text: str) -> str:
    return text.strip()[:120]


class Run:
    """Accumulates removals, merging adjacent lines dropped for the same reason."""

    def __init__(self) -> None:
        self.removals: list[Removal] = []

    def drop(self, line: Line, reason: str) -> None:
        last = self.removals[-1] if self.removals else None
        if (last is not None and last.reason == reason and last.end is not None
                and line.no and last.end + 1 == line.no):
            self.removals[-1] = Removal(reason, last.count + line.count, last.start, line.no, last.preview)
        else:
            self.removals.append(Removal(reason, line.count, line.no or None, line.no or None, _preview(line.text)))

    def drop_many(self, lines: list[Line], reason: str) -> None:
        """drop(line, reason) for each line in turn, the same removals without building one per line."""
        if not lines:
            return
        removals = self.removals
        cur = None          # the last removal while it grows: [reason, count, start, end, preview]
        last = removals[-1] if removals else None
        if (last is not None and last.reason == reason and last.end is not None
                and lines[0].no and last.end + 1 == lines[0].no):
            cur = [last.reason, last.count, last.start, last.end, last.preview]
            removals.pop()
        for line in lines:
            no = line.no
            if cur is not None and cur[3] is not None and no and cur[3] + 1 == no:
                cur[1] += line.count
                cur[3] = no
            else:
                if cur is not None:
                    removals.append(Removal(*cur))
                cur = [reason, line.count, no or None, no or None, _preview(line.text)]
        removals.append(Removal(*cur))

    @property
    def dropped(self) -> int:
        return sum(r.count for r in self.removals)


def _protected(spec: FilterSpec, line: Line) -> bool:
    return (line.pinned or (not line.quoted and is_verbatim(line.text))
            or any(p.search(line.text) for p in spec.protect))


def pin(lines: list[Line], text: str, exit_code: int | None) -> None:
    """Mark the lines the whole-text rules add to the verbatim class (indices of `text`)."""
    for i in keep.extra(text, exit_code):
        if i < len(lines):
            lines[i].pinned = True
    for i in keep.quoted_source(text, exit_code):
        if i < len(lines):
            lines[i].quoted = True


def summary_text(spec: FilterSpec, clean: str, exit_code: int | None, lines: list[Line]) -> str | None:
    """The short-circuit summary, or None when it must not fire."""
    s = spec.summary
    if s is None:
        return None
    if exit_code is not None and exit_code not in s.exit_codes:
        return None           # a nonzero exit is never summarised as success
    if exit_code is None and 0 not in s.exit_codes:
        return None
    m = s.when.search(clean)
    if m is None:
        return None
    if s.unless is not None and s.unless.search(clean):
        return None
    if any(line.pinned or (not line.quoted and is_verbatim(line.text)) for line in lines):
        return None           # never swallow an error-bearing or anomalous line
    groups = [m.group(0), *m.groups()]
    out = s.text
    for i, g in enumerate(groups):
        out = out.replace("{%d}" % i, g or "")
    return out


def run_stages(spec: FilterSpec, text: str, exit_code: int | None,
               intent: str | None = None) -> tuple[str, list[Removal], bool]:
    """Returns (emitted text, removals, placed_marker). With an intent, a cut keeps the lines
    that speak to it in place of some head/tail lines (the budget stays the same)."""
    raw_lines, trailing = split_lines(text)
    lines = [Line(i + 1, t) for i, t in enumerate(raw_lines)]
    pin(lines, text, exit_code)
    run = Run()

    if spec.strip_ansi:
        for line in lines:
            if "\x1b" in line.text:
                line.text = ANSI.sub("", line.text)
            if "\r" in line.text[:-1]:
                line.text = CR_REDRAW.sub("", line.text)
    for pattern, repl in spec.replace:
        for line in lines:
            line.text = pattern.sub(repl, line.text)

    clean = "\n".join(line.text for line in lines)
    short = summary_text(spec, clean, exit_code, lines)
    if short is not None:
        for line in lines:
            run.drop(line, f"summarised by filter {spec.name}")
        return short + "\n", run.removals, False

    if spec.strip_lines or spec.keep_lines:
        kept = []
        for line in lines:
            if any(p.search(line.text) for p in spec.strip_lines):
                reason = f"noise line ({spec.name})"
            elif spec.keep_lines and not any(p.search(line.text) for p in spec.keep_lines):
                reason = f"not a result line ({spec.name})"
            else:
                kept.append(line)
                continue
            if _protected(spec, line):     # asked only for lines about to go
                kept.append(line)
            else:
                run.drop(line, reason)
        lines = kept

    if spec.dedupe_lines:
        lines = _dedupe(spec, lines, run)
    if spec.collapse_repeats:
        lines = collapse_repeats(lines, run)
    if spec.collapse_blocks:
        lines = collapse_blocks(lines, spec.collapse_blocks, run)
    if spec.fold_templates:
        lines = fold_templates(spec, lines, run)

    cut_at: int | None = None   # index in `lines` where the truncation marker goes
    if (spec.head or spec.tail) and len(lines) > spec.head + spec.tail:
        lines, cut_at = _truncate(spec, lines, spec.head, spec.tail, run, "beyond head/tail", intent)
    if spec.max_lines and len(lines) > spec.max_lines:
        head = max(1, spec.max_lines * 2 // 3)
        tail = spec.max_lines - head
        lines, cut2 = _truncate(spec, lines, head, tail, run, f"beyond max_lines {spec.max_lines}", intent)
        cut_at = cut2 if cut_at is None else min(cut_at, cut2)

    if not any(line.text.strip() for line in lines) and exit_code not in (0, None) and text.strip():
        return _last_lines(spec, raw_lines, trailing)

    out = [line.text for line in lines]
    if cut_at is not None and run.dropped:
        out.insert(cut_at, marker(run.dropped))
    emitted = "\n".join(out)
    if not emitted.strip() and spec.on_empty is not None and exit_code in (0, None) and not text.strip():
        emitted = spec.on_empty
    if emitted and (trailing or not text):
        emitted += "\n"
    elif not emitted and not lines and text.strip() == "" and trailing:
        emitted = text
    return emitted, run.removals, cut_at is not None and bool(run.dropped)


def _dedupe(spec: FilterSpec, lines: list[Line], run: Run) -> list[Line]:
    """A line matching `dedupe_lines` whose text (stripped) an earlier kept line already shows
    goes, protected or not: the text is on screen once (the guard judges lines by their text).
    A pattern with a `(?P<key>...)` group compares that part only (a note repeated at other
    locations: the same advice); such a line goes only when nothing protects it."""
    seen: set[str] = set()
    parts: set[str] = set()
    out: list[Line] = []
    for line in lines:
        key = line.text.strip()
        drop = False
        for p in spec.dedupe_lines:
            m = p.search(line.text)
            if m is None:
                continue
            part = m.groupdict().get("key")
            if part is not None:
                drop = part in parts and not _protected(spec, line)
                parts.add(part)
            else:
                drop = bool(key) and key in seen
            break
        if drop:
            run.drop(line, "repeated line shown above")
            continue
        seen.add(key)
        out.append(line)
    return out


def fold_templates(spec: FilterSpec, lines: list[Line], run: Run) -> list[Line]:
    """Lines sharing a template (content/templates.py) show as their first and one count line
    with the template and what varied; the lines that break a template are pinned, so a later
    head/tail cut keeps them (issue 25: the one test id, log line or name that differs). A
    protected line joins no fold."""
    from capsule.observe.content import templates  # noqa: PLC0415 - bench_startup "ctx run cold, no engine"

    exempt = {i for i, line in enumerate(lines) if _protected(spec, line)}
    folds, outliers = templates.cluster([line.text for line in lines], exempt)
    for i in outliers:
        lines[i].pinned = True
    if not folds:
        return lines
    gone: set[int] = set()
    after: dict[int, str] = {}
    for f in folds:
        gone.update(f.members[1:])
        after[f.members[0]] = f.summary()
    out: list[Line] = []
    for i, line in enumerate(lines):
        if i in gone:
            run.drop(line, "same template as a line shown")
            continue
        out.append(line)
        if i in after:
            out.append(Line(0, after[i], pinned=True))
    return out


def collapse_repeats(lines: list[Line], run: Run) -> list[Line]:
    texts = [line.text for line in lines]
    if not any(map(eq, texts, texts[1:])):
        return list(lines)      # no line repeats the one before it (most long logs): no loop
    out: list[Line] = []
    i = 0
    while i < len(lines):
        j = i + 1
        while j < len(lines) and lines[j].text == lines[i].text:
            j += 1
        reps = j - i
        if reps >= 3 and lines[i].text.strip():
            first = lines[i]
            for dup in lines[i + 1:j]:
                run.drop(dup, "repeated line")
            out.append(Line(first.no, f"{first.text} (x{reps})", first.count))
        else:
            out.extend(lines[i:j])
        i = j
    return out


def collapse_blocks(lines: list[Line], max_period: int, run: Run) -> list[Line]:
    """A block of 2..max_period lines repeated back to back (3+ times) is kept once with a count."""
    return collapse_periodic(lines, max_period, run, keys=[line.text for line in lines], min_reps=3, keep_last=False)


def collapse_periodic(lines: list[Line], max_period: int, run: Run, *, keys: list, min_reps: int,
                      keep_last: bool) -> list[Line]:
    """Blocks of 2..max_period lines whose keys (one per line) repeat back to back at least
    `min_reps` times: the first copy stays (and the last, with `keep_last`, since its numbers
    differ), the rest are dropped and one marker of the one contract stands in their place."""
    out: list[Line] = []
    if len(set(keys)) == len(keys):
        return list(lines)      # no key recurs, so no block repeats (a long log of distinct lines)
    # a pinned line never hides inside a repeated block: its key is its own
    keys = list(keys)
    for i in compress(range(len(lines)), [line.pinned for line in lines]):
        keys[i] = ("pinned", i)
    kept_copies = 2 if keep_last else 1
    reach = min_reps - 1 if keep_last else 2
    i, n = 0, len(lines)
    if min_reps < 2:
        raise ValueError("a repeated block is seen at least twice")
    starts = _block_starts(keys, max_period, reach, min_reps)
    s = 0
    while i < n:
        while s < len(starts) and starts[s] < i:
            s += 1
        nxt = starts[s] if s < len(starts) else n
        if nxt > i:             # no block can start before nxt: those lines stay as they are
            out.extend(lines[i:nxt])
            i = nxt
            continue
        best = None
        for p in range(2, max_period + 1):
            if i + reach * p > n:
                break
            if i + p >= n or keys[i + p] != keys[i]:
                continue        # not even the first line repeats at this period
            block = keys[i:i + p]
            reps = 1
            while keys[i + reps * p:i + (reps + 1) * p] == block:
                reps += 1
            if reps >= min_reps and (best is None or reps * p > best[0] * best[1]):
                best = (reps, p)
        if best is None:
            out.append(lines[i])
            i += 1
            continue
        reps, p = best
        out.extend(lines[i:i + p])
        gone = lines[i + p:i + (reps - kept_copies + 1) * p]
        run.drop_many(gone, f"repeated block of {p} lines")
        out.append(omitted(gone, block_like(lines[i:i + p])))
        if keep_last:
            out.extend(lines[i + (reps - 1) * p:i + reps * p])
        i += reps * p
    return out


def omitted(dropped: list[Line], like: str | None = None) -> Line:
    """The one marker (markers.py) for a contiguous run of dropped lines, in their place: its range
    runs from the first to the last original line, and every original line between them is
    absent too (a stage keeps order, so what an earlier stage dropped between them is)."""
    first, last = dropped[0].no, dropped[-1].no
    if not first or not last:       # a made line among them: no range to state
        return Line(0, markers.marker(sum(d.count for d in dropped)))
    return Line(0, markers.marker(last - first + 1, first, last, like))


def block_like(block: list[Line]) -> str:
    """What the copies of a repeated block share, for its marker: its lines' templates."""
    return "'" + " ⏎ ".join(rarity.templates([b.text for b in block])) + "'"


def _block_starts(keys: list, max_period: int, reach: int, min_reps: int = 2) -> list[int]:
    """Sorted indices i where a block of some period p (2..max_period, i + reach*p <= len(keys))
    repeated min_reps times could start: its first two keys recur p later (and, from three
    copies on, the first one 2p later). Elsewhere no such block starts."""
    n = len(keys)
    starts: set[int] = set()
    for p in range(2, max_period + 1):
        last = n - reach * p            # the last index a block of period p may start at
        if last < 0:
            break
        for i in compress(range(last + 1), map(eq, keys, keys[p:])):   # the first key recurs: look closer
            if keys[i + 1] == keys[i + p + 1] and (min_reps < 3 or (i + 2 * p < n and keys[i] == keys[i + 2 * p])):
                starts.add(i)
    return sorted(starts)


INTENT_SHARE = 0.5    # at most this share of a cut's budget goes to the lines the intent picks


def _intent_picks(lines: list[Line], head: int, tail: int, intent: str | None) -> tuple[set[int], int, int]:
    """(indices the intent keeps, head, tail): the most relevant lines (reflex.relevance) take
    the places of head/tail lines, so a cut keeps the same number of lines."""
    if not intent:
        return set(), head, tail
    from capsule.observe.content.reflex import relevance  # noqa: PLC0415 - bench_startup "ctx run cold, no engine"

    scores = relevance([line.text for line in lines], intent)
    ranked = sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: (-scores[i], i))
    budget = head + tail
    picks = set(ranked[:int(budget * INTENT_SHARE)])
    end = len(lines) - tail
    inside = sum(1 for i in picks if head <= i < end)   # picks the plain cut would have dropped
    if not inside:
        return set(), head, tail
    cut_head = round(inside * head / budget) if budget else 0
    return picks, max(0, head - cut_head), max(0, tail - (inside - cut_head))


def _truncate(spec: FilterSpec, lines: list[Line], head: int, tail: int, run: Run,
              reason: str, intent: str | None = None) -> tuple[list[Line], int]:
    """Keep head + tail lines and every protected line between (and, with an intent, the lines
    that speak to it in place of some head/tail lines); returns (lines, cut index)."""
    picks, head, tail = _intent_picks(lines, head, tail, intent)
    end = len(lines) - tail
    kept = list(lines[:head])
    cut_at = None
    for i, line in enumerate(lines[head:end], head):
        if (line.no and _protected(spec, line)) or i in picks:
            kept.append(line)
        else:
            if cut_at is None:
                cut_at = len(kept)
            run.drop(line, reason)
    kept.extend(lines[end:])
    return kept, (cut_at if cut_at is not None else head)


FAILED_TAIL = 10


def _last_lines(spec: FilterSpec, raw_lines: list[str], trailing: bool) -> tuple[str, list[Removal], bool]:
    """A failed command whose every line the filter would drop: show its last lines instead."""
    keep_from = max(0, len(raw_lines) - FAILED_TAIL)
    kept = [ANSI.sub("", t) for t in raw_lines[keep_from:]]
    removals = []
    if keep_from:
        removals.append(Removal(f"failed run, no line matched filter {spec.name}: kept the last {FAILED_TAIL}",
                                keep_from, 1, keep_from, _preview(raw_lines[0])))
        kept.insert(0, marker(keep_from))
    emitted = "\n".join(kept) + ("\n" if trailing else "")
    return emitted, removals, bool(keep_from)
