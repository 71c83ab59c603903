"""Logging: structlog JSON lines into the state directory, never to the command's stdout.

Not responsible for what is logged. Invariant: configuring twice is harmless, and a log
file that cannot be opened silently disables file logging rather than failing the caller.
"""

from __future__ import annotations

import logging

_configured = False


def configure() -> None:
    global _configured
    if _configured:
        return
    _configured = True
    import structlog

    from capsule import paths

    try:
        handler: logging.Handler = logging.FileHandler(paths.log_path(), encoding="utf-8")
    except OSError:
        handler = logging.NullHandler()
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        processor=structlog.processors.JSONRenderer(),
        foreign_pre_chain=[structlog.processors.TimeStamper(fmt="iso"), structlog.stdlib.add_log_level],
    ))
    root = logging.getLogger("capsule")
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    root.propagate = False
