"""Filter files: parse and validate the TOML filter DSL into FilterSpec objects.

Not responsible for running filters (stages.py) nor for trust (capsule/policy/trust.py).
Invariant: a bad filter file fails loudly with the file and the key named; regexes are
compiled once here, so a filter that loaded can always run; a file parsed with linear=True (every
project or role file) gets linear-time RE2 regexes only (linear.py), so no input can stall it.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field

from capsule.ground import tomlcache

ALLOWED_KEYS = {
    "description", "match", "strip_ansi", "replace", "strip_lines", "keep_lines", "protect",
    "dedupe_lines", "collapse_repeats", "collapse_blocks", "fold_templates", "head", "tail", "max_lines", "on_empty",
    "summary", "delegate", "streaming", "tests", "family", "options",
}
SUMMARY_KEYS = {"when", "unless", "text", "exit_codes"}
TEST_KEYS = {"name", "input", "expected", "exit_code", "command"}


class FilterError(ValueError):
    """A filter file that cannot be used; the message names the file, filter and key."""


@dataclass(frozen=True)
class Summary:
    when: re.Pattern
    unless: re.Pattern | None
    text: str
    exit_codes: tuple[int, ...] = (0,)


@dataclass(frozen=True)
class FilterTest:
    name: str
    input: str
    expected: str
    exit_code: int | None = 0
    command: str | None = None


@dataclass(frozen=True)
class FilterSpec:
    name: str
    source: str                                  # file it came from
    description: str = ""
    family: str = ""
    match: tuple[re.Pattern, ...] = ()
    strip_ansi: bool = True
    replace: tuple[tuple[re.Pattern, str], ...] = ()
    strip_lines: tuple[re.Pattern, ...] = ()
    keep_lines: tuple[re.Pattern, ...] = ()
    protect: tuple[re.Pattern, ...] = ()
    dedupe_lines: tuple[re.Pattern, ...] = ()
    collapse_repeats: bool = False
    collapse_blocks: int = 0
    fold_templates: bool = False
    head: int = 0
    tail: int = 0
    max_lines: int = 0
    on_empty: str | None = None
    summary: Summary | None = None
    delegate: tuple[tuple[re.Pattern, str], ...] = ()
    streaming: str | None = None
    options: tuple[tuple[str, int | float | str | bool], ...] = ()   # a streaming class's settings
    tests: tuple[FilterTest, ...] = field(default_factory=tuple)


def _regex(value, where: str, linear: bool = False) -> re.Pattern:
    if not isinstance(value, str):
        raise FilterError(f"{where}: expected a regex string, got {type(value).__name__}")
    if linear:
        from capsule.observe.filters.linear import LinearPattern, LinearRegexError  # noqa: PLC0415 - bench_startup "ctx run cold, no engine"

        try:
            return LinearPattern(value)  # type: ignore[return-value]  # the slice of re.Pattern stages use
        except LinearRegexError as exc:
            raise FilterError(f"{where}: regex {value!r} refused: {exc}") from None
    try:
        return re.compile(value, re.MULTILINE)
    except re.error as exc:
        raise FilterError(f"{where}: bad regex {value!r}: {exc}") from None


def _regexes(value, where: str, linear: bool = False) -> tuple[re.Pattern, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise FilterError(f"{where}: expected a list of regex strings")
    return tuple(_regex(v, f"{where}[{i}]", linear) for i, v in enumerate(value))


def _int(table: dict, key: str, where: str) -> int:
    value = table.get(key, 0)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise FilterError(f"{where}.{key}: expected a non-negative integer")
    return value


def parse_filter(name: str, table: dict, source: str, linear: bool = False) -> FilterSpec:
    where = f"{source}: filter {name!r}"
    if not isinstance(table, dict):
        raise FilterError(f"{where}: expected a table")
    unknown = sorted(set(table) - ALLOWED_KEYS)
    if unknown:
        raise FilterError(f"{where}: unknown key {unknown[0]!r}; allowed: {', '.join(sorted(ALLOWED_KEYS))}")
    summary = None
    if "summary" in table:
        s = table["summary"]
        if not isinstance(s, dict) or "when" not in s or "text" not in s:
            raise FilterError(f"{where}.summary: needs 'when' and 'text'")
        bad = sorted(set(s) - SUMMARY_KEYS)
        if bad:
            raise FilterError(f"{where}.summary: unknown key {bad[0]!r}; allowed: {', '.join(sorted(SUMMARY_KEYS))}")
        if "unless" not in s:
            raise FilterError(f"{where}.summary: a short-circuit summary needs an 'unless' regex")
        summary = Summary(
            when=_regex(s["when"], f"{where}.summary.when", linear),
            unless=_regex(s["unless"], f"{where}.summary.unless", linear),
            text=str(s["text"]),
            exit_codes=tuple(int(c) for c in s.get("exit_codes", [0])),
        )
    replace = []
    for i, item in enumerate(table.get("replace", [])):
        if not isinstance(item, dict) or "pattern" not in item:
            raise FilterError(f"{where}.replace[{i}]: needs 'pattern' and 'with'")
        replace.append((_regex(item["pattern"], f"{where}.replace[{i}]", linear), str(item.get("with", ""))))
    delegate = []
    for i, item in enumerate(table.get("delegate", [])):
        if not isinstance(item, dict) or "when" not in item or "filter" not in item:
            raise FilterError(f"{where}.delegate[{i}]: needs 'when' and 'filter'")
        delegate.append((_regex(item["when"], f"{where}.delegate[{i}]", linear), str(item["filter"])))
    tests = []
    for i, t in enumerate(table.get("tests", [])):
        if not isinstance(t, dict) or "input" not in t or "expected" not in t:
            raise FilterError(f"{where}.tests[{i}]: needs 'input' and 'expected'")
        bad = sorted(set(t) - TEST_KEYS)
        if bad:
            raise FilterError(f"{where}.tests[{i}]: unknown key {bad[0]!r}")
        tests.append(FilterTest(
            name=str(t.get("name", f"test {i}")), input=t["input"], expected=t["expected"],
            exit_code=t.get("exit_code", 0), command=t.get("command"),
        ))
    on_empty = table.get("on_empty")
    options = table.get("options", {})
    if not isinstance(options, dict) or not all(isinstance(v, (int, float, str, bool)) for v in options.values()):
        raise FilterError(f"{where}.options: expected a table of numbers, strings or booleans")
    if options and not table.get("streaming"):
        raise FilterError(f"{where}.options: only a streaming filter reads options")
    return FilterSpec(
        name=name,
        source=source,
        description=str(table.get("description", "")),
        family=str(table.get("family", "")),
        match=_regexes(table.get("match", []), f"{where}.match", linear),
        strip_ansi=bool(table.get("strip_ansi", True)),
        replace=tuple(replace),
        strip_lines=_regexes(table.get("strip_lines", []), f"{where}.strip_lines", linear),
        keep_lines=_regexes(table.get("keep_lines", []), f"{where}.keep_lines", linear),
        protect=_regexes(table.get("protect", []), f"{where}.protect", linear),
        dedupe_lines=_regexes(table.get("dedupe_lines", []), f"{where}.dedupe_lines", linear),
        collapse_repeats=bool(table.get("collapse_repeats", False)),
        collapse_blocks=_int(table, "collapse_blocks", where),
        fold_templates=bool(table.get("fold_templates", False)),
        head=_int(table, "head", where),
        tail=_int(table, "tail", where),
        max_lines=_int(table, "max_lines", where),
        on_empty=None if on_empty is None else str(on_empty),
        summary=summary,
        delegate=tuple(delegate),
        streaming=table.get("streaming"),
        options=tuple(sorted(options.items())),
        tests=tuple(tests),
    )


def parse_file(data: bytes, source: str, linear: bool = False) -> dict[str, FilterSpec]:
    """Parse the bytes of one filter file: `[filters.NAME]` tables. linear=True: RE2 regexes only."""
    try:
        doc = tomlcache.loads(data)
    except Exception as exc:
        if not isinstance(exc, (UnicodeDecodeError, tomllib.TOMLDecodeError)):
            raise
        raise FilterError(f"{source}: not a valid TOML filter file: {exc}") from None
    unknown = sorted(set(doc) - {"schema", "filters"})
    if unknown:
        raise FilterError(f"{source}: unknown top-level key {unknown[0]!r}; allowed: schema, filters")
    filters = doc.get("filters", {})
    if not isinstance(filters, dict):
        raise FilterError(f"{source}: [filters] must be a table of filters")
    return {name: parse_filter(name, table, source, linear) for name, table in filters.items()}
