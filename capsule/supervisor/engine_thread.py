"""The one thread that encodes first in a process serving the shell door, and runs the engine's
calls on big outputs, its drains and its rehearsal (control_server.py hands them here).

Not responsible for when a call is handed over (control_server.HANDOFF_BYTES) nor for the engine's lock.
Invariant: fail open: no thread to be had, or stopped, and every call runs where it is asked.
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Any, Callable

from capsule.ground import tokens

log = logging.getLogger("capsule.supervisor")


class EngineThread:
    """The one thread that encodes first in this process, and runs the engine's calls on big outputs.

    tiktoken's regex caches serve fast only the thread that encoded first (the regex crate's pool
    owner); every other thread takes a locked slow path: ~1/3 more CPU a token, +2.7 ms on
    `ls -la /usr/bin`'s 77 KB. A pool thread that read a big output hands its engine call here (two
    thread wake-ups, tens of microseconds); a small one runs where it was read."""

    def __init__(self, on_ready: Callable[[], None]):
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()   # a job is queued before stop()'s end mark or runs where asked
        self._stopped = False
        self._thread: threading.Thread | None = threading.Thread(target=self._run, args=(on_ready,),
                                                                 name="capsule-engine", daemon=True)
        try:
            self._thread.start()
        except RuntimeError as exc:     # no thread to be had: every call runs where it was asked
            log.warning("control socket: no engine thread (%r)", exc)
            self._thread = None
            on_ready()

    def _run(self, on_ready: Callable[[], None]) -> None:
        try:
            tokens.count("capsule")     # the first encode: this thread owns the fast caches
        except Exception as exc:  # noqa: BLE001 - slower counts, not a stopped server
            log.warning("engine thread: first encode failed: %r", exc)
        finally:
            on_ready()
        while (job := self._jobs.get()) is not None:
            fn, done, box = job
            try:
                box.append((True, fn()))
            except BaseException as exc:  # noqa: BLE001 - raised again in the thread that asked
                box.append((False, exc))
            done.release()

    def call(self, fn: Callable[[], Any]) -> Any:
        """fn() on this thread; returns what it returns, raises what it raises."""
        if self._thread is None or threading.current_thread() is self._thread:
            return fn()
        done, box = threading.Lock(), []
        done.acquire()
        with self._lock:
            if self._stopped:
                return fn()
            self._jobs.put((fn, done, box))
        done.acquire()                  # released by the engine thread once fn has returned
        ok, value = box[0]
        if ok:
            return value
        raise value

    def stop(self) -> None:
        """The thread ends after the jobs already queued; later calls run where they are asked."""
        with self._lock:
            self._stopped = True
            self._jobs.put(None)
