"""Re-running an emission's transform: the text the model saw, rebuilt from its original.

Not responsible for the audit's verdict (measure/audit.py) or for storing originals (store/).
Invariant: a deterministic transform re-run with the ledger row's context gives the same text;
anything unknown or failing gives None (the audit falls back to line ranges).
"""

from __future__ import annotations

from capsule.observe import registry
from capsule.observe.classify import classify
from capsule.observe.transform_types import Context


def emitted_text(row: dict, original: str) -> str | None:
    """The text the model saw, rebuilt by re-running the emission's deterministic transform on
    its original with the context the ledger row stored: command, family, stream, mode, exit
    code and intent (the JSON lossy tier and the reflex keep different lines for different
    intents, so a rerun without it would flag tokens the model did see). None when the
    transform is unknown or fails."""
    try:
        cls = classify(row.get("command"), original.encode("utf-8", "surrogateescape")[:1024])
        mode = row.get("mode") or "standard"
        ctx = Context(command=row.get("command"), family=row.get("family") or cls.family,
                      stream=row.get("stream") or "stdout", intent=row.get("intent") or None,
                      exit_code=row.get("exit_code"), filter_id=cls.filter_id,
                      mode="standard" if mode == "measure" else mode)
        return registry.get(row["transform"])(original, ctx).text
    except Exception:   # noqa: BLE001 - an audit falls back to the manifest's line ranges
        return None
