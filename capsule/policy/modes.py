"""The engine's modes and which one applies where no role does (embedded `ctx run` / `ctx pipe`).

Not responsible for role manifests (a role's own mode is in manifest.py) or for what each mode does
(engine.py). Kept apart from the engine so `capsule ctx doctor` can report the embedded mode
without importing the pipeline. Invariant: doctor and the engine read the mode from this one place.
"""

from __future__ import annotations

import os

from capsule.ground import switches

MODES = ("off", "measure", "standard", "aggressive")
EMBEDDED_DEFAULT_MODE = "standard"  # without a role, the laptop default compresses


def default_mode(role_mode: str | None = None) -> str:
    """$JACKIN_CTX_MODE when it names a mode, else the role's [context] mode (a door that loaded a
    role hands it in), else the embedded default."""
    mode = os.environ.get(switches.MODE, "").strip().lower()
    role = (role_mode or "").strip().lower()
    return mode if mode in MODES else role if role in MODES else EMBEDDED_DEFAULT_MODE


def passive(mode: str) -> bool:
    """Count, change nothing unasked: the measure and off modes, the measure-only and master switches."""
    return mode in ("off", "measure") or switches.is_on(switches.DISABLE) or switches.is_on(switches.MEASURE_ONLY)


def embedded_mode() -> tuple[str, str]:
    """(mode, reason) that `capsule ctx run` and `ctx pipe` really use, after the kill switches."""
    if switches.is_on(switches.DISABLE):
        return "off", f"switch {switches.DISABLE}"
    if switches.is_on(switches.MEASURE_ONLY):
        return "measure", f"switch {switches.MEASURE_ONLY}"
    raw = os.environ.get(switches.MODE, "").strip().lower()
    if raw in MODES:
        return raw, f"{switches.MODE}={raw}"
    if raw:
        return EMBEDDED_DEFAULT_MODE, f"{switches.MODE}={raw!r} is not a mode; embedded default"
    return EMBEDDED_DEFAULT_MODE, "embedded default (no role)"
