"""The `capsule` command: a thin door that parses arguments and calls the engine.

Not responsible for any engine behaviour. Each command group lives in its own module
with a `register(subparsers)` function; add a module to COMMAND_MODULES to add a group.
Invariant: bad usage exits 2 with a message naming the problem; no traceback for user errors.
"""

from __future__ import annotations

import importlib
import os
import sys

from capsule import __version__
from capsule.ground.errors import UserError

# Each module exposes register(subparsers) and sets args.func(args) -> int.
COMMAND_MODULES = [
    "capsule.cli.mcp",
    "capsule.cli.index_cmd",
    "capsule.cli.ctx",
    "capsule.cli.runtime",
    "capsule.cli.proxy",
    "capsule.cli.fleet",
    "capsule.cli.statusline_cmd",
]


# `capsule ctx run|pipe` starts on every tool call of an agent: its parser registers only the
# module of that command (the others import ~40 ms of modules it never uses). Its usage, help
# and error messages are the same as in the whole parser (argparse names it "capsule ctx run").
FAST_COMMANDS = {("ctx", "run"): "capsule.cli.run", ("ctx", "pipe"): "capsule.cli.run"}
# `capsule supervise` is the image's PID 1: its parser registers only its own group, whose module it
# imports anyway (the other groups are ~30 ms of imports before its socket answers, issue 32).
FAST_GROUPS = {"supervise": "capsule.cli.runtime"}


def build_parser(argv: list[str] | None = None):
    """The whole parser (cli/parser.Parser); with argv naming a FAST_COMMANDS entry, only what parses
    that command."""
    from capsule.cli.parser import Parser  # noqa: PLC0415 - bench_startup "capsule statusline"; `capsule statusline` runs without argparse

    if argv and argv[0] == "statusline":   # runs after each message of a Claude Code session: its module alone
        parser = Parser(prog="capsule")
        importlib.import_module("capsule.cli.statusline_cmd").register(parser.add_subparsers(dest="command"))
        return parser
    fast = FAST_COMMANDS.get(tuple(argv[:2])) if argv else None
    parser = Parser(
        prog="capsule",
        description="Context engine for AI coding agents: shrinks tool output once, "
        "never hides an error, keeps every original recoverable.",
    )
    parser.add_argument("--version", action="version", version=f"capsule {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    if fast:
        importlib.import_module("capsule.cli.ctx").register(sub, only=fast)
        return parser
    group = FAST_GROUPS.get(argv[0]) if argv else None
    if group:
        importlib.import_module(group).register(sub)
        return parser
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv_list = sys.argv[1:] if argv is None else argv
    if argv_list == ["statusline"]:       # after each message of a Claude Code session: no parser at all
        from capsule.cli.statusline_cmd import cmd_statusline  # noqa: PLC0415 - bench_startup "ctx run cold, no engine"

        return cmd_statusline(None)
    parser = build_parser(argv_list)
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    func = args.func
    try:
        return int(func(args) or 0)
    except UserError as exc:
        print(f"capsule: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:       # the reader left (`| head`): the rest is not wanted, nothing to say
        _quiet_stdout()
        return 0
    except Exception as exc:  # a state store that is corrupt, read-only or locked: one line, exit 2
        message = _store_failure(exc)
        if message is None:
            raise
        print(f"capsule: {message}", file=sys.stderr)
        return 2


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush of what is still buffered for the
    closed pipe fails nowhere (it would print `Exception ignored ... BrokenPipeError`)."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _store_failure(exc: Exception) -> str | None:
    """The message for a failure of a state database (apsw), else None (a bug: let it show)."""
    from capsule.store.sqlite import StoreError  # noqa: PLC0415 - bench_startup "capsule --help"

    if isinstance(exc, StoreError):
        return str(exc)
    if type(exc).__module__ == "apsw":
        return (f"a state database failed ({type(exc).__name__}: {exc}); `capsule ctx doctor` names the "
                f"file, or move the state dir aside")
    if type(exc).__module__ == "lmdb":
        return (f"the workspace index's metadata cannot be used ({exc}); the state dir is read-only or "
                f"the index is damaged: set JACKIN_CTX_STATE_DIR to a writable directory, or delete the "
                f"index directory named there (it is rebuilt)")
    return None
