"""One memory and time budget for media decoding across the process (issue 31).

Memory: every decode reserves its decoded size (width x height x bands, plus a mode conversion's
copy) from one process-wide pool ([decode] budget_mb in data/caps.toml) before Pillow allocates it,
and waits while the pool is full; an image that alone is over the pool is refused. Time: a door
sets a deadline for its work (a context variable, so the worker thread it hands the work to sees
it); a wait for the pool, a PDF's pages and poppler's subprocesses end at it, and a worker whose
request was abandoned stops at its next check instead of decoding on. Not responsible for what is
decoded (image.py, pdf.py). Invariant: over budget -> MediaError, the caller sends the original.
"""

from __future__ import annotations

import contextvars
import ctypes
import threading
import time
from contextlib import contextmanager
from functools import lru_cache

from capsule.observe.media import caps
from capsule.observe.media.media_errors import MediaError

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("capsule_media_deadline", default=None)
_room = threading.Condition()
_used = 0
_peak = 0


def _return_freed_memory() -> None:
    """glibc raises its mmap threshold to the size of a freed mmapped block (up to 32 MB), so after
    the first decode Pillow's 16 MB blocks come from the heap arenas and stay in RSS when freed: the
    pool would bound what is held, not what PID 1 keeps. A fixed 1 MB threshold keeps big blocks
    mmapped, so a finished decode gives its memory back. Not glibc: nothing to do."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 1 << 20)       # M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        pass


_return_freed_memory()


@lru_cache(maxsize=1)
def settings() -> dict:
    return dict(caps.data()["decode"])


def capacity() -> int:
    return int(float(settings()["budget_mb"]) * (1 << 20))


@contextmanager
def deadline(seconds: float):
    """Media work in this context (and the worker threads it starts with a copied context) ends by
    `seconds` from now; an outer, earlier deadline stays."""
    at = time.monotonic() + seconds
    outer = _deadline.get()
    token = _deadline.set(at if outer is None else min(outer, at))
    try:
        yield
    finally:
        _deadline.reset(token)


def remaining(default: float | None = None) -> float | None:
    """Seconds left before this context's deadline (`default` when there is none)."""
    at = _deadline.get()
    return default if at is None else at - time.monotonic()


def check(what: str) -> None:
    """MediaError when this context's deadline has passed: an abandoned worker stops here."""
    left = remaining()
    if left is not None and left <= 0:
        raise MediaError(f"{what}: over its time budget")


@contextmanager
def decoding(cost: int, what: str):
    """Hold `cost` bytes of the process's decode pool while the block runs."""
    global _used, _peak
    cap = capacity()
    if cost > cap:
        raise MediaError(f"{what} would take {cost >> 20} MB to decode, over the {cap >> 20} MB media budget")
    wait = float(settings()["wait_s"])
    give_up = time.monotonic() + (remaining(wait) or 0.0)
    with _room:
        while _used + cost > cap:
            left = give_up - time.monotonic()
            if left <= 0:
                raise MediaError(f"{what}: no room in the media decode budget before its deadline")
            _room.wait(left)
        _used += cost
        _peak = max(_peak, _used)
    try:
        yield
    finally:
        with _room:
            _used -= cost
            _room.notify_all()


def in_use() -> tuple[int, int]:
    """(bytes held now, the most ever held at once): for tests and benchmarks."""
    return _used, _peak


def reset_peak() -> None:
    """Start in_use()'s peak again from what is held now (tests and benchmarks)."""
    global _peak
    with _room:
        _peak = _used
