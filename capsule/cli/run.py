"""`capsule ctx run -- CMD` and `CMD | capsule ctx pipe`: the embedded doors.

`ctx run` captures nothing itself: it becomes a capture that speaks the socket protocol
(docs/shell-protocol.md), the one the shims run, against a warm engine when one is reachable
(cli/warm.py), else against its own, served by a child of the run (cli/own_engine.py). The capture
runs the command (stdin passed through, stdout and stderr held apart, signals forwarded, a long run
streamed raw, a background job handed over) and exits with its status. `ctx pipe` shrinks stdin here.
Not responsible for shrinking (the engine does). Invariant (INV-4): the exit status is the command's,
or 128+n when it died of signal n (the capture's own); with no capture to become, the command runs raw.
"""

from __future__ import annotations

import os
import sys

from capsule.ground.errors import UserError
from capsule.ground.types import Observation
from capsule.ground import switches

SPOOL_MEMORY = 8 << 20
INTENT_HELP = ("the step's goal, used by intent-aware transforms; one over 128 tokens is shortened to its "
               "first and last words (about 64 tokens each, joined by ' … '), with one warning, never an error")
# An intent of at most this many UTF-8 bytes is under observe.types.MAX_INTENT_TOKENS (no token is
# shorter than a byte): a warm engine gets it as it is, and the run loads no tokenizer to check it.
INTENT_SAFE_BYTES = 128


def register(sub) -> None:
    run = sub.add_parser(
        "run", help="run a command and shrink its output",
        description="Run CMD, then emit its stdout and stderr (separately) through the engine. "
        "Errors are never hidden; the exit status is CMD's own (128+n on signal n). "
        "JACKIN_CTX_DISABLE=1: pure passthrough. JACKIN_CTX_MEASURE_ONLY=1: output untouched, savings recorded.")
    run.add_argument("--intent", help=INTENT_HELP)
    run.add_argument("argv", nargs=argparse_remainder(), metavar="-- CMD [ARGS…]")
    run.set_defaults(func=cmd_run)

    pipe = sub.add_parser(
        "pipe", help="shrink stdin as if it were a command's output",
        description="Read stdin and write the engine's emission to stdout. With --cmd, the command "
        "line decides the transform; without it, the first KiB of content does.")
    pipe.add_argument("--cmd", help='the command line that produced the input, e.g. "git log"')
    pipe.add_argument("--intent", help=INTENT_HELP)
    pipe.set_defaults(func=cmd_pipe)


def argparse_remainder():
    import argparse

    return argparse.REMAINDER


def cmd_run(args) -> int:
    argv = list(args.argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise UserError("ctx run: no command given; usage: capsule ctx run -- CMD [ARGS…]")
    if switches.is_on(switches.DISABLE):
        return _exec_passthrough(argv)
    from capsule.store import journal as journals
    from capsule.ground import paths

    for note in journals.recover(paths.state_dir()):   # what earlier runs killed before showing it had captured
        print(note, file=sys.stderr, flush=True)
    intent = args.intent
    if intent is not None and len(intent.encode("utf-8", "surrogateescape")) > INTENT_SAFE_BYTES:
        intent = check_intent(intent)       # may be over the limit: shortened here, with its warning
    from capsule.cli import warm

    own_group = not _has_terminal()
    warm.hand_over(argv, intent, own_group)     # a warm engine: exec, no return
    from capsule.cli import own_engine

    own_engine.serve(argv, intent, own_group)   # the run's own engine: exec, no return
    return _exec_passthrough(argv)              # neither could start: the command raw (fail open)


def _exec_passthrough(argv: list[str]) -> int:
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        return _launch_failed(argv, exc)


def _launch_failed(argv: list[str], exc: OSError) -> int:
    """The shell's own statuses: 127 not found, 126 found but not runnable."""
    if isinstance(exc, FileNotFoundError):
        print(f"capsule: {argv[0]}: command not found", file=sys.stderr)
        return 127
    print(f"capsule: {argv[0]}: {exc.strerror or 'cannot run'}", file=sys.stderr)
    return 126


def _copy(pipe, spool, hasher) -> None:
    while chunk := pipe.read1(1 << 16):
        spool.write(chunk)
        hasher.update(chunk)
    pipe.close()


def _temporary_spool():
    import tempfile

    return tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY)


def _emit(spool, digest, stream, out, command, status, duration_ms, intent) -> None:
    size = spool.tell()
    if size == 0:
        return
    data, notice = None, None
    try:
        from capsule.ground import log_handlers  # noqa: PLC0415 - bench_startup "ctx run, warm engine": the warm client, which loads this module, imports no logging
        log_handlers.install()
        em = _engine().observe(Observation(spool=spool, size=size, digest=digest, command=command, stream=stream,
                                           exit_code=status, duration_ms=duration_ms, intent=intent))
        data, notice = em.data or None, em.notice
    except Exception as exc:  # noqa: BLE001 - whatever happened, the agent gets the raw output
        import logging  # noqa: PLC0415 - bench_startup "ctx run, warm engine", as above

        logging.getLogger("capsule.run").warning("engine failed on %s of %r: %r; raw output passed through",
                                                 stream, command, exc)
        data = None
    out.flush()
    if data is not None:
        out.write(data)
    else:
        spool.seek(0)
        while chunk := spool.read(1 << 20):
            out.write(chunk)
    out.flush()
    # After the output, once per run (both streams fail alike): the engine's line to the user (a full
    # state volume, which the log cannot hold); a transform's own warnings are in the log file only.
    if notice is not None and notice not in _SHOWN:
        _SHOWN.add(notice)
        print(notice, file=sys.stderr, flush=True)


_SHOWN: set[str] = set()


_ENGINE = None


def _engine():
    global _ENGINE
    if _ENGINE is None:
        from capsule.engine import Engine

        _ENGINE = Engine()
        _ENGINE.defer = True    # rows are recorded by _drain(), after the output is written
    return _ENGINE


def _drain() -> None:
    """Count and record what the engine deferred, once the agent has its output: in a detached
    finisher, so the agent's call ends now (ledger readers wait for it: store/finisher.py)."""
    engine = _ENGINE
    if engine is None or not engine.pending():
        return
    from capsule.store import finisher

    sys.stdout.flush()
    sys.stderr.flush()
    unindexed = engine.close_stores()      # no SQLite connection may cross the finisher's fork

    def finish(detached: bool = True) -> None:
        engine.reopen_stores(unindexed)    # the full-text rows the parent deferred
        engine.drain(patient=True)         # the agent has its output: wait out any other writer
        if detached:                       # nobody waits on a detached finisher: the stores' retention
            from capsule.store import retention

            retention.prune_all(engine.state_dir, min_interval_s=retention.settings()["interval_s"])

    if not finisher.detach(engine.state_dir, finish):
        finish(detached=False)


def _has_terminal() -> bool:
    """Does this process have a controlling terminal (stdin a tty, or /dev/tty openable)?"""
    if sys.stdin is not None and sys.stdin.isatty():
        return True
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:
        return False
    os.close(fd)
    return True


def check_intent(intent: str | None) -> str | None:
    """The intent to use: an over-long one is shortened (observe/intent.py), with one warning on
    stderr; never an error — the output matters more than the goal stated for it."""
    if intent is None:
        return None
    try:
        from capsule.observe.intent import shorten
        from capsule.observe.transform_types import MAX_INTENT_TOKENS

        short, cut = shorten(intent)
    except Exception:  # noqa: BLE001 - no intent is better than no output
        return None
    if cut:
        print(f"capsule: --intent is over {MAX_INTENT_TOKENS} tokens; using its first and last words "
              f"({MAX_INTENT_TOKENS // 2} tokens each)", file=sys.stderr)
    return short


def cmd_pipe(args) -> int:
    """Standard input through the engine, spooled like a command's output (bounded memory: a large
    input takes the streaming path, and raw input is copied through, never held whole)."""
    import blake3

    intent = check_intent(args.intent)
    out = sys.stdout.buffer
    if switches.is_on(switches.DISABLE):
        while chunk := sys.stdin.buffer.read1(1 << 16):
            out.write(chunk)
        return 0
    spool = _temporary_spool()
    hasher = blake3.blake3()
    _copy(sys.stdin.buffer, spool, hasher)
    _emit(spool, hasher.hexdigest()[:24], "content" if not args.cmd else "stdout", out, args.cmd, None, None,
          intent)
    _drain()
    return 0
