"""Numbers from outside (a response header, a JSON event, a TOML file, an agent-written row) made safe.

One function, used at every boundary where such a number is stored or printed: a value is a float
in the range its caller names, or None. Not responsible for what a missing value means (the caller
decides: skip the sample, "an unknown time", a one-line error). Invariant: never raises; nan, inf,
an overflowing string (a 400-digit reset is inf as a float) and an out-of-range value are all None,
so nothing downstream meets an OverflowError, a NaN that breaks a NOT NULL column, or `Infinity`
in JSON.
"""

from __future__ import annotations

import math

MAX_TEXT = 64          # a longer number string is not a number a server or client would send


def bounded(value, lo: float, hi: float) -> float | None:
    """`value` (int, float or str) as a finite float in [lo, hi]; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        if len(value) > MAX_TEXT:
            return None
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if not isinstance(value, (int, float)):
        return None
    try:
        f = float(value)
    except (OverflowError, ValueError):        # an int too big for a float
        return None
    return f if math.isfinite(f) and lo <= f <= hi else None


def finite_json(obj):
    """`obj` with every non-finite float replaced by None (JSON has no Infinity or NaN)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_json(v) for v in obj]
    return obj
