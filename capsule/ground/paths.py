"""Where capsule keeps things: the one place every path is decided.

Not responsible for creating anything except the state directory itself (and its owner-only
helpers below, which every writer under it uses).
Invariant: every module asks here; no other module spells a state path; whatever capsule creates
under the state dir is owner-only (0700 dirs, 0600 files) whatever the umask.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from capsule.ground import switches

CONTAINER_STATE_DIR = Path("/state/context")
CONTAINER_SHIM_DIR = Path("/opt/capsule/shims")
ARCHIVE_DB = "archive.db"
LEDGER_DB = "ledger.db"
USAGE_DB = "usage.db"
STUBS_FILE = "stubs.json"
INDEX_DIR = "index"
LOG_FILE = "capsule.log"
SOCKET_NAME = "engine.sock"
TRUST_FILE = "trusted_filters.json"
PROXY_DB = "proxy.db"          # the proxy door's memo of rewritten tool results (INV-1)
PROXY_STATE = "proxy.json"     # the running proxy's address and upstreams, for doctor
BOUNDARIES_FILE = "boundaries.jsonl"   # task boundaries appended by client hooks; the route log reads them
PRIVATE_DIR = 0o700            # originals, rewritten requests and commands are the user's alone
PRIVATE_FILE = 0o600


def state_dir() -> Path:
    """$JACKIN_CTX_STATE_DIR, else /state/context inside the container, else XDG state."""
    explicit = os.environ.get(switches.STATE_DIR)
    if explicit:
        path = Path(explicit)
    elif CONTAINER_STATE_DIR.is_dir() and os.access(CONTAINER_STATE_DIR, os.W_OK):
        path = CONTAINER_STATE_DIR
    else:
        xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        path = Path(xdg) / "capsule"
    if not path.is_dir():
        private_dir(path)     # an existing dir is the user's choice: doctor reports it if others can read it
    return path


def private_dir(path) -> Path:
    """`path` (and missing parents) created 0700; an existing one of ours tightened to 0700."""
    path = Path(path)
    path.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    tighten(path)       # umask 0 or an older capsule's 0755
    return path


def tighten(path) -> None:
    """Drop group/other bits from a file or dir of ours (a store an older capsule left 0644);
    best effort: a read-only state dir or someone else's file stays as it is."""
    try:
        st = os.stat(path)
        if st.st_mode & 0o077 and st.st_uid == os.geteuid():
            os.chmod(path, st.st_mode & 0o700)
    except OSError:
        pass


def open_private(path, flags: int = os.O_WRONLY | os.O_CREAT | os.O_TRUNC) -> int:
    """os.open with 0600 for a new file, and an existing one tightened."""
    fd = os.open(path, flags | os.O_CLOEXEC, PRIVATE_FILE)
    try:
        st = os.fstat(fd)
        if st.st_mode & 0o077 and st.st_uid == os.geteuid():
            os.fchmod(fd, st.st_mode & 0o700)
    except OSError:
        pass
    return fd


def write_private(path, data: bytes | str) -> None:
    """Write a whole file owner-only, atomically (tmp + rename)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)        # a full volume keeps no half-written file
        raise


def archive_path() -> Path:
    return state_dir() / ARCHIVE_DB


def ledger_path() -> Path:
    return state_dir() / LEDGER_DB


def usage_path() -> Path:
    """Per-call token usage from transcripts and the proxy (capsule.measure.usage)."""
    return state_dir() / USAGE_DB


def stubs_path() -> Path:
    return state_dir() / STUBS_FILE


def index_dir() -> Path:
    return state_dir() / INDEX_DIR


def log_path() -> Path:
    return state_dir() / LOG_FILE


def socket_path() -> Path:
    """The supervisor's control socket; $JACKIN_CTX_SOCKET overrides."""
    explicit = os.environ.get(switches.SOCKET)
    return Path(explicit) if explicit else state_dir() / SOCKET_NAME


def daemon_socket(env=None) -> Path:
    """The engine daemon's socket for these settings (cli/warm.py, supervisor/daemon.py): one daemon per
    state dir and set of JACKIN_CTX_ variables (the engine reads them; the per-call ones excepted),
    interpreter and capsule installation. A short name: a Unix socket path has ~107 bytes."""
    import blake3  # noqa: PLC0415 - bench_startup "capsule --help"; a dependency the run's capture loads anyway; hashlib would load OpenSSL (~10 ms)

    env = os.environ if env is None else env
    settings = sorted((k, v) for k, v in env.items() if k.startswith("JACKIN_CTX_") and k not in switches.PER_CALL)
    key = repr((settings, sys.prefix, sys.version, str(Path(__file__).resolve().parents[1]))).encode(
        "utf-8", "surrogateescape")
    return state_dir() / f"d-{blake3.blake3(key).hexdigest()[:12]}.sock"


def daemon_capture(sock) -> Path:
    """The compiled capture the engine daemon on `sock` builds beside it (`capsule ctx run` execs it)."""
    return Path(str(sock)).with_suffix(".capture")


def trust_path() -> Path:
    return state_dir() / TRUST_FILE


def proxy_db_path() -> Path:
    return state_dir() / PROXY_DB


def proxy_state_path() -> Path:
    return state_dir() / PROXY_STATE


def project_of(cwd) -> str | None:
    """The project a command ran in: the nearest folder from `cwd` up that holds `.git`, else `cwd`
    itself (the ledger's `project`, for `ctx gain --by project`); None without a cwd."""
    if not cwd:
        return None
    here = Path(cwd)
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return str(folder)
    return str(here)
