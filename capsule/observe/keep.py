"""KEEP: the lines no lossy transform may drop, judged on the whole text and the exit status.

Responsible for the rules that one line's words cannot decide (verbatim.py decides those):
error blocks (the line a panic/exception header announces, `Caused by`/`note:`/`help:` and
indented message continuations), log anomalies in any run (a rare value in a low-cardinality
field — a 404 among 2xx, `exit status 1` among 0s —, a level above the dominant one, numeric
outliers), and in a run that exits non-zero, rare templates (a line unlike the thousands around
it; a variant of a frequent pattern such as pytest's dot row holding the one `F`); and the
text a tool quotes rather than reports (diff hunks, commit messages, the source in a code frame
or a pytest failure, passing test ids), whose words do not make a line an error.
Not responsible for dropping anything: filters, budgets, log clustering and the reflex ask it.
Invariant: deterministic and linear in the lines (tokens per line capped); the set it returns
holds original 0-based line indices and includes every verbatim-class line.
"""

from __future__ import annotations

import re
import string
from collections import Counter, defaultdict
from functools import lru_cache
from operator import le

from capsule.observe import digits
from capsule.observe.verbatim import verbatim_flags

MAX_TOKENS = 16          # tokens of a line that take part in templates
MIN_GROUP = 20           # lines sharing a template before its fields are judged (any run)
MIN_FIELDS = 4           # a record has several fields; a path, a name or `a from b` is not one
MIN_VARIANT_GROUP = 4    # lines around a one-token variant (failing runs)
DOMINANT = 0.75          # share of a field's commonest value that makes a different value stand out
RARE_SHARE = 0.02        # a value (or template) this rare among its group stands out ...
RARE_MIN = 2             # ... or when seen at most this many times
CATEGORICAL = 16         # a field with at most this many distinct values is categorical
REPETITIVE = 0.90        # share of lines in frequent templates that makes a text repetitive
MIN_REPETITIVE_LINES = 50
OUTLIER_FACTOR = 10.0    # a number this many times the field's median (and far above its spread)
CONTINUATION_MAX = 6     # indented lines after an error header that still belong to it

_HUNK = re.compile(r"^@@+ -\d+(?:,\d+)? .*@@")
_COMMIT = re.compile(r"^commit [0-9a-f]{7,64}(?: \(.*\))?$")
_DIFFSTAT = re.compile(r"^ \S.*? +\| +(?:\d+ ?[+-]*|Bin\b.*)$")   # ` path/to/file | 12 ++--`: a file name
_COMMIT_HEADER = re.compile(r"^[A-Z][A-Za-z]*:\s")      # Author:, Date:, Merge:, CommitDate: …
_SHAPE = re.compile(r"[A-Za-z]+|\d+")
_DIGITS = re.compile(r"0x[0-9a-fA-F]+|\b[0-9a-f]{7,}\b|\d+")
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")
_NUMBERS = re.compile(r"-?\d+(?:\.\d+)?(?:\n-?\d+(?:\.\d+)?)*")
# Not message text: stack frames, a compiler's source excerpt (`12 |  code`, `   |  ^~~`) and
# caret lines; the tool's own filter decides about those.
_FRAME = re.compile(r"^\s+(?:at\s|File \"|\d+:\s|from\s|in\s|#\d+\s)|^\s+\S+\.\w+:\d+|"
                    r"^\s*[\^~]+[\^~ ]*$|^\s*\d*\s*[|│]|^\S+:\d+: in \S+$")
_ANNOUNCES = re.compile(r":\s*$|panicked at|^\s*Traceback \(most recent call last\)")
_CONTINUES = re.compile(r"^\s*(?:=\s*)?(?:Caused by\b|caused by\b|note:|help:|Note:|Help:|NOTE:)")
_LEVEL_WORDS = "TRACE|DEBUG|FINE|INFO|NOTICE|WARN|WARNING|ERROR|ERR|CRIT|CRITICAL|ALERT|EMERG|FATAL|SEVERE"
_LEVEL = re.compile(rf"(?<![\w-])({_LEVEL_WORDS})(?![\w-])|^([DIWEF])\d{{4}} ")    # a line's level (the rule)
# _LEVEL in two parts that find the same match faster: the `^X1234 ` form (glog) at the start,
# else the leftmost level word whose previous character is not `[\w-]` (the lookbehind, checked
# after the word is found, so the regex engine can skip to the words' first letters).
_LEVEL_GLOG = re.compile(r"([DIWEF])\d{4} ")
_LEVEL_WORD = re.compile(rf"({_LEVEL_WORDS})(?![\w-])")
_WORDISH = re.compile(r"[\w-]")
_RANK = {"TRACE": 0, "DEBUG": 1, "FINE": 1, "D": 1, "INFO": 2, "I": 2, "NOTICE": 3, "WARN": 4,
         "WARNING": 4, "W": 4, "ERROR": 5, "ERR": 5, "E": 5, "SEVERE": 5, "CRIT": 6, "CRITICAL": 6,
         "F": 6, "ALERT": 7, "EMERG": 7, "FATAL": 7}


def split(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def protected(text: str, exit_code: int | None) -> frozenset[int]:
    """0-based indices of the lines of `text` that must survive (verbatim lines included)."""
    return _analyse(text, exit_code not in (0, None))[0]


def extra(text: str, exit_code: int | None) -> frozenset[int]:
    """The protected lines that are not verbatim-class on their own (what filters must add
    to their own verbatim checks)."""
    return _analyse(text, exit_code not in (0, None))[1]


def quoted_source(text: str, exit_code: int | None) -> frozenset[int]:
    """0-based indices of the source lines a diagnostic quotes (code frames, pytest's failure
    excerpts; code_frames): a word there is not the run's error, so a filter's line rules may
    drop them like any other context line."""
    return _analyse(text, exit_code not in (0, None))[2]


def verbatim_by_line(text: str, exit_code: int | None) -> dict[str, bool]:
    """is_verbatim of every line of `text`, keyed by the line: worked out once with the analysis
    above, so a filter over the same text need not ask again."""
    return dict(zip(split(text), _analyse(text, exit_code not in (0, None))[3]))


@lru_cache(maxsize=4)
def _analyse(text: str, failing: bool) -> tuple[frozenset[int], frozenset[int], frozenset[int], tuple[bool, ...]]:
    lines = split(text)
    content = quoted(lines)
    frames = code_frames(lines)
    content |= frames
    masked = digits.masked(lines)
    flags = verbatim_flags(lines, masked)
    verbatim = [flag and i not in content for i, flag in enumerate(flags)]
    more = error_blocks(lines, verbatim) | anomalies(lines, failing, masked)
    more = {i for i in more if not verbatim[i] and i not in frames}
    return (frozenset(more | {i for i, v in enumerate(verbatim) if v}), frozenset(more), frozenset(frames),
            tuple(flags))


def quoted(lines: list[str]) -> set[int]:
    """Lines the tool quotes rather than reports: unified-diff hunks (their headers' function
    context and their bodies), the messages
    of git commits and diffstat file lines. A changed line that says `raise ValueError`, or a commit message saying "fix the
    panic on empty input", is text under review, not an error the run hit; the tool's own filter
    (every changed line up to its budget, each commit's subject) decides about it."""
    out: set[int] = set()
    inside = False
    # Whole-text pre-checks (a line that can match holds the substring, so the text does):
    # a long log with no hunk, commit, table bar or tree branch skips the per-line loops.
    text = "\n".join(lines)
    for i, ln in enumerate(lines if "@" in text and "@@" in text else ()):   # `@`: one memchr
        if _HUNK.match(ln):
            inside = True
            out.add(i)      # `@@ -46,6 +49,82 @@ def _warn(warning: Warning)`: the function context is quoted code
        elif inside and (ln[:1] in (" ", "+", "-", "\\") or not ln):
            out.add(i)
        else:
            inside = False
    if "commit " in text:
        out |= commit_messages(lines)
    if "|" in text or "── " in text or "-- " in text:
        out |= {i for i, ln in enumerate(lines) if _DIFFSTAT.match(ln) or _named_entry(ln)}
    return out


_DRAWN = ("├── ", "└── ", "|-- ", "`-- ")


def _named_entry(line: str) -> bool:
    """A tree drawing's entry that is one bare name (`│   └── test_FileError.py`, npm ls's
    `├── error-ex@1.3.2`): a file or package name, not a report; `x [error opening dir]` is one."""
    if "── " not in line and "-- " not in line:
        return False
    rest = line.lstrip(" \xa0│|")
    return rest[:4] in _DRAWN and len(rest) > 4 and not any(c.isspace() for c in rest[4:])


# A compiler's or linter's code frame (rustc, cargo, clippy, ruff's full format): after a
# `--> path:line:col` location (or a `help:` that opens a suggestion), gutter lines `  |` carry the
# tool's own labels, numbered lines `12 | code` (and a suggested fix's `12 + code` / `   - code`)
# quote the source, and so does the snippet indented under a `= help: ...:` line.
_ARROW = re.compile(r"^\s*(?:-->|:::)\s*\S+:\d+")
_GUTTER = re.compile(r"^\s*\d*\s*[|│](?:\s|$)")
_NUMBERED = re.compile(r"^\s*\d+\s*[|│+-](?:\s|$)")
_REMOVED = re.compile(r"^\s+-(?:\s|$)")
_ELIDED = re.compile(r"^(?:-{20,}|\s*\.\.\.)\s*$")
_SUGGESTS = re.compile(r"^\s*(?:=\s*)?help:")
# `  = help: add this to Cargo.toml:` then a deeper-indented snippet: suggested text, quoted too
_FRAME_NOTE = re.compile(r"^(\s*)= (?:help|note|suggestion)\b")
# pytest's FAILURES / ERRORS sections: inside a test's block (after its `____ name ____` header,
# outside `---- Captured ... ----` output), 4-space-indented lines are the test's source and
# `name = value` lines its arguments; the `E` lines, `>` line and `path:N:` locations are the report.
_PT_BANNER = re.compile(r"^={3,} (.*?) ={3,}$")
_PT_TEST = re.compile(r"^_+ (?!(?:_ )*_$).*\S _+$")     # `_ id _` when the id is wider than the terminal
_PT_SUB = re.compile(r"^-{3,} (.*?) -{3,}$")
_PT_SOURCE = re.compile(r"^    (?!\s*File \")|^[A-Za-z_]\w* = \S")
# A passing test's verbose line (`-v` progress, `-rA` summary): the id is a name its author chose
# (`test_rejects[Error: bad value]`), and the test passed.
# The command line a build tool echoes before running it (`cargo -v`: `Running \`rustc ...
# --error-format=json ...\``): its flags are not the run's errors.
_ECHOED = re.compile(r"^\s+Running `[^`]+`$")
_PT_PASSED = re.compile(r"^(?:\[gw\d+\] \[\s*\d+%\] )?PASSED \S+::|^\S+::.* PASSED(?:\s+\[\s*\d+%\])?\s*$")


def code_frames(lines: list[str]) -> set[int]:
    """The source lines a diagnostic quotes: numbered lines of a code frame, the test source
    pytest prints around a failure, passing tests' ids and echoed commands (see the patterns above)."""
    out: set[int] = set()
    frame = False
    section = block = False
    n = len(lines)
    snippet = -1           # indent of a frame's `= help: ...:` line whose snippet follows
    text = "\n".join(lines)
    if not (text[:1] == "=" or "\n=" in text or "-->" in text or ":::" in text or "help:" in text
            or "PASSED" in text or ("`" in text and "Running `" in text)):
        return out         # no line can open a frame or a section, nor be one of the lines below
    for i, ln in enumerate(lines):
        if not (frame or section or ln[:1] == "=" or "-->" in ln or ":::" in ln or "help:" in ln
                or "PASSED" in ln or "Running `" in ln):
            continue       # most lines of a long log can start nothing here (substring tests are cheapest)
        if _ARROW.match(ln) or (_SUGGESTS.match(ln) and i + 1 < n and _GUTTER.match(lines[i + 1])):
            frame, snippet = True, -1
            continue
        if frame:
            note = _FRAME_NOTE.match(ln)
            if note:
                snippet = len(note.group(1)) if ln.rstrip().endswith(":") else -1
                continue
            if snippet >= 0 and ln.strip() and len(ln) - len(ln.lstrip()) > snippet + 2:
                out.add(i)
                continue
            snippet = -1
        if frame and (_GUTTER.match(ln) or _NUMBERED.match(ln) or _REMOVED.match(ln) or _ELIDED.match(ln)):
            if not _GUTTER.match(ln) or _NUMBERED.match(ln):
                out.add(i)
            continue
        frame = False
        banner = _PT_BANNER.match(ln)
        if banner:
            section = banner.group(1).strip() in ("FAILURES", "ERRORS")
            block = False
        elif section and _PT_TEST.match(ln):
            block = True
        elif section and _PT_SUB.match(ln):
            block = "Captured" not in ln
        elif block and _PT_SOURCE.match(ln):
            out.add(i)
        elif "PASSED" in ln and _PT_PASSED.match(ln):
            out.add(i)
        elif _ECHOED.match(ln):
            out.add(i)
    return out


def commit_messages(lines: list[str]) -> set[int]:
    """The message lines of git's commit blocks: after `commit SHA` and its `Name: value` header
    lines, the 4-space-indented (and blank) lines up to the next line that is neither."""
    out: set[int] = set()
    i, n = 0, len(lines)
    while i < n:
        if not _COMMIT.match(lines[i]):
            i += 1
            continue
        i += 1
        while i < n and _COMMIT_HEADER.match(lines[i]):
            i += 1
        while i < n and (lines[i].startswith("    ") or not lines[i].strip()):
            if lines[i].strip():
                out.add(i)
            i += 1
    return out


# ---- error blocks ----------------------------------------------------------------------

def error_blocks(lines: list[str], verbatim: list[bool]) -> set[int]:
    """The lines that finish an error a verbatim header starts: after a header that announces
    more (ends with ':', `panicked at`, a traceback header) its next line and the indented
    lines under it; after any error line, the `Caused by`/`note:`/`help:` lines that follow."""
    keep: set[int] = set()
    n = len(lines)
    for i in range(n):
        if not verbatim[i]:
            continue
        header = lines[i]
        indent = len(header) - len(header.lstrip())
        j = i + 1
        announces = bool(_ANNOUNCES.search(header))
        if announces:
            while j < n and not lines[j].strip() and j - i <= 2:
                j += 1
            if j < n and lines[j].strip() and not _FRAME.match(lines[j]):
                keep.add(j)      # the message the header announces ("index out of bounds: ...")
                j += 1
            else:
                announces = False    # a frame or a source excerpt follows, not a message
        taken = 0
        while j < n and lines[j].strip():
            line = lines[j]
            if _CONTINUES.match(line):
                keep.add(j)
            elif (announces and taken < CONTINUATION_MAX and not _FRAME.match(line)
                  and len(line) - len(line.lstrip()) > indent):
                keep.add(j)      # the announced message goes on, indented under its header
                taken += 1
            else:
                break
            j += 1
    return keep


# ---- templates and anomalies -----------------------------------------------------------

def _tokens(line: str) -> list[str]:
    return line.split(None, MAX_TOKENS)[:MAX_TOKENS]


def _kind(m: re.Match) -> str:
    return "a" if m.group(0)[0].isalpha() else "0"


def _shape(line: str) -> tuple[str, ...]:
    """The line's tokens with each run of letters or digits reduced to its kind."""
    return tuple(_tokens(_SHAPE.sub(_kind, line)))


_KINDS = bytes.maketrans((string.ascii_letters + string.digits).encode(), b"a" * 52 + b"0" * 10)


def _shapes(lines: list[str]) -> list[tuple[str, ...]]:
    """[_shape(line) for line in lines], worked out once per distinct line of kinds (a regex
    callback per letter run was most of a long log's analysis): over the joined text as ASCII
    bytes each letter becomes `a` and each digit `0` (a log's lines mostly share those), then the
    runs in the distinct ones shrink to one. A non-ASCII line gets _shape itself (`\\d` also
    matches other scripts' digits; a non-ASCII character became one `?`)."""
    if not lines:
        return []
    kinds = "\n".join(lines).encode("ascii", "replace").translate(_KINDS).decode("ascii").split("\n")
    distinct = list(dict.fromkeys(kinds))
    short = "\n".join(distinct).encode("ascii")
    for run in (b"aa", b"00"):
        while run in short:
            short = short.replace(run, run[:1])
    shape_of = {k: tuple(_tokens(s)) for k, s in zip(distinct, short.decode("ascii").split("\n"))}
    if all(map(str.isascii, lines)):
        return list(map(shape_of.__getitem__, kinds))
    return [shape_of[k] if ln.isascii() else _shape(ln) for ln, k in zip(lines, kinds)]


def _mask(line: str) -> tuple[str, ...]:
    """The line's tokens with numbers and hex ids masked."""
    return tuple(_tokens(_DIGITS.sub("#", line)))


def _groups(keys: list[tuple]) -> dict[tuple, list[int]]:
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, key in enumerate(keys):
        if key:
            groups[key].append(i)
    return groups


def anomalies(lines: list[str], failing: bool, masked: list[str] | None = None) -> set[int]:
    keep: set[int] = set()
    # Records of one shape (words and numbers reduced to their kind): a field that reads
    # differently in a few of them is an anomaly in any run (a 404 among 2xx). A shape has its
    # line's tokens (runs of letters or digits became one letter, whitespace stayed), so a
    # record's width is its key's, and only the lines of a large group are split into fields.
    for key, idx in _groups([s if len(s) >= MIN_FIELDS else () for s in _shapes(lines)]).items():
        if len(idx) >= MIN_GROUP:
            keep |= _field_outliers(idx, _columns(lines, idx, len(key)))
    keep |= _levels(lines, masked)
    if failing:
        # Templates (numbers masked, words kept): in a failing run, the odd one out.
        # Stack frames and source excerpts are the tool filters' business, not anomalies.
        # (A blank line masks to no tokens: no template, and not counted below.)
        templates = _groups([() if _FRAME.match(ln) else _mask(ln) for ln in lines])
        keep |= _variants(templates, lines)
        keep |= _rare_templates(templates, sum(1 for ln in lines if ln.strip()))
    return keep


def _columns(lines: list[str], idx: list[int], width: int) -> list:
    """The first `width` tokens of the lines `idx`, column by column. Lines of one template of
    fewer than MAX_TOKENS tokens have exactly `width` each: their words, read by one split of
    the lines joined, fall into columns by stride (no list per line). str.split's whitespace is
    the per-line split's, and a newline is whitespace."""
    if width < MAX_TOKENS:
        words = "\n".join([lines[i] for i in idx]).split()
        if len(words) == width * len(idx):
            return [words[k::width] for k in range(width)]
    return list(zip(*(_tokens(lines[i]) for i in idx)))[:width]


def _rare(count: int, total: int) -> bool:
    return count <= max(RARE_MIN, RARE_SHARE * total)


def _field_outliers(idx: list[int], columns: list) -> set[int]:
    """In lines of one template (`columns`: their fields, _columns): a rare value of a
    categorical field, or a numeric outlier. Each rule is first asked of the column's distinct
    values (its Counter); the per-line work (numbers, order, statistics) runs only for a column
    where one of the rules can still keep a line."""
    keep: set[int] = set()
    total = len(idx)
    for column in columns:
        head = column[:4 * CATEGORICAL]
        if len(set(head)) > CATEGORICAL and not _numbers(head):
            continue     # neither categorical nor numbers (its first rows show it): nothing below applies
        values = Counter(column)
        if len(values) == 1:
            continue
        numeric = _numbers(values)
        if not numeric and len(values) > CATEGORICAL:
            continue
        dominated = len(values) <= CATEGORICAL and max(values.values()) >= DOMINANT * total
        if not dominated and not (numeric and _may_stand_out(values)):
            continue     # no value is rare under a dominant one, and no number can pass the bar below
        nums = list(map(float, column)) if numeric else None
        if _ordered(nums if numeric else column):
            continue     # a clock or a counter: values that only grow are not anomalies
        if dominated:
            rare = {v for v, c in values.items() if _rare(c, total)}
            keep |= {i for i, v in zip(idx, column) if v in rare}
        else:
            # statistics (with fractions, decimal, random: ~4 ms) is loaded only when a numeric,
            # unordered column reaches here, not on every cold `ctx run` (tests/cli/test_cold_run.py)
            from statistics import median  # noqa: PLC0415

            med = median(nums)
            spread = median([abs(x - med) for x in nums])
            bar = max(OUTLIER_FACTOR * abs(med), med + OUTLIER_FACTOR * spread, 1.0)
            high = [i for i, x in zip(idx, nums) if x > bar]
            if _rare(len(high), total):
                keep |= set(high)
    return keep


def _may_stand_out(values) -> bool:
    """Whether a number of a column (its distinct values, all numbers) can exceed the outlier bar
    (at least OUTLIER_FACTOR times the median, and 1): the median lies between the smallest and
    the largest value, so when the largest is within OUTLIER_FACTOR times a non-negative smallest
    (or at most 1), none can."""
    nums = list(map(float, values))
    low, high = min(nums), max(nums)
    return not (high <= 1.0 or (low >= 0 and high <= OUTLIER_FACTOR * low))


def _numbers(values) -> bool:
    """Every value is a plain number (_NUMBER): one match over the values joined by newlines
    (a token never holds whitespace)."""
    return not values or _NUMBERS.fullmatch("\n".join(values)) is not None


def _ordered(seq) -> bool:
    return all(map(le, seq, seq[1:]))      # numbers as numbers, anything else as text


def _levels(lines: list[str], masked: list[str] | None = None) -> set[int]:
    """Log lines whose level ranks above the level most lines carry."""
    levels = _level_ranks(lines, masked)
    if len(levels) < MIN_GROUP:
        return set()
    dominant = Counter(levels.values()).most_common(1)[0][0]
    above = {i for i, r in levels.items() if r > dominant}
    return above if _rare(len(above), len(levels)) else set()


def _level_ranks(lines: list[str], masked: list[str] | None = None) -> dict[int, int]:
    """The rank of each line's level (_LEVEL in its first 120 characters), by line index: asked
    once per distinct digit-masked line (digits.masked; the rule sees a digit only as `\\d`/`\\w`,
    so a line and its mask rank alike). `masked`: digits.masked(lines), when the caller has it."""
    masked = masked if masked is not None else digits.masked(lines)
    if masked is None:        # a line holds a newline
        masked = lines
    rank = {m: _level_rank(m[:120]) for m in dict.fromkeys(masked)}
    return {i: r for i, r in enumerate(map(rank.__getitem__, masked)) if r is not None}


def _level_rank(head: str) -> int | None:
    m = _LEVEL_GLOG.match(head)     # only at the start, where no level word can also match (`E1` is no word)
    if m is None:
        m = _LEVEL_WORD.search(head)
        while m is not None and m.start() and _WORDISH.match(head, m.start() - 1):
            m = _LEVEL_WORD.search(head, m.start() + 1)
    return None if m is None else _RANK[m.group(1)]


def _variants(groups: dict[tuple, list[int]], lines: list[str]) -> set[int]:
    """A template seen (almost) only once that differs in one token from a frequent one: the
    odd one out (`....F....` among rows of dots; a line whose one word reads differently)."""
    keep: set[int] = set()
    near: dict[tuple, list[tuple]] = defaultdict(list)
    for key, idx in groups.items():
        for pos in range(len(key)):
            near[(len(key), pos, key[:pos] + key[pos + 1:])].append(key)
    for members in near.values():
        if len(members) < 2:
            continue
        counts = [(len(groups[k]), k) for k in members]
        total = sum(c for c, _ in counts)
        top, top_key = max(counts)
        if total < MIN_VARIANT_GROUP or top < DOMINANT * (total - 1):
            continue
        for c, k in counts:
            if k != top_key and _rare(c, total) and c < top:
                keep |= set(groups[k])
    # values of one token that differ inside a single template (`exit status 1` among 0s)
    for key, idx in groups.items():
        if MIN_VARIANT_GROUP <= len(idx) < MIN_GROUP and len(key) >= MIN_FIELDS:
            keep |= _field_outliers(idx, _columns(lines, idx, len(key)))
    return keep


def _rare_templates(groups: dict[tuple, list[int]], nonblank: int) -> set[int]:
    """In a repetitive failing run, a line whose template is seen once stands out."""
    if nonblank < MIN_REPETITIVE_LINES:
        return set()
    frequent = sum(len(idx) for idx in groups.values() if len(idx) >= 3)
    if frequent < REPETITIVE * nonblank:
        return set()
    singles = [idx[0] for idx in groups.values() if len(idx) == 1]
    return set(singles) if _rare(len(singles), nonblank) else set()


def missing(original: str, emitted: str, exit_code: int | None) -> list[str]:
    """Protected lines of the original that the emission lost (stripped text compared; a line
    may lose ANSI codes or gain a run count)."""
    from capsule.observe.verbatim import _strip_ansi

    lines = split(original)
    emitted_lines = {ln.strip() for ln in emitted.split("\n")}
    out: list[str] = []
    seen: set[str] = set()
    for i in sorted(protected(original, exit_code)):
        stripped = lines[i].strip()
        if stripped in seen or not stripped:
            continue
        seen.add(stripped)
        bare = _strip_ansi(stripped)
        if stripped in emitted_lines or bare in emitted_lines or stripped in emitted or bare in emitted:
            continue
        out.append(lines[i])
    return out
