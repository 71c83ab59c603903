"""What `capsule up` says before the agent starts and after it exits, on stderr (the agent's stdout
stays the agent's).

Not responsible for starting anything (cli/runtime.py, supervisor/) or for the figures (the
ledger and usage store, measure/). Invariant: one block before (role, mode, where it runs, the
agent and its version, which doors are on, the state dir) and one line after (tokens saved,
emissions, cost when the transcripts price it, where to see more); a failure to compute either
is a shorter line, never a failed `up`.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from datetime import datetime
from pathlib import Path

from capsule.ground import paths
from capsule.measure.cost import total_cost
from capsule.measure.ledger import Ledger, summarise
from capsule.measure.usage import UsageStore

DOORS = ("shims", "proxy", "mcp", "register", "routing")
PACKAGES = {"claude": "Claude Code", "codex": "Codex"}


def agent_version(command: str) -> str | None:
    """The npm package version of a client binary (its package.json beside the resolved binary),
    without running it (a `claude --version` costs a Node start)."""
    path = shutil.which(command)
    if path is None:
        return None
    here = Path(os.path.realpath(path)).parent
    for folder in (here, *here.parents[:3]):
        meta = folder / "package.json"
        if meta.is_file():
            try:
                return str(json.loads(meta.read_text(encoding="utf-8")).get("version") or "") or None
            except (OSError, ValueError):
                return None
    return None


def before(role, plan: dict, mode: str, where: str, command: list[str], kind: str, state_dir: str,
           here: bool = True) -> str:
    """The block `up` prints before it starts the agent; `here` False: the agent is the image's
    (its version is not this host's)."""
    name = os.path.basename(command[0]) if command else kind
    version = agent_version(command[0]) if here and command and kind in PACKAGES else None
    agent = f"{PACKAGES.get(kind, name)} {version}" if version else (PACKAGES.get(kind) or name)
    doors = ", ".join(f"{d} {'on' if plan[d].on else 'off'}" for d in DOORS if d in plan)
    return "\n".join([
        f"capsule: role {role.name} ({role.path}), mode {mode}, {where}",
        f"capsule: agent {agent} ({' '.join(command) if command else kind})",
        f"capsule: doors: {doors}",
        f"capsule: state {state_dir}",
    ])


def after(state_dir: Path, since: float, code: int) -> str:
    """The line `up --local` prints when the agent has exited: what this session saved and cost."""
    when = datetime.fromtimestamp(since).strftime("%Y-%m-%dT%H:%M:%S")
    more = f"more: capsule ctx gain --since {when}, capsule ctx report --since {when}"
    try:
        saved, emissions, pct = _saved(state_dir, since)
    except Exception:  # noqa: BLE001 - a summary that fails says less, never fails `up`
        return f"capsule: agent exited {code}; {more}"
    cost = _cost(state_dir, since)
    cost_text = f", session cost ${cost:.2f}" if cost is not None else ""
    return (f"capsule: agent exited {code}: {saved:,} tokens saved over {emissions} emission"
            f"{'' if emissions == 1 else 's'} ({pct:.1f}%){cost_text}; {more}")


def _saved(state_dir: Path, since: float) -> tuple[int, int, float]:
    path = state_dir / paths.LEDGER_DB
    if not path.exists():
        return 0, 0, 0.0
    ledger = Ledger(path, readonly=True)
    try:
        total = summarise(ledger.rows(since))["total"]
    finally:
        ledger.close()
    return total["saved_tokens"], total["emissions"], total["saved_pct"]


def _cost(state_dir: Path, since: float) -> float | None:
    """What the agent's transcripts price this session at; None when none were read or priced."""

    if not (state_dir / paths.usage_path().name).exists():
        return None
    try:
        store = UsageStore(state_dir / paths.usage_path().name)
        try:
            calls = store.calls(since)
        finally:
            store.close()
    except Exception:  # noqa: BLE001
        return None
    return total_cost(calls)["cost_usd"] if calls else None


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def now() -> float:
    return time.time()
