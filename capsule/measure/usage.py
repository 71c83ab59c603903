"""USAGE: the one entry for a single model API call's usage, over the store's usage rows.

Writers: transcript ingestion (capsule.measure.ingest) and the API proxy. The proxy, or anything
else that sees a call, writes through ONE function:

    record_usage(session, agent, model, call_id, input_tokens=…, cache_read_input_tokens=…,
                 cache_creation_5m=…, cache_creation_1h=…, output_tokens=…, cost_usd=None,
                 ts=None, source="proxy" | "transcript", thread=None)

`input_tokens` is FRESH input (cached input excluded); `call_id` is the upstream response id
(Anthropic `msg_…`, OpenAI `resp_…`), the same id the transcripts carry, so one call seen by both
the proxy and a transcript is stored once. The rows, their schema and their SQL are the store's
(capsule/store/usage_rows.py). Not responsible for parsing transcripts, prices or reports.
Invariant: a call is counted once per (agent, call_id): writing it again never changes a total,
except that a proxy row (ground truth) replaces a transcript row and a transcript entry with a
larger output count replaces a mid-stream one.
"""

from __future__ import annotations

import time

from capsule.store.usage_rows import (BUCKETS, MAX_COST_USD, MAX_COUNT, SOURCES, Batch, Call,  # noqa: F401 - the rows' API
                                      Session, ToolEvent, UsageStore, check, checked)


def record_usage(session: str, agent: str, model: str | None, call_id: str, *, input_tokens: int = 0,
                 cache_read_input_tokens: int = 0, cache_creation_5m: int = 0, cache_creation_1h: int = 0,
                 output_tokens: int = 0, cost_usd: float | None = None, ts: float | None = None,
                 source: str = "proxy", thread: str | None = None, store: UsageStore | None = None) -> None:
    """Record one API call's usage (see the module header). Idempotent per (agent, call_id)."""
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, not {source!r}")
    for name, value in (("input_tokens", input_tokens), ("cache_read_input_tokens", cache_read_input_tokens),
                        ("cache_creation_5m", cache_creation_5m), ("cache_creation_1h", cache_creation_1h),
                        ("output_tokens", output_tokens)):
        if not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a non-negative int, not {value!r}")
    own = store is None
    store = store or UsageStore()
    try:
        now = time.time() if ts is None else ts
        store.write(Batch(
            calls=[Call(agent=agent, call_id=call_id, session_id=session, model=model, ts=now,
                        input_tokens=input_tokens, cache_read_input_tokens=cache_read_input_tokens,
                        cache_creation_5m=cache_creation_5m, cache_creation_1h=cache_creation_1h,
                        output_tokens=output_tokens, cost_usd=cost_usd, thread_id=thread, source=source,
                        origin=source)],
            sessions=[Session(agent=agent, session_id=session, first_ts=now, last_ts=now, origin=source)]))
    finally:
        if own:
            store.close()
