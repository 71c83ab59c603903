"""ctx_read: one file, one mode, one scope -> the text the agent gets.

Responsible for composing workspace safety, read modes, the outline transform, the read-stub
decision and the frecency bump. Not responsible for transports (capsule/mcp) or the outline itself.
Invariant: a path outside the workspace or an unknown mode is an error with its fix in the message;
a stub only ever goes to the scope that received the content (capsule/store/stubs.py).
"""

from __future__ import annotations

from pathlib import Path

from capsule.retrieve import modes, workspace
from capsule.retrieve.modes import Mode, ModeError
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


def load_text(real: Path, shown: str) -> str:
    try:
        size = real.stat().st_size
        if size > MAX_READ_BYTES:
            raise ReadError(f"{shown} is {size} bytes; read a part with mode=lines:N-M or signatures")
        data = real.read_bytes()
    except PermissionError:
        raise ReadError(f"{shown}: permission denied") from None
    if workspace.is_binary(data):
        raise ReadError(f"{shown} is a binary file; ctx_read serves text")
    return data.decode("utf-8", "surrogateescape")


def render(text: str, rel: str, mode: Mode | None, languages: tuple[str, ...] = ()) -> tuple[str, str]:
    """(mode key, text) for one read. `mode=None` picks by the size gate."""
    auto = mode is None
    if auto:
        mode = modes.default_mode(rel, text)
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
        return "anchored", modes.anchored(text)
    if mode.name == "lines":
        return mode.key(), modes.lines(text, mode.ranges)
    if mode.name == "section":
        return mode.key(), modes.section(text, mode.heading)
    raise ModeError(f"unknown mode {mode.name!r}; use one of: {modes.MODES_HELP}")


class Reader:
    def __init__(self, root: Path | str, stubs=None, frecency=None, languages: tuple[str, ...] = ()):
        self.root = Path(root).resolve()
        self.stubs = stubs
        self.frecency = frecency
        self.languages = tuple(languages)

    def read(self, path: str, mode: str | None = None, scope: str = "", fresh: bool = False) -> str:
        parsed = modes.parse(mode)
        try:
            real = workspace.resolve(self.root, path)
        except WorkspaceError as exc:
            raise ReadError(str(exc)) from None
        rel = workspace.relative(self.root, real)
        key, out = render(load_text(real, rel), rel, parsed, self.languages)
        if self.frecency is not None:
            self.frecency.touch(rel)
        if self.stubs is None or not scope:
            return out
        return self.stubs.decide(scope, rel, key, out, fresh=fresh).text
