"""The command classification table (rules.toml) and the reading of one command against it.

Responsible for loading the rules once and matching a lexed, prefix-peeled stage against
them. Not responsible for lexing (observe/lexer.py) nor for running filters.
Invariant: the rules are data; the first matching rule wins; an unmatched command is None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from capsule.ground import tomlcache

_GIT_GLOBAL_WITH_VALUE = {"-C", "-c", "--git-dir", "--work-tree", "--namespace"}
_GIT_GLOBAL_FLAGS = {"--no-pager", "--paginate", "-p", "--no-replace-objects", "--bare", "--literal-pathspecs"}


# A rule's regex is compiled when a command first reaches it: a cold `ctx run` reads one command
# and stops at the first match, so compiling all ~110 up front was most of its classify time.
_compile = lru_cache(maxsize=None)(re.compile)


@dataclass(frozen=True)
class Rule:
    source: str                   # the regex, as written in rules.toml
    filter: str
    family: str
    unless_source: str | None = None
    transform: str = "filter"     # a [[read]] rule names its transform instead of a filter

    @property
    def pattern(self) -> re.Pattern:
        return _compile(self.source)

    @property
    def unless(self) -> re.Pattern | None:
        return _compile(self.unless_source) if self.unless_source else None


@dataclass(frozen=True)
class RuleTable:
    rules: tuple[Rule, ...]
    reads: tuple[Rule, ...]
    content_tools: frozenset[str]
    ignore_tools: frozenset[str]
    json_flags: re.Pattern


_table: RuleTable | None = None


def load(data: bytes | None = None) -> RuleTable:
    """Parse rules.toml (or the given bytes); the packaged table is cached."""
    global _table
    if data is None and _table is not None:
        return _table
    # by path, not importlib.resources: that (and the zipfile module it loads) is ~6 ms of a cold `ctx run`
    raw = data if data is not None else Path(__file__).with_name("rules.toml").read_bytes()
    doc = tomlcache.loads(raw)
    rules = []
    for i, r in enumerate(doc.get("rule", [])):
        missing = {"pattern", "filter", "family"} - set(r)
        if missing:
            raise ValueError(f"rules.toml rule {i + 1}: missing {', '.join(sorted(missing))}")
        unknown = set(r) - {"pattern", "filter", "family", "unless"}
        if unknown:
            raise ValueError(f"rules.toml rule {i + 1}: unknown key {sorted(unknown)[0]!r}; "
                             "allowed: pattern, unless, filter, family")
        rules.append(Rule(r["pattern"], r["filter"], r["family"], r.get("unless") or None))
    reads = []
    for i, r in enumerate(doc.get("read", [])):
        missing = {"pattern", "transform", "family"} - set(r)
        unknown = set(r) - {"pattern", "transform", "family", "unless"}
        if missing or unknown:
            raise ValueError(f"rules.toml read rule {i + 1}: needs pattern, transform, family "
                             f"(optional unless); got {', '.join(sorted(r))}")
        reads.append(Rule(r["pattern"], "", r["family"], r.get("unless") or None, r["transform"]))
    table = RuleTable(tuple(rules), tuple(reads), frozenset(doc.get("content_tools", [])),
                      frozenset(doc.get("ignore_tools", [])), _compile(doc.get("json_flags", "(?!)")))
    if data is None:
        _table = table
    return table


def normalise(words: list[str]) -> list[str]:
    """Tool basename; `python -m X` read as X; git's global options dropped."""
    if not words:
        return words
    if not words[0].startswith(("./", "../")):
        words = [words[0].rsplit("/", 1)[-1], *words[1:]]
    tool = words[0]
    if re.fullmatch(r"python[0-9.]*|pypy[0-9.]*", tool) and len(words) > 2 and words[1] == "-m":
        return normalise(words[2:])
    if tool == "git":
        rest = words[1:]
        i = 0
        while i < len(rest) and rest[i].startswith("-"):
            opt = rest[i]
            i += 2 if opt in _GIT_GLOBAL_WITH_VALUE else 1
        return ["git", *rest[i:]]
    if tool in ("npx", "bunx") and len(words) > 1:
        return normalise(words[1:])
    return words


def match(words: list[str], table: RuleTable | None = None) -> Rule | str | None:
    """The first rule claiming these words; "content"/"ignore" for those lists; else None."""
    table = table or load()
    words = normalise(words)
    if not words:
        return "ignore"
    tool = words[0]
    if tool in table.ignore_tools:
        return "ignore"
    line = " ".join(words)
    for rule in table.reads:     # before content tools: `cat`, `head` and `sed` are reads here
        if rule.pattern.search(line) and not (rule.unless and rule.unless.search(line)):
            return rule
    if tool in table.content_tools:
        return "content"
    if table.json_flags.search(line) and not line.startswith("go test"):
        return "content"
    for rule in table.rules:
        if rule.pattern.search(line) and not (rule.unless and rule.unless.search(line)):
            return rule
    return None
