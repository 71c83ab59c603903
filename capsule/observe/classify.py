"""CLASSIFY: decide which family an observation belongs to and which transform shrinks it.

Not responsible for running the transform. Command lines are read by the rules table
(observe/rules, extended by the shell-door work); content without a command is sniffed
from its first KiB.
Invariant: anything unrecognised gets family "unknown" and the "default" transform.
"""

from __future__ import annotations

from capsule.observe.rules.command import classify_command_line
from capsule.observe.transform_types import Classification


def classify(command: str | None, head: bytes = b"", cwd: str | None = None) -> Classification:
    """`cwd` is where the command ran: a project's trusted `.capsule/filters.toml` is read there."""
    if command:
        found = classify_command(command, cwd)
        if found is not None:
            return found
    return sniff_content(head)


def classify_command(command: str, cwd: str | None = None) -> Classification | None:
    """The rules table (observe/rules/rules.toml) read through the shell lexer."""
    return classify_command_line(command, cwd)


def sniff_content(head: bytes) -> Classification:
    """Content without a command rule: typed by its first KiB (observe/content/sniff.py)."""
    from capsule.observe.content.sniff import sniff  # noqa: PLC0415 - bench_startup "ctx run cold, no engine"

    family, transform_id, reason = sniff(head)
    return Classification(family, transform_id, reason=reason)
