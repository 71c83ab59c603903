"""Logging for capsule's modules: records go to the state directory's log file (log_handlers.py),
never to the command's stdout or stderr.

Not responsible for the handlers (log_handlers.py) nor for what is logged.
Invariant: a run that logs nothing never imports logging (~6 ms of a cold `ctx run`): a Logger
looks its logging.Logger up on first use, and configure() installs the handlers then (at once
when logging is already imported); configuring twice is harmless.
Kept on purpose (issue 32 measured it again): the warm-engine client imports this module, and
`logging` at its top costs that client ~6 ms of CPU (bench_startup row "ctx run, warm engine",
target <= 60 ms over git); tests/cli/test_engine_daemon.py holds the warm client to importing no logging.
"""

from __future__ import annotations

import sys

_wanted = False


class Logger:
    """logging.getLogger(name), looked up on first use (with the handlers configure() asked for)."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str):
        import logging

        if _wanted:
            _install()
        return getattr(logging.getLogger(self._name), attr)


def get(name: str) -> Logger:
    return Logger(name)


def configure() -> None:
    """Send the "capsule" loggers' records to the log file, once logging is in use."""
    global _wanted
    _wanted = True
    if "logging" in sys.modules:      # something imported it: a record may come by another way
        _install()


def _install() -> None:
    from capsule.ground import log_handlers

    log_handlers.install()
