"""What a running `ctx run` has captured, kept under the state dir until the user has been shown it.

Not responsible for showing output (run.py) nor for storing originals (the archive). A `ctx run`
killed with SIGKILL runs none of our code, so its command's raw bytes are mirrored here as they
arrive, best effort (a state dir that is read-only or full costs only this safety net, never output);
the next `ctx run` archives the bytes of a run whose owner is gone and names their handles on stderr.
Invariant: a journal is removed only after its output was written (or archived and named).
"""

from __future__ import annotations

import fcntl
import os
import re
import time

from capsule.ground import paths

DIR = "journal"
STREAMS = ("stdout", "stderr")
# What every secret pattern of store/data/secrets.toml needs: a credential word (its [lines] words and
# the command-line forms), or a token of 16+ letters and digits (every token format).
_CREDENTIAL_WORD = re.compile(r"(?i)key|pw|pass|token|secret|auth|cred|bearer|://|curl|mysql|mariadb|-p\S")
_LONG_TOKEN = re.compile(r"[A-Za-z0-9_+=.-]{16,}")


def _maybe_secret(command: str) -> bool:
    if _CREDENTIAL_WORD.search(command):
        return True
    return any(any(c.isdigit() for c in m.group()) and any(c.isalpha() for c in m.group())
               for m in _LONG_TOKEN.finditer(command))


class Journal:
    """The files of one live run: NAME.cmd (the command line; flock'ed while the run lives) and
    NAME.stdout / NAME.stderr (the raw bytes so far; `ctx run` spools into them)."""

    def __init__(self, state_dir, command: str):
        self.files: dict = {}       # stream -> an unbuffered read/write file, the run's spool
        self._lock = None
        self._base = None
        try:
            d = os.path.join(state_dir, DIR)
            paths.private_dir(d)
            base = os.path.join(d, f"{os.getpid()}-{time.time_ns()}")
            tmp = f"{base}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)        # held until we exit, however we exit
            # The command line redacted when it may hold a secret (issue 31: a live run's journal kept it
            # as typed); loading the patterns costs a cold run ~100 ms, so a command with no credential
            # word and no long token is written as it is. Readers go through _command(), which redacts too.
            line = command
            if _maybe_secret(command):
                from capsule.store import redact

                line = redact.redacted(command)
            os.write(fd, f"{line}\n{os.getcwd()}\n".encode("utf-8", "surrogateescape"))
            os.rename(tmp, f"{base}.cmd")       # seen by recover() only once locked
            self._lock, self._base = fd, base
            for s in STREAMS:
                fd = paths.open_private(f"{base}.{s}", os.O_RDWR | os.O_CREAT | os.O_EXCL)
                self.files[s] = open(fd, "r+b", buffering=0)
        except OSError:
            self.discard()

    def drop(self, stream: str) -> None:
        """This stream cannot be journalled (a full disk): the run spools it elsewhere."""
        f = self.files.pop(stream, None)
        if f is not None:
            f.close()
            _unlink(f"{self._base}.{stream}")

    def discard(self) -> None:
        """The output was shown (or the journal cannot be kept): remove it."""
        for s in list(self.files):
            self.drop(s)
        if self._base is not None:
            _unlink(f"{self._base}.cmd")
            self._base = None
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None


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
    from capsule.store import redact

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
    import blake3

    from capsule.store.archive import Archive

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
                from capsule.ground import paths

                archive = Archive(paths.state_dir() / paths.ARCHIVE_DB)
            handle = archive.put_file(f, size, hasher.hexdigest()[:24], command)
        notes.append(f"capsule: `{command}` was killed before its output was shown; the {size:,} bytes of "
                     f"{s} it had printed are kept: capsule ctx expand '<<ccr:{handle}>>'")
    if archive is not None:
        archive.close()
    return notes
