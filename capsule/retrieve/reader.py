"""ctx_read: one file, one mode, one scope -> the text the agent gets.

Responsible for composing workspace safety, read modes, the outline transform, the read-stub
decision and the frecency bump. Not responsible for transports (capsule/mcp), for the ledger row (the engine, capsule/engine_read.py,
calls this) or the outline itself.
Invariant: a path outside the workspace or an unknown mode is an error with its fix in the message;
a stub only ever goes to the scope that received the content (capsule/store/stubs.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from capsule.retrieve import read_modes, workspace
from capsule.retrieve.read_modes import Mode, ModeError
from capsule.retrieve.workspace import WorkspaceError

MAX_READ_BYTES = 8 << 20


class ReadError(ValueError):
    """A read that cannot be served, with the reason and the fix."""


def signatures(text: str, path: str, languages: tuple[str, ...] = ()) -> str | None:
    """The tree-sitter outline of `text`, or None when no outline is available for this file."""
    try:
        from capsule.observe.content.outline import outline
    except ImportError:
        return None
    try:
        result = outline(text, path, languages=languages)
    except Exception:  # an outline failure must never fail the read: the caller falls back
        return None
    out = getattr(result, "text", None)
    if not out or not out.strip() or out == text:
        return None
    total = text.count("\n") + (0 if text.endswith("\n") else 1)
    if "lines:" not in out:
        out = out.rstrip("\n") + f"\n[outline of {total} lines; bodies: ctx_read mode=lines:N-M]"
    return out


def load_text(root: Path, real: Path, shown: str) -> str:
    """The file's text, read from one descriptor opened without following links (workspace.py)."""
    try:
        data = workspace.read_inside(root, real, shown, MAX_READ_BYTES)
    except WorkspaceError as exc:
        raise ReadError(str(exc)) from None
    except PermissionError:
        raise ReadError(f"{shown}: permission denied") from None
    if workspace.is_binary(data):
        raise ReadError(f"{shown} is a binary file; ctx_read serves text")
    return data.decode("utf-8", "surrogateescape")


def render(text: str, rel: str, mode: Mode | None, languages: tuple[str, ...] = ()) -> tuple[str, str]:
    """(mode key, text) for one read. `mode=None` picks by the size gate."""
    auto = mode is None
    if auto:
        mode = read_modes.default_mode(rel, text)
    if mode.name == "signatures":
        out = signatures(text, rel, languages)
        if out is not None:
            return mode.key(), out
        if not auto:
            raise ReadError(f"no outline for {rel} (unsupported language?); use mode=full or lines:N-M")
        mode = Mode("full")
    if mode.name == "full":
        return "full", text
    if mode.name == "anchored":
        return "anchored", read_modes.anchored(text)
    if mode.name == "lines":
        return mode.key(), read_modes.lines(text, mode.ranges)
    if mode.name == "section":
        return mode.key(), read_modes.section(text, mode.heading)
    raise ModeError(f"unknown mode {mode.name!r}; use one of: {read_modes.MODES_HELP}")


@dataclass(frozen=True)
class ReadResult:
    text: str           # what the agent gets
    path: str           # workspace-relative
    mode: str           # the mode key served (auto resolved)
    kind: str           # full | stub | delta (the stub decision; "full" without a scope)
    source: str         # the file's text (for the ledger's raw count; never stored)
    would_send: str     # what an active door sends (differs from text only when passive)


class Reader:
    """passive=True (measure/off modes): auto reads stay full and stubs are only counted, never sent."""

    def __init__(self, root: Path | str, stubs=None, frecency=None, languages: tuple[str, ...] = (),
                 passive: bool = False):
        self.root = Path(root).resolve()
        self.stubs = stubs
        self.frecency = frecency
        self.languages = tuple(languages)
        self.passive = passive

    def read(self, path: str, mode: str | None = None, scope: str = "", fresh: bool = False) -> str:
        return self.read_result(path, mode, scope, fresh).text

    def read_result(self, path: str, mode: str | None = None, scope: str = "", fresh: bool = False) -> ReadResult:
        rel, source = self.load(path)
        return self.result_for(rel, source, read_modes.parse(mode), scope, fresh)

    def load(self, path: str) -> tuple[str, str]:
        """(workspace-relative path, text) of one file inside the workspace."""
        try:
            real = workspace.resolve(self.root, path)
        except WorkspaceError as exc:
            raise ReadError(str(exc)) from None
        rel = workspace.relative(self.root, real)
        return rel, load_text(self.root, real, rel)

    def result_for(self, rel: str, source: str, parsed: Mode | None, scope: str = "", fresh: bool = False) -> ReadResult:
        """The read of `source` (the text of rel) in one parsed mode, after the stub decision."""
        active_key, active_out = render(source, rel, parsed, self.languages)
        key, out = ("full", source) if self.passive and parsed is None else (active_key, active_out)
        if self.frecency is not None:
            self.frecency.touch(rel)
        if self.stubs is None or not scope:
            return ReadResult(out, rel, key, "full", source, active_out)
        decision = self.stubs.decide(scope, rel, key, out, fresh=fresh)
        if self.passive:
            return ReadResult(out, rel, key, "full", source, decision.text)
        return ReadResult(decision.text, rel, key, decision.kind, source, decision.text)
