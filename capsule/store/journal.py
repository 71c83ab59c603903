"""What a running `ctx run` has captured, kept under the state dir until the user has been shown it.

Not responsible for showing output (cli/run.py, the compiled capture) nor for storing originals
(the archive). A `ctx run` killed with SIGKILL runs none of our code, so its command's bytes are
mirrored here as they arrive, best effort (a state dir that is read-only or full costs only this
safety net, never output): by the in-process run itself; for a run handed to the compiled capture,
by the warm engine, from the memory files the capture fills and empties once its output is shown
(keep(), supervisor/run_journal.py). The next `ctx run` archives the bytes of a run whose owner is
gone and names their handles on stderr.
What is written here has its secrets redacted first, like every byte capsule persists (issue 31):
complete lines through store/redact_stream.py, within FLUSH_S of their arrival (or at once, past
BATCH bytes); a partial line waits in memory for its end (bounded). The run's raw bytes, which the
agent is shown, are spooled by run.py outside the state dir.
Invariant: a journal is removed only after its output was written (or archived and named); no byte
reaches a journal file unredacted (JACKIN_CTX_NO_REDACT aside).
"""

from __future__ import annotations

import fcntl
import os
import threading
import time

from capsule.ground import paths

DIR = "journal"
STREAMS = ("stdout", "stderr")
FLUSH_S = 0.2           # how long captured bytes may wait in memory before the journal has them
BATCH = 64 << 10        # held bytes past which they are written without waiting for FLUSH_S


class Journal:
    """The files of one live run: NAME.cmd (the command line; flock'ed while the run lives) and
    NAME.stdout / NAME.stderr (the bytes so far, redacted). write() and end() come from the capture
    threads, a timer writes what waited FLUSH_S; every call is safe after discard()."""

    def __init__(self, state_dir, command: str, cwd: str | None = None):
        self.files: dict = {}       # stream -> an unbuffered write-only file
        self._redactors: dict = {}  # stream -> its StreamRedactor
        self._ended: set[str] = set()
        self._mutex = threading.Lock()
        self._timer = None
        self._lock = None
        self._base = None
        try:
            d = os.path.join(state_dir, DIR)
            paths.private_dir(d)
            base = os.path.join(d, f"{os.getpid()}-{time.time_ns()}")
            tmp = f"{base}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)        # held until we exit, however we exit
            # The command line redacted when it may hold a secret; loading the patterns costs a cold run
            # ~100 ms, so a command that cannot hold one is written as it is.
            from capsule.store import redact  # noqa: PLC0415 - bench_startup "ctx run, warm engine"

            line = redact.redacted(command) if redact.may_hold_secret(command) else command
            os.write(fd, f"{line}\n{os.getcwd() if cwd is None else cwd}\n".encode("utf-8", "surrogateescape"))
            os.rename(tmp, f"{base}.cmd")       # seen by recover() only once locked
            self._lock, self._base = fd, base
            from capsule.store.redact_stream import StreamRedactor  # noqa: PLC0415 - bench_startup "ctx run, warm engine"

            for s in STREAMS:
                fd = paths.open_private(f"{base}.{s}", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
                self.files[s] = open(fd, "wb", buffering=0)
                self._redactors[s] = StreamRedactor()
        except Exception:  # noqa: BLE001 - a read-only or full state dir, a redaction fault: no safety net
            self.discard()

    def write(self, stream: str, chunk: bytes) -> None:
        """Keep `chunk` of `stream`; its complete lines reach the file redacted within FLUSH_S."""
        with self._mutex:
            r = self._redactors.get(stream)
            if r is None:
                return
            r.feed(chunk)
            if r.held() >= BATCH:
                self._put(stream)
            if r.held():
                self._arm()

    def end(self, stream: str) -> None:
        """`stream` reached its end: what it still holds (a last partial line) is written too."""
        with self._mutex:
            self._ended.add(stream)
            r = self._redactors.get(stream)
            if r is not None and r.held():
                self._arm()

    def _arm(self) -> None:
        """(under the mutex) What is held now reaches the file within FLUSH_S."""
        if self._timer is None:
            self._timer = threading.Timer(FLUSH_S, self._tick)
            self._timer.daemon = True
            self._timer.start()

    def _tick(self) -> None:
        with self._mutex:
            self._timer = None
            for s in list(self._redactors):
                self._put(s)

    def _put(self, stream: str) -> None:
        """Append what `stream` has ready, redacted (under the mutex: all of it once the stream ended);
        a stream whose file cannot take it, or whose redaction failed, is dropped."""
        f, r = self.files.get(stream), self._redactors.get(stream)
        if f is None or r is None:
            return
        try:
            view = memoryview(r.rest() if stream in self._ended else r.ready())
            while view:
                view = view[f.write(view):]
        except Exception:  # noqa: BLE001 - a full disk, or a redaction fault: the safety net goes, never output
            self._drop(stream)

    def _drop(self, stream: str) -> None:
        """(under the mutex) This stream cannot be journalled (a full disk): its file goes."""
        self._redactors.pop(stream, None)
        f = self.files.pop(stream, None)
        if f is not None:
            f.close()
            _unlink(f"{self._base}.{stream}")

    def _stop_timer(self) -> None:
        """(under the mutex) No timed write of held lines from now on."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def close(self) -> None:
        """Write all that is held and let go of the files, which stay for recover() (a run that died)."""
        with self._mutex:
            self._stop_timer()
            for s in list(self.files):
                self._ended.add(s)
                self._put(s)
                f = self.files.pop(s, None)
                if f is not None:
                    f.close()
            self._redactors.clear()
            self._base = None
            if self._lock is not None:
                os.close(self._lock)
                self._lock = None

    def discard(self) -> None:
        """The output was shown (or the journal cannot be kept): remove it."""
        with self._mutex:
            self._stop_timer()
            for s in list(self.files):
                self._drop(s)
            self._redactors.clear()
            if self._base is not None:
                _unlink(f"{self._base}.cmd")
                self._base = None
            if self._lock is not None:
                os.close(self._lock)
                self._lock = None


def keep(state_dir, command: str, cwd: str, streams: dict) -> bool:
    """A run whose client died before showing its output: what it had captured (`streams`: name ->
    a readable binary file, from its start) journalled, redacted, for the next run's recover().
    False when there was nothing to keep (the client emptied them: its output was shown)."""
    sizes = {name: os.fstat(f.fileno()).st_size for name, f in streams.items()}
    if not any(sizes.values()):
        return False
    journal = Journal(state_dir, command, cwd)
    for name, f in streams.items():
        left = sizes[name]
        while left and (chunk := os.pread(f.fileno(), min(left, 1 << 20), sizes[name] - left)):
            journal.write(name, chunk)
            left -= len(chunk)
        journal.end(name)
    journal.close()
    return True


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def orphans(state_dir) -> list[str]:
    """The journals whose run is gone (its lock is free), as base paths, oldest first."""
    d = os.path.join(state_dir, DIR)
    try:
        names = sorted(n for n in os.listdir(d) if n.endswith(".cmd"))
    except OSError:
        return []
    out = []
    for n in names:
        base = os.path.join(d, n[:-4])
        try:
            fd = os.open(f"{base}.cmd", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            out.append(base)
        except OSError:
            pass                 # a live run holds it
        finally:
            os.close(fd)
    return out


def _command(base: str) -> str:
    """The command line of a journalled run, secrets redacted (the file holds it as typed)."""
    from capsule.store import redact  # noqa: PLC0415 - bench_startup "ctx run, warm engine"

    with open(f"{base}.cmd", "rb") as f:
        return redact.redacted(f.read().decode("utf-8", "surrogateescape").split("\n", 1)[0])


def describe(state_dir) -> list[dict]:
    """The killed runs still waiting in the journal (read only: for `ctx doctor`)."""
    out = []
    for base in orphans(state_dir):
        try:
            command = _command(base)
            sizes = {s: os.path.getsize(f"{base}.{s}") for s in STREAMS if os.path.exists(f"{base}.{s}")}
        except OSError:
            continue
        out.append({"command": command, "bytes": sizes, "journal": base})
    return out


def recover(state_dir) -> list[str]:
    """Archive what killed runs had captured; one line per stream for the user, naming its handle.
    A journal that cannot be archived stays for the next run."""
    notes = []
    for base in orphans(state_dir):
        try:
            notes += _recover_one(base)
        except Exception as exc:  # noqa: BLE001 - never let an old run cost this one its output
            notes.append(f"capsule: the output an interrupted run captured is kept in {base}.* "
                         f"(could not be archived: {exc})")
            continue
        for suffix in (*STREAMS, "cmd"):
            _unlink(f"{base}.{suffix}")
    return notes


def _recover_one(base: str) -> list[str]:
    import blake3  # noqa: PLC0415 - bench_startup "capsule ctx doctor"

    from capsule.store.archive import Archive  # noqa: PLC0415 - bench_startup "ctx run, warm engine"

    command = _command(base)
    notes = []
    archive = None
    for s in STREAMS:
        try:
            f = open(f"{base}.{s}", "rb")
        except OSError:
            continue
        with f:
            size = os.fstat(f.fileno()).st_size
            if not size:
                continue
            hasher = blake3.blake3()
            while chunk := f.read(1 << 20):
                hasher.update(chunk)
            if archive is None:
                archive = Archive(paths.state_dir() / paths.ARCHIVE_DB)
            handle = archive.put_file(f, size, hasher.hexdigest()[:24], command)
        notes.append(f"capsule: `{command}` was killed before its output was shown; the {size:,} bytes of "
                     f"{s} it had printed are kept: capsule ctx expand '<<ccr:{handle}>>'")
    if archive is not None:
        archive.close()
    return notes
