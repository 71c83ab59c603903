"""Ground-truth usage: read the upstream's own usage numbers out of a response as it streams past.

Not responsible for pricing (the measure layer is) or for forwarding bytes (app.py does, untouched).
Invariant: the numbers recorded are the upstream's, unchanged; a response that cannot be read
records nothing and costs the client nothing (every parse error is swallowed here).
"""

from __future__ import annotations

import json
import logging
import time
import zlib
from dataclasses import dataclass, field

from capsule import engine_api

log = logging.getLogger("capsule.proxy")

AGENTS = {"anthropic": "claude", "openai": "codex", "gemini": "gemini"}   # the usage store's agent names, per API


@dataclass
class Usage:
    session: str
    api: str
    model: str | None = None
    response_id: str | None = None
    input_tokens: int = 0                 # fresh input (cached input excluded)
    cache_read_tokens: int = 0
    cache_write_5m: int = 0
    cache_write_1h: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    usage_json: str = "{}"                # the upstream's usage object, as sent
    ts: float = field(default_factory=time.time)


def record(row: Usage, store=None) -> None:
    """The one writer: a ground-truth row in the usage store (source "proxy"), through the engine."""
    engine_api.record_call(row.session, AGENTS.get(row.api, row.api), row.model,
                           row.response_id or f"proxy:{row.session}:{row.ts!r}", store=store,
                           input_tokens=row.input_tokens, cache_read_input_tokens=row.cache_read_tokens,
                           cache_creation_5m=row.cache_write_5m, cache_creation_1h=row.cache_write_1h,
                           output_tokens=row.output_tokens, cost_usd=row.cost_usd, ts=row.ts)


class Tap:
    """Fed every response chunk as it passes; `result()` is the usage, or None."""

    MAX_JSON = 8 << 20   # a non-streaming body above this is not parsed for usage

    def __init__(self, api: str, session: str, content_type: str, encoding: str):
        self.api, self.session = api, session
        self.sse = "text/event-stream" in content_type
        self.encoding = encoding.strip().lower()
        self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS if self.encoding == "gzip" else zlib.MAX_WBITS) \
            if self.encoding in ("gzip", "deflate") else None
        self.readable = self.encoding in ("", "identity") or self._inflate is not None
        self._buf = bytearray()
        self._carry = b""
        self.row = Usage(session=session, api=api)
        self.seen = False

    def feed(self, chunk: bytes) -> None:
        if not self.readable:
            return
        try:
            data = self._inflate.decompress(chunk) if self._inflate else chunk
            if self.sse:
                self._lines(data)
            elif len(self._buf) + len(data) <= self.MAX_JSON:
                self._buf += data
        except Exception as exc:  # noqa: BLE001 - a tap never breaks the stream
            log.debug("usage tap: %r", exc)
            self.readable = False

    def _lines(self, data: bytes) -> None:
        lines = (self._carry + data).split(b"\n")
        self._carry = lines.pop()
        if len(self._carry) > self.MAX_JSON:
            self._carry = b""
        for line in lines:
            if line.startswith(b"data:") and (b"usage" in line or b"Usage" in line):
                try:
                    self._event(json.loads(line[5:]))
                except ValueError:
                    continue

    def result(self) -> Usage | None:
        try:
            if self.sse and self._carry.startswith(b"data:"):
                self._lines(b"\n")
            if not self.sse and self._buf:
                self._message(json.loads(bytes(self._buf)))
        except Exception as exc:  # noqa: BLE001
            log.debug("usage tap: %r", exc)
        return self.row if self.seen else None

    # -- shapes -------------------------------------------------------------------------------------
    def _event(self, ev: dict) -> None:
        kind = ev.get("type")
        if self.api == "gemini":
            self._message(ev)       # every chunk may carry usageMetadata; the last one is final
        elif self.api == "anthropic":
            if kind == "message_start" and isinstance(ev.get("message"), dict):
                self._message(ev["message"])
            elif kind == "message_delta" and isinstance(ev.get("usage"), dict):
                self._anthropic_usage(ev["usage"], merge=True)
        elif isinstance(ev.get("response"), dict) and kind in ("response.completed", "response.done",
                                                                "response.incomplete", "response.failed"):
            self._message(ev["response"])

    def _message(self, msg: dict) -> None:
        if self.api == "gemini":
            self._gemini(msg)
            return
        if not isinstance(msg, dict) or not isinstance(msg.get("usage"), dict):
            return
        self.row.model = msg.get("model") if isinstance(msg.get("model"), str) else self.row.model
        self.row.response_id = msg.get("id") if isinstance(msg.get("id"), str) else self.row.response_id
        if self.api == "anthropic":
            self._anthropic_usage(msg["usage"], merge=False)
        else:
            self._openai_usage(msg["usage"])
        cost = msg["usage"].get("cost", msg.get("cost"))
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            self.row.cost_usd = float(cost)

    def _anthropic_usage(self, u: dict, merge: bool) -> None:
        """message_start carries the input buckets; message_delta the final (cumulative) counts."""
        base = json.loads(self.row.usage_json) if merge else {}
        base.update(u)
        self.row.usage_json = json.dumps(base, sort_keys=True)
        self.row.input_tokens = _int(base.get("input_tokens"))
        self.row.cache_read_tokens = _int(base.get("cache_read_input_tokens"))
        split = base.get("cache_creation") if isinstance(base.get("cache_creation"), dict) else None
        if split and ("ephemeral_5m_input_tokens" in split or "ephemeral_1h_input_tokens" in split):
            self.row.cache_write_5m = _int(split.get("ephemeral_5m_input_tokens"))
            self.row.cache_write_1h = _int(split.get("ephemeral_1h_input_tokens"))
        else:   # no TTL split reported: the default (5-minute) cache
            self.row.cache_write_5m, self.row.cache_write_1h = _int(base.get("cache_creation_input_tokens")), 0
        self.row.output_tokens = _int(base.get("output_tokens"))
        self.seen = True

    def _openai_usage(self, u: dict) -> None:
        """Responses API: input_tokens includes the cached ones; the bucket here is the uncached rest."""
        cached = _int((u.get("input_tokens_details") or {}).get("cached_tokens"))
        self.row.usage_json = json.dumps(u, sort_keys=True)
        self.row.input_tokens = max(_int(u.get("input_tokens")) - cached, 0)
        self.row.cache_read_tokens = cached
        self.row.cache_write_5m = _int((u.get("input_tokens_details") or {}).get("cache_creation_tokens"))
        self.row.output_tokens = _int(u.get("output_tokens"))
        self.seen = True


    def _gemini(self, msg: dict) -> None:
        """GenerateContentResponse: usageMetadata.promptTokenCount includes the cached part
        (cachedContentTokenCount); thinking (thoughtsTokenCount) is billed as output."""
        u = msg.get("usageMetadata") if isinstance(msg, dict) else None
        if not isinstance(u, dict):
            return
        if isinstance(msg.get("modelVersion"), str):
            self.row.model = msg["modelVersion"]
        if isinstance(msg.get("responseId"), str):
            self.row.response_id = msg["responseId"]
        cached = _int(u.get("cachedContentTokenCount"))
        self.row.usage_json = json.dumps(u, sort_keys=True)
        self.row.input_tokens = max(_int(u.get("promptTokenCount")) - cached, 0)
        self.row.cache_read_tokens = cached
        self.row.cache_write_5m = self.row.cache_write_1h = 0
        self.row.output_tokens = _int(u.get("candidatesTokenCount")) + _int(u.get("thoughtsTokenCount"))
        self.seen = True


def _int(v) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0
