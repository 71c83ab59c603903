"""The short, honest note on the read-door verbs appended to an agent's instruction file.

Not responsible for the rest of the instruction file or the role's instruction pack.
Invariant: one marked block, replaced in place on re-run; nothing else in the file changes;
the note stays a few dozen tokens (standing-context budget, INV-6).
"""

from __future__ import annotations

from pathlib import Path

from capsule.agents.common import write_atomic
from capsule.agents import claude, codex

BEGIN = "<!-- capsule:read-door -->"
END = "<!-- /capsule:read-door -->"
NOTE = (
    "MCP server `capsule` offers lean reads: `ctx_read` (modes: signatures, lines:N-M, "
    "section:<heading>, anchored; re-reading an unchanged file returns a short stub), `ctx_search` "
    "(ranked file:line hits), `ctx_doc` (markdown by section), `ctx_expand` (recover a `<<ccr:…>>` "
    "original). Native tools still work; these save tokens on large files and searches."
)
FILES = {"claude": "CLAUDE.md", "codex": "AGENTS.md"}


def user_file(agent: str, env=None) -> Path:
    """The agent's user-level instruction file (Claude Code: $CLAUDE_CONFIG_DIR or ~/.claude;
    Codex: $CODEX_HOME or ~/.codex). In a container that is the agent's home there, so the note
    lands in no file of the mounted workspace."""
    base = claude.config_dir(env) if agent == "claude" else codex.codex_home(env)
    return base / FILES[agent]


def block(text: str | None = None) -> str:
    return f"{BEGIN}\n{NOTE if text is None else text}\n{END}\n"


def add(path: Path, text: str | None = None) -> bool:
    """Add or refresh the note (or `text`, the role's standing instructions) in `path`; True when
    the file changed."""
    path, note = Path(path), text
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    start, end = text.find(BEGIN), text.find(END)
    if start >= 0 and end > start:
        tail = text[end + len(END):]
        new = text[:start] + block(note).rstrip("\n") + tail
    else:
        sep = "" if not text else ("\n" if text.endswith("\n") else "\n\n")
        if text and text.endswith("\n") and not text.endswith("\n\n"):
            sep = "\n"
        new = text + sep + block(note)
    return write_atomic(path, new)


def has(path: Path) -> bool:
    try:
        return BEGIN in Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return False
