"""COST ENGINE: dollars from the four billing buckets, with prices from data/prices.toml.

Not responsible for counting tokens (usage store) or rendering. Invariant: an upstream-reported cost
wins over a computed one; a model without a price row is "unpriced" (cost None), never guessed from
a look-alike; a session total says how many of its calls were unpriced.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

PRICES_FILE = Path(__file__).with_name("data") / "prices.toml"
FIELDS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")
# bucket column -> price field
BUCKET_PRICE = {"input_tokens": "input", "cache_read_input_tokens": "cache_read",
                "cache_creation_5m": "cache_write_5m", "cache_creation_1h": "cache_write_1h",
                "output_tokens": "output"}
_SUFFIX = re.compile(r"(\[[^\]]*\])$|(-\d{8})$")


@lru_cache(maxsize=4)
def prices(path: Path = PRICES_FILE) -> dict[str, dict[str, float]]:
    with open(path, "rb") as f:
        data = tomllib.load(f)
    table = data.get("models", {})
    for model, row in table.items():
        missing = [k for k in FIELDS if not isinstance(row.get(k), (int, float))]
        if missing:
            raise ValueError(f"{path}: model {model!r} lacks {', '.join(missing)}")
    return table


def normalise(model: str) -> str:
    """`claude-haiku-4-5-20251001` -> `claude-haiku-4-5`; `claude-opus-4-8[1m]` -> `claude-opus-4-8`."""
    name = model.strip()
    while True:
        stripped = _SUFFIX.sub("", name)
        if stripped == name:
            return name
        name = stripped


def price_for(model: str | None) -> dict[str, float] | None:
    if not model:
        return None
    table = prices()
    return table.get(model) or table.get(normalise(model))


@dataclass
class Cost:
    usd: float | None
    basis: str          # upstream | priced | unpriced


def call_cost(call: dict) -> Cost:
    if call.get("cost_usd") is not None:
        return Cost(float(call["cost_usd"]), "upstream")
    p = price_for(call.get("model"))
    if p is None:
        return Cost(None, "unpriced")
    usd = sum(call.get(b, 0) * p[f] for b, f in BUCKET_PRICE.items()) / 1_000_000
    return Cost(usd, "priced")


def bucket_costs(call: dict) -> dict[str, float] | None:
    """Cost per bucket (for charts); None when unpriced or only an upstream total is known."""
    p = price_for(call.get("model"))
    if p is None or call.get("cost_usd") is not None:
        return None
    return {b: call.get(b, 0) * p[f] / 1_000_000 for b, f in BUCKET_PRICE.items()}


def total_cost(calls: list[dict]) -> dict:
    usd, unpriced, upstream = 0.0, 0, 0
    models: set[str] = set()
    for c in calls:
        cost = call_cost(c)
        if cost.usd is None:
            unpriced += 1
            models.add(c.get("model") or "(no model)")
        else:
            usd += cost.usd
            upstream += cost.basis == "upstream"
    return {"cost_usd": round(usd, 6) if unpriced < len(calls) or not calls else None,
            "unpriced_calls": unpriced, "unpriced_models": sorted(models), "upstream_cost_calls": upstream}
