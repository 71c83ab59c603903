"""`capsule ctx run -- CMD` and `CMD | capsule ctx pipe`: the embedded doors.

With a warm engine reachable, `ctx run` execs the shims' compiled capture (cli/warm.py), which speaks
the socket protocol; what follows is the in-process run, when there is none (or JACKIN_CTX_NO_DAEMON=1).
Not responsible for shrinking (the engine does). Runs the real command with stdin passed
through, stdout and stderr captured separately, signals forwarded (without a terminal, to the
command's whole process group, so grandchildren holding the pipes stop too). A command still
running after JACKIN_CTX_STREAM_AFTER seconds shows what it has and streams the rest raw (as the
shims do); a background job still holding the output when the command exits gets it copied on raw
by a child of ours, and the command's status returns at once (docs/shell-protocol.md's fail-open
rules); what is captured is journalled under the state dir (store/journal.py) until it is shown.
Invariant (INV-4): the exit status is the command's, or 128+n when it died of signal n; a
terminating signal that arrives after the command is gone is ours, and ends us with 128+n.
"""

from __future__ import annotations

import os
import select
import shlex
import signal
import subprocess
import sys
import threading
import time

from capsule.ground.errors import UserError
from capsule.ground.types import Observation
from capsule.ground import switches

SPOOL_MEMORY = 8 << 20
FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGWINCH)
INTENT_HELP = ("the step's goal, used by intent-aware transforms; one over 128 tokens is shortened to its "
               "first and last words (about 64 tokens each, joined by ' … '), with one warning, never an error")
TERMINATING = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
HANDOVER_GRACE_S = 0.1      # after the command exits, what it left in the pipes arrives within this
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

    warm.hand_over(argv, intent, own_group=not _has_terminal())    # a warm engine: exec, no return
    return run_and_observe(argv, intent=intent)


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


class _Capture:
    """One stream of a running command: spooled (raw, outside the state dir) and mirrored into the
    run's journal (redacted, journal.py) until the output is emitted, or, once the command has run
    too long, written straight through to the user."""

    def __init__(self, name: str, pipe, out, journal, wake: int, done: threading.Event):
        import blake3

        self.name, self.pipe, self.out, self.journal = name, pipe, out, journal
        self.wake, self.done, self.stopped = wake, done, False
        self.spool = _temporary_spool()
        self.size = 0
        self.hasher = blake3.blake3()
        self.lock = threading.Lock()
        self.live = False
        self.thread = threading.Thread(target=self._copy, daemon=True)
        self.thread.start()

    def _copy(self) -> None:
        try:
            self._copy_until_eof()
        finally:
            self.done.set()

    def _chunks(self):
        """The pipe's chunks until EOF, or until stop() (then the pipe stays open for hand_over)."""
        fd = self.pipe.fileno()
        poll = select.poll()
        poll.register(fd, select.POLLIN)
        poll.register(self.wake, select.POLLIN)
        while True:
            ready = {f for f, _ in poll.poll()}
            if self.wake in ready:
                self.stopped = True
                return
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                self.pipe.close()
                self.journal.end(self.name)
                return
            yield chunk

    def _copy_until_eof(self) -> None:
        for chunk in self._chunks():
            with self.lock:
                if self.live:
                    self._show(chunk)
                    continue
                try:
                    _write_all(self.spool, chunk)
                except Exception:  # noqa: BLE001 - nowhere to hold it: show it raw, never block the command
                    self._go_live()
                    self._show(chunk)
                    continue
                self.size += len(chunk)
                self.hasher.update(chunk)
                self.journal.write(self.name, chunk)

    def go_live(self) -> None:
        """Show what was held, then everything as it comes (raw)."""
        with self.lock:
            self._go_live()

    def _go_live(self) -> None:
        if self.live:
            return
        self.live = True
        left = self.size
        try:
            self.spool.seek(0)
            while left and (chunk := self.spool.read(min(left, 1 << 20))):
                self._show(chunk)
                left -= len(chunk)
            self.spool.close()
        except (OSError, ValueError):   # a spool that failed (closed, unreadable): show what came after
            pass

    def _show(self, chunk: bytes) -> None:
        try:
            self.out.write(chunk)
            self.out.flush()
        except OSError:     # the reader left; keep draining the command's pipe
            pass


def _go_live(captures: list[_Capture], journal, live: bool) -> bool:
    """Show what each capture holds and the rest as it comes (raw); the journal is no longer needed."""
    if not live:
        for c in captures:
            c.go_live()
        journal.discard()
    return True


def _hand_over(captures: list[_Capture], wake_w: int) -> None:
    """A background job still holds the command's pipes: the capture threads stop reading, and a
    child of ours copies what the job writes on to our stdout/stderr, raw, until it lets go; we
    return the command's status at once, as the shell expects (no fork: we copy, and wait)."""
    os.write(wake_w, b"x")
    for c in captures:
        c.thread.join()
    held = {c.pipe.fileno(): c.out.fileno() for c in captures if c.stopped}
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        pid = os.fork()
    except OSError:
        pid = -1
    if pid <= 0:
        if pid == 0:
            for sig in (*FORWARDED, signal.SIGINT):
                signal.signal(sig, signal.SIG_DFL)
        _copy_raw(held)
        if pid == 0:
            os._exit(0)
    for c in captures:
        if c.stopped:
            c.pipe.close()


def _copy_raw(held: dict[int, int]) -> None:
    """Copy each pipe (key) to its output fd (value) until every pipe has closed."""
    poll = select.poll()
    for fd in held:
        poll.register(fd, select.POLLIN)
    try:
        while held:
            for fd, _ in poll.poll():
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    poll.unregister(fd)
                    del held[fd]
                    continue
                view = memoryview(chunk)
                while view:
                    view = view[os.write(held[fd], view):]
    except OSError:     # the reader left: nothing more to copy to
        pass


def _temporary_spool():
    import tempfile

    return tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY)


def _write_all(f, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[f.write(view):]


def run_and_observe(argv: list[str], intent: str | None = None) -> int:
    from capsule.ground import paths
    from capsule.store import journal as journals

    command = shlex.join(argv)
    start = time.perf_counter()
    state = paths.state_dir()
    at_terminal = _has_terminal()
    wake_r, wake_w = os.pipe()           # written once: the capture threads stop reading (hand_over)
    try:
        # Without a terminal the command leads its own process group, so a forwarded signal
        # reaches everything it started; with one it stays in ours, where job control (Ctrl-C,
        # the foreground group) already reaches all of it, and where it may still prompt on
        # /dev/tty (a background group reading the terminal would be stopped by SIGTTIN).
        child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 process_group=None if at_terminal else 0)
    except OSError as exc:
        return _launch_failed(argv, exc)
    ours = _forward_signals(child, own_group=not at_terminal)
    journal = journals.Journal(state, command)
    changed = threading.Event()          # a capture reached EOF, or the command exited
    captures = [_Capture(name, pipe, out.buffer, journal, wake_r, changed)
                for name, pipe, out in (("stdout", child.stdout, sys.stdout), ("stderr", child.stderr, sys.stderr))]
    waiter = threading.Thread(target=lambda: (child.wait(), changed.set()), daemon=True)
    waiter.start()
    after = switches.stream_after()
    deadline = None if after <= 0 else start + after
    live = False
    while any(c.thread.is_alive() for c in captures):
        changed.clear()
        if child.returncode is not None:
            # The command is gone: what it left in the pipes arrives at once; a pipe still open
            # after that is held by a background job (`make serve`'s server).
            for c in captures:
                c.thread.join(HANDOVER_GRACE_S)
            if any(c.thread.is_alive() for c in captures):
                live = _go_live(captures, journal, live)
                _hand_over(captures, wake_w)
            break
        if not live and deadline is not None and time.perf_counter() >= deadline:
            live = _go_live(captures, journal, live)    # still running: a dev server or a long build must not look dead
        changed.wait(None if live or deadline is None else max(0.0, deadline - time.perf_counter()))
    rc = child.wait()
    _stop_forwarding(ours)
    status = 128 - rc if rc < 0 else rc
    if live:
        return status
    duration_ms = (time.perf_counter() - start) * 1000
    try:
        intent = check_intent(intent)
        for c in captures:
            _emit(c.spool, c.hasher.hexdigest()[:24], c.name, c.out, command, status, duration_ms, intent)
    finally:    # shown, or the reader left: only a process killed outright leaves its journal
        journal.discard()
    _drain()
    return status


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


def _gone(child: subprocess.Popen) -> bool:
    """Has the command exited (reaped, or a zombie waiting to be)? Never reaps it."""
    if child.returncode is not None:
        return True
    try:
        return os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except (ChildProcessError, AttributeError, OSError):
        return child.returncode is not None


def _forward_signals(child: subprocess.Popen, own_group: bool) -> list[int]:
    """Install the forwarding handlers. Returns a list that receives a terminating signal that
    arrived when the command was already gone: that one was meant for us."""
    ours: list[int] = []

    def forward(signum, _frame):
        if signum in TERMINATING and _gone(child) and not ours:
            ours.append(signum)
        if signum == signal.SIGINT and not own_group:
            return   # at a terminal, Ctrl-C already reached the whole foreground group
        try:
            if own_group:
                os.killpg(child.pid, signum)   # the group outlives its leader while members hold the pipes
            elif child.returncode is None:
                os.kill(child.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    for sig in (*FORWARDED, signal.SIGINT):
        signal.signal(sig, forward)
    return ours


def _stop_forwarding(ours: list[int]) -> None:
    """The command is gone: signals are ours again (default actions), and one that came in
    after it left ends us now, as it would have without capsule in between."""
    for sig in (*FORWARDED, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)
    if ours:
        os.kill(os.getpid(), ours[0])


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
