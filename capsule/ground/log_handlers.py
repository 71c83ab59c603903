"""Where the records of capsule's modules go outside the supervisor: structlog JSON lines into the state
directory, never to the command's stdout or stderr. Modules hold plain logging.getLogger("capsule.…")
loggers; the in-process `ctx run` and the engine daemon call install() before the engine runs.

Not responsible for what is logged, nor for the supervisor's log (supervisor/log_setup.py).
Invariant: installing twice is harmless; a log file that cannot be opened silently disables file
logging rather than failing the caller; a log write that fails (disk full, file gone) is dropped
without a word on the user's streams (no "--- Logging error ---"); structlog and the file are set
up on the first record.
"""

from __future__ import annotations

import logging
import os

from capsule.ground import paths

_configured = False


class QuietFileHandler(logging.FileHandler):
    """A file handler whose failures stay silent: logging must never write on the user's stderr."""

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        pass


class _FirstUseHandler(logging.Handler):
    """Opens the JSON-lines file handler when the first record arrives."""

    def __init__(self) -> None:
        super().__init__()
        self._inner: logging.Handler | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if self._inner is None:
                self._inner = _file_handler()
            self._inner.handle(record)
        except Exception:  # noqa: BLE001 - a failing log write is dropped, never shown
            pass

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802
        pass


def _file_handler() -> logging.Handler:
    import structlog  # noqa: PLC0415 - bench_startup "ctx run cold, no engine": a run that logs nothing never loads it

    try:
        log = paths.log_path()
        os.close(paths.open_private(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND))   # owner-only before logging opens it
        handler: logging.Handler = QuietFileHandler(log, encoding="utf-8")
    except OSError:
        return logging.NullHandler()
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        processor=structlog.processors.JSONRenderer(),
        foreign_pre_chain=[structlog.processors.TimeStamper(fmt="iso"), structlog.stdlib.add_log_level],
    ))
    return handler


def install() -> None:
    global _configured
    if _configured:
        return
    _configured = True
    root = logging.getLogger("capsule")
    root.handlers[:] = [_FirstUseHandler()]
    root.setLevel(logging.INFO)
    root.propagate = False
