"""POLICY: the verbatim class — lines that no lossy transform may remove (INV-7).

Not responsible for deciding what else to keep; transforms do.
Invariant: a line that looks like an error, a failure, a warning, a panic or a security
finding is verbatim-class; the pipeline refuses any lossy result that lost one.
"""

from __future__ import annotations

import re
from itertools import compress

from capsule.observe import digits

# Kept broad on purpose: a false positive costs a few tokens, a false negative hides an error.
_VERBATIM = re.compile(
    r"""(?ix)
    \b(error|errors|err!|fatal|failed|failure|failures|fail|panic(ked)?|exception|traceback
      |warning|warn|assert(ion)?(error)?|segmentation\ fault|core\ dumped|abort(ed)?
      |denied|refused|rejected|conflict|cannot|can't|unable\ to|not\ found|no\ such
      |vulnerab\w*|cve-\d+|unauthori[sz]ed|forbidden|timed?\ ?out|killed|oom
      |fehler|fehlgeschlagen|erreur|échec|errore|fallo|falló)\b
    | \b\w*?(?:Error|Exception)\b       # TemplateError; anchored at a word start so long lines stay linear
    | ^E\s{2,} | ^\s*E\s+\S | ^FAIL | ^\s*[-+]{3}\s | ^\s*>\s+\d+\s*\|
    | ^\s*-->\s | \bexpected\b | \breceived\b | \bleft:| \bright:
    """
)

# Lines that mention an error word only as zero counts or in passing success summaries.
_BENIGN = re.compile(r"(?i)\b(0 (errors?|failed|failures|warnings?)|no (errors|issues|problems|warnings) found|errors?: 0\b|failed: 0\b)")


# Every alternative of _VERBATIM needs one of these (lower-case) or one of the line starts below:
# a line with neither cannot match. On ASCII, lower() is the regex's case folding; beyond it, the
# regex also takes four characters for ASCII letters (_FOLD, found by trying every code point),
# which are made those letters first.
_NEEDLES = ("err", "fatal", "fail", "panic", "exception", "traceback", "warn", "assert", "segmentation",
            "core dumped", "abort", "denied", "refused", "rejected", "conflict", "cannot", "can't", "unable",
            "not found", "no such", "vulnerab", "cve-", "unauthori", "forbidden", "time", "killed", "oom",
            "fehler", "fehlgeschlagen", "fallo", "falló", "échec", "expected", "received", "left:", "right:")
_FOLD = (("\u0130", "i"), ("\u0131", "i"), ("\u017f", "s"), ("\u212a", "k"))     # İ ı ſ K


def _folded(text: str) -> str:
    """text.lower() with _FOLD's characters made their ASCII letters first (newlines kept)."""
    if not text.isascii():
        for char, letter in _FOLD:
            if char in text:
                text = text.replace(char, letter)
    return text.lower()
# The line starts those alternatives need (`^E\s{2,}`, `^\s*E\s+\S`, `^FAIL`, `^\s*[-+]{3}\s`,
# `^\s*>\s+\d+\s*\|`, `^\s*-->\s`; the pattern ignores case, so `e` too), each followed by
# whitespace: a diff's `+`/`-` lines and a commit message's `    error handling` are not candidates.
_START_LINE = re.compile(r"(?i:FAIL)|\s*(?:[-+]{3}|-->|[Ee>])\s")


def _trie(words: list[str]) -> str:
    """An alternation of `words` grouped by common prefixes (the regex engine then tries one
    branch per character instead of every word): matches where one of the words starts."""
    if "" in words:
        return ""              # a word that is a prefix of the others already matches
    heads: dict[str, list[str]] = {}
    for w in words:
        heads.setdefault(w[0], []).append(w[1:])
    alts = [re.escape(h) + _trie(rest) for h, rest in sorted(heads.items())]
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


_NEEDLE_RE = re.compile(_trie(list(_NEEDLES)))   # one scan, not one per needle
# the same starts in lines joined by newlines (no line holds one): whitespace other than a newline
_START_RE = re.compile(r"\n(?:(?i:FAIL)|[^\S\n]*(?:[-+]{3}|-->|[Ee>])[^\S\n])")


def _may_match(line: str) -> bool:
    return _START_LINE.match(line) is not None or _NEEDLE_RE.search(_folded(line)) is not None


def is_verbatim(line: str) -> bool:
    if not line.strip():
        return False
    if not _may_match(line):     # most lines of a long log: a few substring tests, not the regex
        return False
    if _BENIGN.search(line) and not re.search(r"(?i)\b[1-9]\d* (errors?|failed|failures)\b", line):
        return False
    return bool(_VERBATIM.search(line))


def verbatim_flags(lines: list[str], masked: list[str] | None = None) -> list[bool]:
    """[is_verbatim(line) for line in lines] (lines without a newline): the needles and line
    starts are looked for once per distinct digit-masked line (no needle or start holds a digit,
    so a line and its mask hit alike; a log's lines mostly differ in their numbers), and only
    the lines they hit get the regex. `masked`: digits.masked(lines), when the caller has it."""
    masked = masked if masked is not None else digits.masked(lines)
    if masked is None:      # a line holds a newline
        return [is_verbatim(line) for line in lines]
    distinct = list(dict.fromkeys(masked))
    joined = "\n".join(distinct)
    hits: set[str] = set()
    # _folded keeps every newline (no case mapping makes or drops one): rows hold in it
    for text, pattern in ((_folded(joined), _NEEDLE_RE), ("\n" + joined, _START_RE)):
        row, at, pos = 0, 0, 0
        while (m := pattern.search(text, pos)) is not None:
            row += text.count("\n", at, m.start())
            at = m.start()
            hits.add(distinct[row])
            pos = text.find("\n", at + 1)      # one hit is enough for a line
            if pos < 0:
                break
    flags = [False] * len(lines)
    for i in compress(range(len(lines)), map(hits.__contains__, masked)):
        flags[i] = is_verbatim(lines[i])
    return flags


# Transforms over source, documents and data: an "error" there is a word in a function body
# or a field value, not a tool reporting failure. Each of these keeps its own guarantees
# (outline: every declaration; json: every anomalous row; prose: preserved spans), and a
# re-serialising transform (TOON) changes lines by design, so a line check cannot judge it.
# (focus: a file read's outline with the task's regions whole, observe/read_focus.py.)
EXEMPT_TRANSFORMS = frozenset({"outline", "focus", "markdown", "html", "prose", "json", "tabular", "yaml", "toml"})


def verbatim_lines(text: str) -> list[str]:
    seen: dict[str, None] = {}
    for line in text.split("\n"):
        if line not in seen and is_verbatim(line):
            seen[line] = None
    return list(seen)


def missing_verbatim(original: str, emitted: str) -> list[str]:
    """Verbatim-class lines of the original that do not appear (stripped) in the emission."""
    emitted_lines = {line.strip() for line in emitted.split("\n")}
    missing = []
    for line in verbatim_lines(original):
        stripped = line.strip()
        if stripped in emitted_lines:
            continue
        # A transform may shorten a line only by dropping ANSI codes or trailing space.
        if strip_ansi(stripped) in emitted_lines:
            continue
        # A run-collapse keeps the line but may annotate it with a count.
        if stripped in emitted or strip_ansi(stripped) in emitted:
            continue
        missing.append(line)
    return missing


_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[@-Z\\-_]")


def strip_ansi(s: str) -> str:
    return _ANSI.sub("", s).replace("\r", "").strip()


# Lines an engineer acts on even when they carry no error word: locations, lint codes,
# failing-test headers, assertion diffs. A line budget keeps them; the guard does not demand them.
_SALIENT = re.compile(
    r"""(?x)
    [\w./-]+\.\w{1,5}:\d+            # path.ext:LINE
    | File\ "[^"]+",\ line\ \d+       # Python frame
    | \bat\ .*\(.*:\d+:\d+\)          # JS frame
    | ^\s*[A-Z]{1,4}\d{2,4}\b         # lint code (E501, F401, SIM118)
    | [●✗✘×❯›]|\bnot\ ok\b|!==|===
    | ^\s*(\x1b\[[0-9;]*m)?[-+]\ 
    | ^\s*(\d+\ (passed|failed|errors?|warnings?)|Tests?:|Test\ Suites:|test\ result:|Found\ \d+|ok\s)
    """
)


def is_salient(line: str) -> bool:
    return is_verbatim(line) or bool(_SALIENT.search(line))
