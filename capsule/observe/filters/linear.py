"""Linear-time regexes (RE2) for filter files that come from a project or a role.

Responsible for compiling a pattern with RE2 and for giving it the small slice of the `re.Pattern`
interface the filter stages use (search, sub, match groups). Not responsible for which files get
it (spec.py / engine.py decide: every file that is not built in).
Invariant: matching costs time linear in the text, whatever the pattern (`^(a+)+$` included); a
pattern RE2 cannot run that way (lookaround, backreferences) is refused when it is compiled,
with the reason. Text is matched as UTF-8 bytes, surrogate-escaped bytes included, so it is exact.
"""

from __future__ import annotations

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False      # RE2 would otherwise print its parse errors on our stderr


class LinearRegexError(ValueError):
    """A pattern RE2 cannot run in linear time; the message says why."""


def _b(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _s(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", "surrogateescape")


class LinearMatch:
    __slots__ = ("_m",)

    def __init__(self, m):
        self._m = m

    def group(self, *idx):
        if len(idx) > 1:
            return tuple(_s(g) for g in self._m.group(*idx))
        return _s(self._m.group(*idx))

    def groups(self, default=None):
        return tuple(default if g is None else _s(g) for g in self._m.groups())


class LinearPattern:
    """An RE2 pattern compiled in multi-line mode, like the filter DSL's `re.MULTILINE`."""

    __slots__ = ("pattern", "_re")

    def __init__(self, pattern: str):
        self.pattern = pattern
        try:
            self._re = re2.compile(b"(?m)" + _b(pattern), _OPTIONS)
        except re2.error as exc:
            reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else exc
            raise LinearRegexError(
                f"{reason}; project and role filters use linear-time regexes (RE2 syntax: no lookaround "
                f"or backreferences), so hostile output cannot stall the engine") from None

    def search(self, text: str) -> LinearMatch | None:
        m = self._re.search(_b(text))
        return None if m is None else LinearMatch(m)

    def sub(self, repl: str, text: str) -> str:
        return _s(self._re.sub(_b(repl), _b(text)))

    def __repr__(self) -> str:
        return f"LinearPattern({self.pattern!r})"
