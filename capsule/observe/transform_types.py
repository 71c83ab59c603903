"""The shapes every pipeline stage and transform speaks: the transform contract.

Not responsible for any behaviour; only data.
Invariant: a Transform is a pure function (text, Context) -> TransformResult; it never
does I/O and never sees bytes (the pipeline decodes with surrogateescape, so re-encoding
any kept line gives its original bytes back).
"""

from __future__ import annotations

from dataclasses import dataclass, field, asdict
from collections.abc import Callable

MAX_INTENT_TOKENS = 128  # seed 001: the step's goal handed to intent-aware transforms


@dataclass(frozen=True)
class Context:
    """What a transform may know about the observation it shrinks."""

    command: str | None = None       # the command line as typed, if any
    family: str = "unknown"          # classifier family (git, pytest, json, ...)
    stream: str = "stdout"           # stdout | stderr | content
    intent: str | None = None        # the step's goal, <= 128 tokens
    exit_code: int | None = None     # None while unknown (pipe, read)
    mode: str = "standard"           # off | measure | standard | aggressive
    path: str | None = None          # source path for file reads
    languages: tuple[str, ...] = ()  # grammars the role allows ("" = all)
    filter_id: str | None = None     # TOML/streaming filter chosen by the classifier
    cues: Callable | None = None     # () -> observe.cues.Cues: the session's cues, read only by a cut that ranks


@dataclass(frozen=True)
class Removal:
    """One thing a transform removed, with the reason the manifest will show."""

    reason: str                 # "repeated line", "beyond line budget 80", "passing test" ...
    count: int = 1              # original lines this removal stands for
    start: int | None = None    # first original line number (1-based), when known
    end: int | None = None      # last original line number (inclusive), when known
    preview: str = ""           # a short excerpt of what went (<= 120 chars)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class TransformResult:
    text: str
    transform_id: str
    removals: list[Removal] = field(default_factory=list)
    lossless: bool = False      # True: nothing of the content was lost (ANSI strip, minify)
    notes: list[str] = field(default_factory=list)

    @property
    def removed_lines(self) -> int:
        return sum(r.count for r in self.removals)


@dataclass
class StageReport:
    """Seed 003's stage report: one per pipeline stage."""

    name: str
    tokens_before: int
    tokens_after: int
    detail: str = ""
    removals: list[Removal] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "detail": self.detail,
            "removals": [r.as_dict() for r in self.removals],
        }


TransformFn = Callable[[str, Context], TransformResult]     # what registry.get returns


@dataclass(frozen=True)
class Classification:
    """CLASSIFY's verdict (observe/classify.py): the family and the one transform for it."""
    family: str
    transform_id: str = "default"
    filter_id: str | None = None
    passthrough: bool = False   # True: the command must not be rewritten (unattestable)
    reason: str = ""
