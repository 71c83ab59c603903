"""Every module of capsule that logs holds a plain logging.getLogger("capsule.…") (the lazy stand-in
that kept logging out of a cold `ctx run` went with issue 32: the warm client loads no module that
logs, tests/cli/test_engine_daemon.py). Where the records go: tests/cli/test_cold_run.py."""

from __future__ import annotations

import importlib
import logging
import pkgutil

import capsule

SCRIPTS = ("_template", "migrations", "__main__")   # run by others (agents' homes, alembic, python -m), never imported


def _modules():
    for info in pkgutil.walk_packages(capsule.__path__, "capsule."):
        if not any(part in info.name for part in SCRIPTS):
            yield importlib.import_module(info.name)


def test_every_module_logger_is_a_plain_logging_logger():
    loggers = {f"{m.__name__}.{attr}": value for m in _modules() for attr, value in vars(m).items()
               if attr in ("log", "_log", "logger") and not isinstance(value, type(logging))}
    assert len(loggers) >= 10            # the engine, pipeline, filters, trust, doors, supervisor, proxy...
    stand_ins = {name: type(value).__name__ for name, value in loggers.items()
                 if not isinstance(value, logging.Logger)}
    assert stand_ins == {}
    assert all(value.name.startswith("capsule") for value in loggers.values())
