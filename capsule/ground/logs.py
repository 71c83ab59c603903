"""Logging for capsule's modules: records go to the state directory's log file (log_handlers.py),
never to the command's stdout or stderr.

Not responsible for the handlers (log_handlers.py) nor for what is logged.
Invariant: a run that logs nothing never imports logging (~6 ms of a cold `ctx run`): a Logger
looks its logging.Logger up on first use, and configure() installs the handlers then (at once
when logging is already imported); configuring twice is harmless.
Kept on purpose (issue 23 removed the other cold-path tricks): every `ctx run` would pay it, the
bench_startup row "capsule ctx run -- true" has a 50 ms target (~40 ms at the end of issue 23), and
tests/cli/test_cold_run.py holds a run that logs nothing to importing no logging.
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
