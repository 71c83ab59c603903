"""PAYOFF: does a lane change at a boundary pay for the prompt cache it costs?

A conversation that moves to a cheaper model cannot read the warm cache the current model holds for
the prefix it shares (tools, system prompt, the parent's context): its first call writes that prefix
again at the cheaper model's write price. The change pays only when the saving over the calls the
lane's conversations usually make is larger than that write. The figures come from the lane's own
recorded conversations (the usage store's threads), never from constants.
Not responsible for reading the store (the caller hands in the calls) or for applying the choice
(route/governor.py decides, the proxy and the supervisor apply). Pure: same calls, same answer.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from statistics import median

from capsule.measure import cost

BUCKETS = ("input_tokens", "cache_read_input_tokens", "cache_creation_5m", "cache_creation_1h", "output_tokens")


@dataclass(frozen=True)
class History:
    """What a lane's recorded conversations looked like, on the model it runs today."""
    conversations: int
    calls: float                 # median calls per conversation
    prefix_tokens: float         # median cacheable prefix of a conversation's first call (read + written)
    per_call: dict               # mean tokens per call, bucket by bucket, past that prefix
    warm: bool                   # the last conversation ended within the cache's lifetime: the prefix is cached


@dataclass(frozen=True)
class Payoff:
    saving_usd: float            # over the expected calls, the prefix's cheaper reads included
    cache_write_usd: float       # the first call's write of the prefix on the new model, net of what staying costs
    calls: float
    prefix_tokens: float
    warm: bool

    @property
    def pays(self) -> bool:
        return self.saving_usd > self.cache_write_usd

    def as_dict(self) -> dict:
        return {"saving_usd": round(self.saving_usd, 6), "cache_write_usd": round(self.cache_write_usd, 6),
                "expected_calls": self.calls, "prefix_tokens": round(self.prefix_tokens), "warm": self.warm,
                "pays": self.pays}

    def reason(self, to_model: str) -> str:
        verdict = "pays" if self.pays else "does not pay"
        return (f"moving to {to_model} {verdict}: saves ${self.saving_usd:.4f} over ~{self.calls:g} calls, "
                f"the new cache write costs ${self.cache_write_usd:.4f}")


TTL_5M, TTL_1H = 300.0, 3600.0


def history(calls: list[dict], model: str, subagent: bool, now: float | None = None) -> History | None:
    """The lane's conversations on `model`: subagent threads (thread id set) or main threads."""
    threads: dict[tuple, list[dict]] = {}
    for c in calls:
        if (c.get("thread_id") is not None) != subagent or cost.normalise(c.get("model") or "") != cost.normalise(model):
            continue
        threads.setdefault((c.get("agent"), c.get("session_id"), c.get("thread_id")), []).append(c)
    if not threads:
        return None
    counts, prefixes, totals, n, last, ttl = [], [], dict.fromkeys(BUCKETS, 0.0), 0, 0.0, TTL_5M
    for rows in threads.values():
        rows.sort(key=lambda c: (c.get("ts") or 0, c.get("call_id") or ""))
        counts.append(len(rows))
        first = rows[0]
        prefixes.append(sum(first.get(b) or 0 for b in ("cache_read_input_tokens", "cache_creation_5m",
                                                        "cache_creation_1h")))
        ttl = TTL_1H if first.get("cache_creation_1h") else ttl
        for i, r in enumerate(rows):
            for b in BUCKETS:
                totals[b] += r.get(b) or 0
            n += 1
        for b in ("cache_read_input_tokens", "cache_creation_5m", "cache_creation_1h"):
            totals[b] -= first.get(b) or 0                  # the first call's prefix is priced on its own
        totals["cache_read_input_tokens"] -= prefixes[-1] * (len(rows) - 1)   # later calls read it again
        last = max(last, rows[-1].get("ts") or 0.0)
    per_call = {b: max(0.0, totals[b] / n) for b in BUCKETS}
    now = time.time() if now is None else now
    return History(len(threads), float(median(counts)), float(median(prefixes)), per_call, now - last < ttl)


def _usd(tokens: dict, model: str) -> float | None:
    return cost.call_cost({"model": model, **{b: tokens.get(b, 0) for b in BUCKETS}}).usd


def price(from_model: str, to_model: str, hist: History) -> Payoff | None:
    """The change priced on the lane's history; None when either model has no price row."""
    p_from, p_to = cost.price_for(from_model), cost.price_for(to_model)
    if p_from is None or p_to is None:
        return None
    per_from, per_to = _usd(hist.per_call, from_model), _usd(hist.per_call, to_model)
    prefix = hist.prefix_tokens
    # after the first call, both models read the prefix from their own cache
    reads = max(0.0, hist.calls - 1) * prefix * (p_from["cache_read"] - p_to["cache_read"]) / 1e6
    saving = hist.calls * (per_from - per_to) + reads
    # the first call: the new model writes the prefix; staying reads it when warm, writes it when cold
    stay = p_from["cache_read"] if hist.warm else p_from["cache_write_5m"]
    write = prefix * (p_to["cache_write_5m"] - stay) / 1e6
    return Payoff(saving, max(0.0, write), hist.calls, prefix, hist.warm)
