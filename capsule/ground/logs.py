"""Logging for capsule's modules: records go to the state directory's log file (log_handlers.py),
never to the command's stdout or stderr.

Not responsible for the handlers (log_handlers.py) nor for what is logged.
Invariant: configuring twice is harmless. (The lazy Logger proxy that kept `logging` out of a
cold `ctx run` is gone, issue 32: `ctx run` talks to a warm engine.)
"""

from __future__ import annotations

import logging

from capsule.ground import log_handlers


def get(name: str) -> logging.Logger:
    return logging.getLogger(name)


def configure() -> None:
    """Send the "capsule" loggers' records to the log file."""
    log_handlers.install()
