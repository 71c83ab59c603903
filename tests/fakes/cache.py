"""The fakes with a prompt cache: usage the way the cache would really report it for the bytes
received (~4 bytes a token), and rate-limit headers that follow a script.

- CachingMessages: the prompt is the tools, then the system blocks, then every message block
  (cache_control markers set aside); a request reads back the longest prefix ending at a breakpoint
  some earlier request wrote, writes up to its own last breakpoint, pays the rest as fresh input. A
  changed byte anywhere early in the prompt shows as a collapse of the read share (a bust).
- TimedCacheMessages: the same, keyed by model and effort as the real cache is, and in time: an
  entry becomes readable only once the answer that wrote it starts streaming; each answer waits
  ttft_write_s before its first byte when it wrote the shared prefix (tools + system), ttft_read_s
  when it read it.
- CachingResponses: the Responses API's cache: the longest earlier prefix of (model, effort,
  instructions, tools, input items).
Invariant: the same bytes in the same order always give the same usage.
"""

from __future__ import annotations

import hashlib
import json
import time

from tests.fakes.anthropic import MessagesAPI
from tests.fakes.openai import ResponsesAPI


def tok(nbytes: int) -> int:
    return (nbytes + 3) // 4


def segments(body: dict) -> list[tuple[str, bool]]:
    """(text, carries a cache_control breakpoint) for each part of a Messages request, in prompt order."""
    def strip(block):
        return {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else block

    def marked(block):
        return isinstance(block, dict) and "cache_control" in block

    segs = [(json.dumps(strip(t), sort_keys=True), marked(t)) for t in body.get("tools") or []]
    system = body.get("system") or []
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    segs += [(json.dumps(strip(b), sort_keys=True), marked(b)) for b in system]
    for m in body.get("messages", []):
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        segs += [(m.get("role", "") + json.dumps(strip(b), sort_keys=True), marked(b)) for b in blocks]
    return segs


def prefix_digests(segs: list[tuple[str, bool]], seed: str = "") -> tuple[list[int], list[str]]:
    """Cumulative byte sizes and the digest of each prefix (seeded with what else keys the cache)."""
    h = hashlib.sha256(seed.encode()) if seed else hashlib.sha256()
    sizes, digests, total = [], [], 0
    for text, _ in segs:
        h.update(text.encode())
        total += len(text.encode())
        sizes.append(total)
        digests.append(h.hexdigest())
    return sizes, digests


def cache_usage(segs, sizes, digests, cached: set[str]) -> tuple[dict, set[str], int, int]:
    """-> (usage, digests this request writes, bytes read, bytes up to its last breakpoint)."""
    read = max((sizes[i] for i in range(len(segs)) if digests[i] in cached), default=0)
    marks = [m for _, m in segs]
    last_mark = max((i for i, m in enumerate(marks) if m), default=-1)
    upto = sizes[last_mark] if last_mark >= 0 else 0
    writes = {digests[i] for i, m in enumerate(marks) if m}
    read_t, upto_t, total_t = tok(read), tok(max(upto, read)), tok(sizes[-1] if sizes else 0)
    usage = {"input_tokens": total_t - upto_t, "cache_creation_input_tokens": upto_t - read_t,
             "cache_read_input_tokens": read_t,
             "cache_creation": {"ephemeral_5m_input_tokens": upto_t - read_t, "ephemeral_1h_input_tokens": 0}}
    return usage, writes, read, upto


class CachingMessages(MessagesAPI):
    unique_ids = True

    def __init__(self, script, model: str = "claude-sonnet-4-5"):
        super().__init__(script, model=model)
        self.cached: set[str] = set()

    def usage(self, body: dict, n: int) -> dict:
        segs = segments(body)
        sizes, digests = prefix_digests(segs)
        usage, writes, _, _ = cache_usage(segs, sizes, digests, self.cached)
        self.cached |= writes
        return {**usage, "output_tokens": 30 + n}


def ramp(start: float, end: float, calls: int, reset: float, steps: list[float] | None = None):
    """Unified headers whose 5h utilization climbs linearly from `start` to `end` over `calls` answers
    (or answer n carries steps[n-1], the last one repeated)."""
    def headers(n: int) -> dict[str, str]:
        if steps:
            u = steps[min(n, len(steps)) - 1]
        else:
            u = start + (end - start) * min(n - 1, calls - 1) / max(calls - 1, 1)
        status = "allowed" if u < 0.8 else ("allowed_warning" if u < 1 else "rejected")
        return {"anthropic-ratelimit-unified-status": status,
                "anthropic-ratelimit-unified-5h-status": status,
                "anthropic-ratelimit-unified-5h-utilization": f"{u:.4f}",
                "anthropic-ratelimit-unified-5h-reset": str(int(reset)),
                "anthropic-ratelimit-unified-7d-utilization": f"{u / 4:.4f}",
                "anthropic-ratelimit-unified-7d-reset": str(int(reset + 5 * 86400))}
    return headers


def openai_ramp(steps: list[float], limit: int = 1_000_000):
    """OpenAI rate-limit headers (tokens window) whose utilization follows `steps`, plus the
    x-codex-primary-* headers Codex itself reads into its rollout's rate_limits."""
    def headers(n: int) -> dict[str, str]:
        u = steps[min(n, len(steps)) - 1]
        return {"x-ratelimit-limit-tokens": str(limit), "x-ratelimit-remaining-tokens": str(int(limit * (1 - u))),
                "x-ratelimit-reset-tokens": "6m0s", "x-ratelimit-limit-requests": "10000",
                "x-ratelimit-remaining-requests": str(10000 - n), "x-ratelimit-reset-requests": "1s",
                "x-codex-primary-used-percent": f"{100 * u:.1f}", "x-codex-primary-window-minutes": "300",
                "x-codex-primary-reset-at": "2000000000"}
    return headers


class TimedCacheMessages(MessagesAPI):
    unique_ids = True
    keep_alive = True

    def __init__(self, script=None, ratelimit=None, ttft_write_s: float = 0.0, ttft_read_s: float = 0.0,
                 status=None):
        super().__init__(script or (lambda body, turn: [{"type": "text", "text": "ok"}]), ratelimit=ratelimit,
                         status=status)
        self.ttft_write_s, self.ttft_read_s = ttft_write_s, ttft_read_s
        self.cached: set[str] = set()
        self.prefix_writes = 0
        self._pending: dict[int, tuple[set[str], bool]] = {}

    def usage(self, body: dict, n: int) -> dict:   # called under self.lock
        segs = segments(body)
        effort = (body.get("output_config") or {}).get("effort")
        sizes, digests = prefix_digests(segs, f"{body.get('model')}|{effort}")
        system = body.get("system")
        n_prefix = len(body.get("tools") or []) + (1 if isinstance(system, str) else len(system or []))
        usage, writes, read, upto = cache_usage(segs, sizes, digests, self.cached)
        prefix_end = sizes[n_prefix - 1] if 0 < n_prefix <= len(sizes) else 0
        wrote_prefix = bool(prefix_end) and read < prefix_end and upto >= prefix_end
        self.prefix_writes += wrote_prefix
        self._pending[n] = (writes, wrote_prefix)
        return {**usage, "output_tokens": 20 + n}

    def respond(self, body, raw=b"", path="/v1/messages", headers=None):
        n, msg = super().respond(body, raw, path, headers)
        with self.lock:
            self.log[n - 1].update(effort=(body.get("output_config") or {}).get("effort"),
                                   wrote_prefix=self._pending[n][1])
        return n, msg

    def before_first_byte(self, n: int, body: dict, t0: float) -> None:
        writes, wrote_prefix = self._pending[n]
        time.sleep(self.ttft_write_s if wrote_prefix else self.ttft_read_s)
        with self.lock:
            self.cached |= writes           # the entry exists once this answer starts streaming
            self.log[n - 1]["ttfb_s"] = time.monotonic() - t0


class CachingResponses(ResponsesAPI):
    unique_ids = True

    def __init__(self, script, ratelimit=None):
        super().__init__(script, ratelimit=ratelimit, model=None)   # the provider config names no model
        self.cached: set[str] = set()

    def usage(self, body: dict, n: int) -> dict:   # called under self.lock
        effort = (body.get("reasoning") or {}).get("effort")
        segs = [json.dumps(body.get("instructions"), sort_keys=True), json.dumps(body.get("tools"), sort_keys=True)]
        segs += [json.dumps(i, sort_keys=True) for i in body.get("input") or []]
        sizes, digests = prefix_digests([(s, True) for s in segs], f"{body.get('model')}|{effort}")
        read = max((sizes[i] for i in range(len(segs)) if digests[i] in self.cached), default=0)
        self.cached.update(digests)
        inp, cached = tok(sizes[-1]), tok(read)
        return {"input_tokens": inp, "input_tokens_details": {"cached_tokens": cached},
                "output_tokens": 20 + n, "output_tokens_details": {"reasoning_tokens": 5},
                "total_tokens": inp + 20 + n}
