"""Secrets out of what capsule persists: archive originals, ledger commands, the proxy memo, journals.

Not responsible for what the agent sees (it saw the secret already; its view never changes) nor for
deciding what is stored. The patterns are detect-secrets' regex plugins (a maintained set) plus
capsule's own in data/secrets.toml; each found secret becomes `[capsule redacted: KIND]`.
Invariant: deterministic (same text, same output); bytes that are not a secret pass exactly;
JACKIN_CTX_NO_REDACT turns it off; a detector that cannot load redacts with capsule's own patterns.
"""

from __future__ import annotations

import bisect
import json
import re
import threading
from pathlib import Path
import binascii

from capsule.ground import switches, tomlcache

MARKER = "[capsule redacted: {kind}]"
MARKER_RE = re.compile(r"\[capsule redacted: [a-z0-9-]+\]")
DATA = Path(__file__).parent / "data" / "secrets.toml"

_lock = threading.Lock()
_patterns = None    # (whole-text patterns, keyword-line patterns, the keyword pattern), loaded on first use


def enabled(env=None) -> bool:
    return not switches.is_on(switches.NO_REDACT, env)


def redact_text(text: str) -> tuple[str, int]:
    """`text` with every secret replaced by its marker, and how many were replaced."""
    spans = find(text)
    if not spans:
        return text, 0
    out, at = [], 0
    for start, end, kind in spans:
        out.append(text[at:start])
        out.append(MARKER.format(kind=kind))
        at = end
    out.append(text[at:])
    return "".join(out), len(spans)


def redact_bytes(data: bytes) -> tuple[bytes, int]:
    """As redact_text; bytes that are not UTF-8 pass through exactly (surrogateescape)."""
    text = data.decode("utf-8", "surrogateescape")
    new, n = redact_text(text)
    return (new.encode("utf-8", "surrogateescape"), n) if n else (data, 0)


def redacted(text: str | None) -> str | None:
    """A value about to be stored: redacted when the switch allows, else as it is."""
    if text is None or not enabled():
        return text
    return redact_text(text)[0]


def redacted_value(value):
    """A JSON-like value about to be stored (a ledger manifest, a synced row) with every string in it
    redacted, keys and structure kept; as it is when the switch says so."""
    if not enabled():
        return value
    return _value(value)


def _value(value):
    if isinstance(value, str):
        return redact_text(value)[0] if value else value
    if isinstance(value, dict):
        return {k: _value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_value(v) for v in value)
    return value


# What every pattern needs (store/data/secrets.toml and detect-secrets'): a credential word of the
# [lines] table (keyword patterns run only on lines holding one; a private key's header says KEY), or
# a token of 16+ characters with a letter and something other than lower-case letters (every token
# format: a prefix such as ghp_ or sk-, upper case or digits; `internationalization` is none).
# Colour escapes can cut a token into short runs: a text with one always may.
_TOKEN_RUN = r"[A-Za-z0-9_+/=.-]{16,}"
_cheap = None       # (token-run regex, credential-word regex): RE2 where it loads (~20x re's speed here)


def may_hold_secret(text: str) -> bool:
    """Could `text` hold a secret? A cheap test (no pattern is loaded) that is never False for one."""
    global _cheap
    if "\x1b" in text:
        return True
    if _cheap is None:
        words = tomlcache.loads(DATA.read_bytes())["lines"]["words"]
        _cheap = [None, (re.compile(_TOKEN_RUN), re.compile(words))]
    if _cheap[0] is None and len(text) > 4096:      # RE2 only where its import and compiles pay off
        _cheap[0] = (_re2(_TOKEN_RUN, 0), _re2(_cheap[1][1].pattern, 0))
    (runs, words), subject = _cheap[0] or (None, None), None
    if runs is not None and words is not None and len(text) > 4096:
        try:
            subject = text.encode("utf-8")
        except UnicodeEncodeError:      # lone surrogates (non-UTF-8 bytes): RE2 reads UTF-8 only
            pass
    if subject is None:
        (runs, words), subject = _cheap[1], text
    for m in runs.finditer(subject):
        run = m.group()
        run = run.decode("ascii") if isinstance(run, bytes) else run
        if any(c.isalpha() for c in run) and (not run.islower() or "_" in run or "-" in run):
            return True
    return words.search(subject) is not None


def count_markers(data: bytes) -> int:
    return len(MARKER_RE.findall(data.decode("utf-8", "replace")))


def find(text: str) -> list[tuple[int, int, str]]:
    """The secrets in `text` as (start, end, kind), sorted, not overlapping (the earliest, then longest, wins):
    the patterns' own, those a terminal's colour escapes cut in two (`grep --color`), those inside a
    base64 run, and the rest of a token a terminal wrapped onto the next line."""
    found = _find_plain(text)
    if "\x1b" in text:
        found += _through_escapes(text)
    found += _in_base64(text)
    return _wrapped(text, _merge(found))


def _find_plain(text: str) -> list[tuple[int, int, str]]:
    whole, by_line, words = patterns()
    found: list[tuple[int, int, str]] = []
    try:
        text.encode("utf-8")
        engine = 0          # RE2 where the pattern compiles in it (linear time, ~100x faster here)
    except UnicodeEncodeError:
        engine = 1          # lone surrogates (non-UTF-8 bytes): RE2 takes UTF-8 only
    # ASCII text (the common case) is encoded once and RE2 reads the bytes: its wrapper would encode
    # the whole str again for every pattern (~190 of them), the cost of a large output. For ASCII,
    # byte offsets are the str's offsets.
    data = text.encode("ascii") if engine == 0 and text.isascii() else None
    for p in whole:
        _matches(found, p, engine, text, data)
    if by_line:
        # The lines holding a credential word, joined: one call per pattern, offsets mapped back.
        spans = list(_keyword_lines(words, text, engine, data))
        if spans:
            joined, starts, at = [], [], 0
            for a, b in spans:
                starts.append(at)
                joined.append(text[a:b])
                at += b - a + 1
            lines = "\n".join(joined)
            local: list[tuple[int, int, str]] = []
            encoded = lines.encode("ascii") if data is not None else None
            for p in by_line:
                _matches(local, p, engine, lines, encoded)
            for a, b, kind in local:
                i = bisect.bisect_right(starts, a) - 1
                shift = spans[i][0] - starts[i]
                found.append((a + shift, min(b, starts[i] + spans[i][1] - spans[i][0]) + shift, kind))
    return _merge(found)


def _merge(found: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    found.sort(key=lambda s: (s[0], -s[1]))
    merged: list[tuple[int, int, str]] = []
    for s in found:
        if merged and s[0] < merged[-1][1]:
            if s[1] > merged[-1][1]:
                merged[-1] = (merged[-1][0], s[1], merged[-1][2])
            continue
        merged.append(s)
    return merged


# CSI and two-character escapes (what `grep --color`, `ls --color` and the like write)
_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]")
# the rest of a wrapped token: one line of token characters only, letters and digits both
_CONTINUATION = re.compile(r"[A-Za-z0-9_+/=.-]{8,}")
_WRAP_LINES = 8                 # a token wrapped over more lines than this is not one we can tell apart
_B64_SOURCE = r"[A-Za-z0-9+/]{16,}={0,2}"
PEM_WIDTH = 64                  # characters of a PEM body line
_B64_MAX = 4096                 # a base64'd credential is short; longer runs are data (images, bundles)
_b64 = _b64_re = None


def _through_escapes(text: str) -> list[tuple[int, int, str]]:
    """Secrets in `text` read without its escape sequences, as spans of `text` (escapes inside included)."""
    kept_at, orig_at, pieces = [], [], []
    at = n = 0
    for m in _ESCAPE.finditer(text):
        if m.start() > at:
            kept_at.append(n)
            orig_at.append(at)
            pieces.append(text[at:m.start()])
            n += m.start() - at
        at = m.end()
    if at < len(text):
        kept_at.append(n)
        orig_at.append(at)
        pieces.append(text[at:])
    if not pieces:
        return []

    def back(i: int) -> int:
        k = bisect.bisect_right(kept_at, i) - 1
        return orig_at[k] + i - kept_at[k]

    return [(back(a), back(b - 1) + 1, kind) for a, b, kind in _find_plain("".join(pieces))]


def _in_base64(text: str) -> list[tuple[int, int, str]]:
    """Base64 runs whose decoded text holds a secret (a base64'd key, `echo $TOKEN | base64`), whole;
    and a PEM body line on its own (64 base64 characters, mixed case and digits: a hex digest is not)."""
    global _b64, _b64_re
    if _b64 is None:
        _b64_re = re.compile(_B64_SOURCE)
        _b64 = _re2(_B64_SOURCE, 0) or _b64_re
    runs: list[tuple[int, int]] = []
    decoded: list[str] = []
    pem: list[tuple[int, int, str]] = []
    # RE2 on the ASCII bytes (the common case); re where the text is not ASCII
    regex, subject = (_b64, text.encode("ascii")) if text.isascii() and _b64 is not _b64_re else (_b64_re, text)
    for m in regex.finditer(subject):
        a, b = m.span()
        if b - a > _B64_MAX or (b - a) % 4:
            continue
        run = text[a:b]
        if run.islower() or run.isupper() or run.isdigit():
            continue            # not padded base64, or one case only (a hex digest, a word)
        if b - a == PEM_WIDTH and (a == 0 or text[a - 1] == "\n") and text.startswith(("\n", "\r\n"), b) | (b == len(text)) \
                and any(c.isdigit() for c in run):
            pem.append((a, b, "private-key"))
            continue
        try:
            plain = binascii.a2b_base64(run, strict_mode=True).decode("ascii")
        except (binascii.Error, ValueError):
            continue
        if sum(c.isprintable() or c in "\n\t" for c in plain) < 0.95 * len(plain):
            continue
        runs.append((a, b))
        decoded.append(plain.replace("\n", " "))
    if not runs:
        return pem
    starts, at = [], 0
    for d in decoded:
        starts.append(at)
        at += len(d) + 1
    hits = {bisect.bisect_right(starts, a) - 1: kind for a, _, kind in _find_plain("\n".join(decoded))}
    return pem + [(*runs[i], f"base64-{kind}") for i, kind in sorted(hits.items())]


def _wrapped(text: str, spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """`spans` plus the continuation of each secret that ends a line a terminal wrapped (each line's own span)."""
    out = []
    for a, b, kind in spans:
        out.append((a, b, kind))
        for _ in range(_WRAP_LINES):
            j = b + 2 if text.startswith("\r\n", b) else b + 1 if text.startswith("\n", b) else -1
            if j < 0:
                break
            k = text.find("\n", j)
            line = text[j:len(text) if k < 0 else k].rstrip("\r")
            if not (_CONTINUATION.fullmatch(line) and any(c.isdigit() for c in line)
                    and any(c.isalpha() for c in line)):
                break
            a, b = j, j + len(line)
            out.append((a, b, kind))
    return _merge(out)


class _Pattern:
    __slots__ = ("kind", "source", "flags", "keyword", "_re2", "_re", "_sieve")

    def __init__(self, kind: str, source: str, flags: int, keyword: bool = False):
        """keyword: a `name = value` pattern whose groups are the value; a token format's groups
        (gitlab's `(glpat|gldt)-...`) are a part of the token, so its whole match is the secret."""
        self.kind, self.source, self.flags, self.keyword = kind, source, flags, keyword
        self._re = None
        self._re2 = _re2(source, flags)
        # A pattern RE2 cannot take (lookarounds) is scanned by re, ~30x slower on a large output;
        # the same pattern without its lookarounds matches wherever it does (an assertion removed only
        # widens it), so where that RE2 sieve finds nothing, re has nothing to find either.
        self._sieve = _re2(without_lookarounds(source), flags) if self._re2 is None else None
        # re compiles (~0.3 ms a pattern, on every cold run that archives) only when a sieve first
        # matches or the text is not UTF-8; without a sieve, now, so that a bad pattern raises
        # re.error here (tests/store/test_secret_patterns.py compiles every pattern in re).
        if self._re2 is None and self._sieve is None:
            self.python()

    def shape(self, regex) -> tuple[int | None, int]:
        """(the `secret` group's number or None, how many groups hold a keyword's value) in regex,
        one of this pattern's engines (RE2 and re number the groups of a pattern alike)."""
        return regex.groupindex.get("secret"), (regex.groups if self.keyword else 0)

    def python(self) -> re.Pattern:
        if self._re is None:
            self._re = re.compile(self.source, self.flags)
        return self._re

    def engine(self, n: int):
        return self._re2 if n == 0 and self._re2 is not None else self.python()


def without_lookarounds(source: str) -> str:
    """`source` with each (?=...), (?!...), (?<=...), (?<!...) removed (escapes and [classes] respected)."""
    out, i, n = [], 0, len(source)
    while i < n:
        if source.startswith(("(?=", "(?!", "(?<=", "(?<!"), i):
            depth, i = 0, i
            while i < n:
                c = source[i]
                if c == "\\":
                    i += 2
                    continue
                if c == "[":
                    i = _class_end(source, i)
                    continue
                depth += c == "("
                depth -= c == ")"
                i += 1
                if depth == 0:
                    break
            continue
        c = source[i]
        if c == "\\":
            out.append(source[i:i + 2])
            i += 2
        elif c == "[":
            end = _class_end(source, i)
            out.append(source[i:end])
            i = end
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _class_end(source: str, i: int) -> int:
    """The index after the [character class] opening at i."""
    j = i + 1
    if j < len(source) and source[j] == "^":
        j += 1
    if j < len(source) and source[j] == "]":
        j += 1
    while j < len(source) and source[j] != "]":
        j += 2 if source[j] == "\\" else 1
    return j + 1


def _re2(source: str, flags: int):
    """The pattern in RE2 (same meaning), or None: lookarounds, VERBOSE and the like stay in re."""
    if flags & re.VERBOSE and (any(c.isspace() for c in source) or "#" in source):
        return None
    inline = "".join(c for f, c in ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s")) if flags & f)
    try:
        import re2  # noqa: PLC0415 - bench_startup "capsule ctx doctor"

        quiet = re2.Options()
        quiet.log_errors = False        # a pattern RE2 cannot take is expected here, not news for stderr
        return re2.compile(f"(?{inline}){source}" if inline else source, quiet)
    except Exception:  # noqa: BLE001 - re2.error and its C++ message: not RE2 syntax
        return None


def _matches(found: list, p: _Pattern, engine: int, text: str, data: bytes | None) -> None:
    """Append p's secrets in `text` as (start, end, kind); `data` is text as ASCII bytes, or None."""
    if p._re2 is None and p._sieve is not None and engine == 0 and \
            p._sieve.search(data if data is not None else text) is None:
        return                  # (before p.engine(): that compiles the pattern in re)
    regex = p.engine(engine)
    subject = data if data is not None and regex is p._re2 else text
    shape = None
    for m in regex.finditer(subject):
        if shape is None:
            shape = p.shape(regex)
        secret, groups = shape
        if secret is not None and m.group(secret) is not None:
            a, b = m.span(secret)
        elif groups and any(m.groups()):
            spans = [m.span(i) for i in range(1, groups + 1) if m.group(i)]
            a, b = spans[0][0], spans[-1][1]
        else:
            a, b = m.span()
        if b > a:
            found.append((a, b, p.kind))


def _keyword_lines(words: _Pattern, text: str, engine: int, data: bytes | None):
    """(start, end) of each line holding a credential word, in order, each once."""
    end = -1
    regex = words.engine(engine)
    for m in regex.finditer(data if data is not None and regex is words._re2 else text):
        if m.start() <= end:
            continue
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        end = len(text) if end < 0 else end
        yield start, end


def patterns() -> tuple[list, list, _Pattern]:
    global _patterns
    if _patterns is None:
        with _lock:
            if _patterns is None:
                _patterns = _load()
    return _patterns


def _load() -> tuple[list, list, _Pattern]:
    doc = tomlcache.loads(DATA.read_bytes())     # tomllib (and typing) stay off a cold run
    rows = [(p["kind"], p["regex"], 0) for p in doc.get("pattern", [])]
    rows += _detect_secrets(set(doc.get("detect_secrets", {}).get("skip", [])))
    line_kinds = set(doc["lines"]["kinds"])
    whole, by_line = [], []
    for kind, source, flags in rows:
        try:
            p = _Pattern(kind, source, flags, keyword=kind in line_kinds)
        except re.error:
            continue
        (by_line if kind in line_kinds else whole).append(p)
    return whole, by_line, _Pattern("words", doc["lines"]["words"], 0)


PATTERNS_FROM_LIBRARY = Path(__file__).parent / "data" / "detect_secrets_patterns.json"


def _detect_secrets(skip: set[str]) -> list[tuple[str, str, int]]:
    """detect-secrets' regex plugins as (kind, pattern, flags), read from the data file made from the
    library. Importing the library on the agent's path would cost ~110 ms and open a socket
    (requests -> urllib3 probes IPv6); tests/store/test_secret_patterns.py fails when the installed
    detect-secrets yields other patterns than the file, and says how to regenerate it."""
    try:
        rows = json.loads(PATTERNS_FROM_LIBRARY.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []                       # capsule's own patterns still apply
    return [(kind, source, flags) for cls, kind, source, flags in rows if cls not in skip]


def patterns_from_library() -> list[list]:
    """[class, kind, pattern, flags] for every regex plugin of the installed detect-secrets (dev tool:
    writes nothing; `python -m capsule.store.redact > capsule/store/data/detect_secrets_patterns.json`)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class  # noqa: PLC0415 - bench_startup "capsule ctx gain"
    from detect_secrets.plugins.base import RegexBasedDetector  # noqa: PLC0415 - bench_startup "capsule ctx gain"

    rows = []
    for secret_type, cls in sorted(get_mapping_from_secret_type_to_class().items()):
        if not issubclass(cls, RegexBasedDetector):
            continue
        kind = re.sub(r"[^a-z0-9]+", "-", secret_type.lower()).strip("-")
        rows += [[cls.__name__, kind, rx.pattern, rx.flags & ~re.UNICODE]
                 for rx in cls.denylist if isinstance(rx.pattern, str)]
    return rows


if __name__ == "__main__":
    print(json.dumps(patterns_from_library(), indent=0))
