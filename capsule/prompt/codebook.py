"""The codebook (`[context.output] codebook = true`): at most 8 aliases for long paths and
identifiers that recur in this role's traffic, chosen from the ledger's commands, pinned per role.

`pin` runs at a session start (a task boundary): it counts how often each candidate appeared in the
ledger rows since the last pin, keeps the ones whose uses pay for their legend line, and writes the
pinned legend; `legend` only reads that file, so the text never changes inside a conversation. An
alias whose target stopped recurring fails the count at the next pin and is dropped.
Not responsible for the ledger (measure/) or injecting the legend (pack.py). Invariant: the same
counts give the same legend, byte for byte (ties broken by the text itself).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from capsule.ground import paths
from capsule.prompt import pack
from capsule.ground import tokens
from capsule.measure.ledger import Ledger

CANDIDATE = re.compile(r"(?:[\w.-]+/){2,}[\w.-]+|\b[A-Za-z_][A-Za-z0-9_]{23,}\b")
MIN_CHARS = 24


def _file(state_dir: Path, role: str) -> Path:
    return Path(state_dir) / "codebook" / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', role)}.json"


def candidates(commands: list[str]) -> dict[str, int]:
    """Long paths and identifiers -> how many ledger commands named them."""
    counts: dict[str, int] = {}
    for cmd in commands:
        for text in set(CANDIDATE.findall(cmd or "")):
            if len(text) >= MIN_CHARS:
                counts[text] = counts.get(text, 0) + 1
    return counts


def choose(counts: dict[str, int], count_tokens) -> list[tuple[str, str]]:
    """[(alias, text)]: at most max_aliases, each saving more tokens over its uses than its legend
    line costs, the largest savings first."""
    spec = pack.data()["codebook"]
    scored = []
    for text, uses in counts.items():
        if uses < spec["min_uses"]:
            continue
        line = count_tokens(f"\n@0 = {text}")
        saving = uses * (count_tokens(text) - count_tokens("@0")) - line
        if saving > 0:
            scored.append((-saving, text))
    picked = [text for _, text in sorted(scored)[:spec["max_aliases"]]]
    return [(f"@{i + 1}", text) for i, text in enumerate(picked)]


def render(aliases: list[tuple[str, str]]) -> str:
    if not aliases:
        return ""
    return pack.data()["codebook"]["head"] + "".join(f"\n{a} = {t}" for a, t in aliases)


def pin(state_dir: Path, role: str, commands: list[str], count_tokens) -> str:
    """Choose and pin the role's legend from the ledger commands since the last pin; returns it."""
    legend = render(choose(candidates(commands), count_tokens))
    path = _file(state_dir, role)
    paths.private_dir(path.parent)
    paths.write_private(path, json.dumps({"pinned_at": time.time(), "legend": legend}))
    return legend


def pinned_at(state_dir: Path, role: str) -> float:
    try:
        return float(json.loads(_file(state_dir, role).read_text(encoding="utf-8"))["pinned_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0


def legend(role, state_dir: Path | None = None) -> str:
    """The role's pinned legend ("" when none was pinned or codebook is off)."""
    if not pack.settings(role.context.output)[2]:
        return ""
    try:
        data = json.loads(_file(state_dir or paths.state_dir(), role.name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    text = data.get("legend") if isinstance(data, dict) else None
    return text if isinstance(text, str) else ""


def pin_from_ledger(role, state_dir: Path | None = None) -> str:
    """At a session start: the ledger's commands since the last pin -> the new pinned legend."""
    state = Path(state_dir or paths.state_dir())
    since = pinned_at(state, role.name)
    try:
        ledger = Ledger(state / paths.LEDGER_DB, readonly=True)
        try:
            commands = [r["command"] for r in ledger.rows(since)]
        finally:
            ledger.close()
    except Exception:  # noqa: BLE001 - no ledger yet: nothing recurs, the legend is empty
        commands = []
    return pin(state, role.name, commands, tokens.count)
