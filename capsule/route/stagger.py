"""Spawn stagger: simultaneous requests that share a long prefix wait for the first one's stream.

A prompt-cache entry exists only once the first response for that prefix has started streaming;
N same-prefix requests sent together pay N cache writes. The first of a prefix goes at once; the
others are held until its response has started (its first body bytes reached the proxy), then
go and read the cache it wrote. The prefix is the part every request of a fan-out shares: model,
tools and system prompt. Not responsible for forwarding (proxy/app.py).
Invariant: never a deadlock — a follower waits at most `max_wait_ms`, a leader that fails or ends
releases its followers, and with the switch off (JACKIN_CTX_NO_STAGGER or the role's
stagger.enabled = false) nothing is ever held.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from blake3 import blake3
import anyio

from capsule.ground.switches import NO_STAGGER
from capsule.ground.switches import is_on
from capsule.ground.wire_json import serialize

DEFAULT_MAX_WAIT_MS = 8000
DEFAULT_MIN_PREFIX_CHARS = 4096        # ~1,024 tokens: below this, nothing is cached anyway


@dataclass(frozen=True)
class Settings:
    enabled: bool = True
    max_wait_ms: int = DEFAULT_MAX_WAIT_MS
    min_prefix_chars: int = DEFAULT_MIN_PREFIX_CHARS


def settings_from(spec: dict, env=None) -> Settings:
    env = os.environ if env is None else env
    return Settings(enabled=bool(spec.get("enabled", True)) and not is_on(NO_STAGGER, env),
                    max_wait_ms=int(spec.get("max_wait_ms", DEFAULT_MAX_WAIT_MS)),
                    min_prefix_chars=int(spec.get("min_prefix_chars", DEFAULT_MIN_PREFIX_CHARS)))


def prefix_key(api: str, body: dict, min_chars: int) -> str | None:
    """The shared prefix's hash, or None when it is too short to be worth a wait."""

    parts = [body.get("model"), body.get("tools") or [],
             body.get("system") if api == "anthropic" else body.get("instructions")]
    if api == "anthropic" and isinstance(parts[2], list):   # the billing line changes per request
        parts[2] = [b for b in parts[2] if not (isinstance(b, dict) and str(b.get("text", "")).startswith(
            "x-anthropic-billing-header"))]
    raw = serialize(parts)
    if len(raw) < min_chars:
        return None
    return blake3(raw).hexdigest()[:24]


class Stagger:
    def __init__(self, settings: Settings | None = None):
        self.settings = settings or Settings()
        self._leaders: dict[str, anyio.Event] = {}
        self.stats = {"held": 0, "released_by_stream": 0, "released_by_timeout": 0, "wait_ms_total": 0.0}

    async def enter(self, key: str | None) -> anyio.Event | None:
        """Before forwarding. Returns the Event this request must set when its response starts
        (it leads its prefix), or None (it followed, or nothing applies)."""
        if key is None or not self.settings.enabled:
            return None
        leader = self._leaders.get(key)
        if leader is None or leader.is_set():
            ev = anyio.Event()
            self._leaders[key] = ev
            return ev
        self.stats["held"] += 1
        t0 = time.monotonic()
        with anyio.move_on_after(self.settings.max_wait_ms / 1000) as scope:
            await leader.wait()
        self.stats["wait_ms_total"] += (time.monotonic() - t0) * 1000
        self.stats["released_by_timeout" if scope.cancelled_caught else "released_by_stream"] += 1
        return None

    def started(self, key: str | None, ev: anyio.Event | None) -> None:
        """The leader's response has started streaming (or ended, or failed): release its followers."""
        if ev is not None and not ev.is_set():
            ev.set()
            if key is not None and self._leaders.get(key) is ev:
                del self._leaders[key]
