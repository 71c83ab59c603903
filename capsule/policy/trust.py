"""Trust-before-load for project and role filter files: SHA-256 pins.

Responsible for pinning a file's exact bytes, listing and revoking pins, and reading a
pinned file once, returning only bytes whose hash matches its pin (no time-of-check /
time-of-use gap: the bytes hashed are the bytes parsed). Not responsible for parsing
filters (observe/filters/filter_engine.py). The pin store lives at capsule.ground.paths.trust_path().
Invariant: an unpinned, changed, unreadable or uncanonicalisable file is never returned;
a warning names it.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import stat
import tempfile
import time
from pathlib import Path

from capsule.ground import paths

_log = logging.getLogger("capsule")


class TrustError(ValueError):
    """A pin store or a file that cannot be trusted; the message names it."""


def canonical(path: str | os.PathLike) -> str:
    """Absolute, symlink-resolved path; fails closed (raises) when it cannot be resolved."""
    try:
        return str(Path(path).resolve(strict=True))
    except (OSError, RuntimeError) as exc:
        raise TrustError(f"{path}: cannot resolve path ({exc.__class__.__name__})") from None


def _store_path() -> Path:
    return paths.trust_path()


def load_pins() -> dict[str, dict]:
    store = _store_path()
    try:
        raw = store.read_bytes()
    except FileNotFoundError:
        return {}
    try:
        doc = json.loads(raw)
    except ValueError:
        raise TrustError(f"{store}: trust store is not valid JSON; fix or delete it") from None
    pins = doc.get("pins", {}) if isinstance(doc, dict) else None
    if not isinstance(pins, dict):
        raise TrustError(f"{store}: trust store has no 'pins' table; fix or delete it")
    return pins


def _save_pins(pins: dict[str, dict]) -> None:
    store = _store_path()
    store.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".trust-", dir=store.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump({"version": 1, "pins": pins}, fh, indent=2, sort_keys=True)
            fh.write("\n")
        os.replace(tmp, store)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


MAX_FILTER_BYTES = 1 << 20   # a filter file is a few KiB; anything near this is not one


def read_filter_file(path: str | os.PathLike) -> bytes:
    """The bytes of a regular file of at most MAX_FILTER_BYTES, from one descriptor.

    A FIFO, device (/dev/zero) or socket is refused without reading; so is a larger file.
    Raises OSError (with strerror set) for anything that cannot be a filter file."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)   # a FIFO must not block the open
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a device, FIFO or socket)")
        data = fh.read(MAX_FILTER_BYTES + 1)
    if len(data) > MAX_FILTER_BYTES:
        raise OSError(errno.EFBIG, f"larger than {MAX_FILTER_BYTES} bytes; not a filter file")
    return data


_read_once = read_filter_file


def pin(path: str | os.PathLike) -> tuple[str, str]:
    """Trust the file's current bytes. Returns (canonical path, sha256)."""
    where = canonical(path)
    try:
        data = _read_once(where)
    except OSError as exc:
        raise TrustError(f"{path}: cannot read ({exc.strerror or exc})") from None
    digest = hashlib.sha256(data).hexdigest()
    pins = load_pins()
    pins[where] = {"sha256": digest, "pinned_at": int(time.time()), "bytes": len(data)}
    _save_pins(pins)
    return where, digest


def revoke(path: str | os.PathLike) -> bool:
    """Forget a pin. Works for files that no longer exist. Returns whether one was removed."""
    pins = load_pins()
    try:
        key = canonical(path)
    except TrustError:
        key = str(Path(path).absolute())
    if key not in pins:
        return False
    del pins[key]
    _save_pins(pins)
    return True


def read_trusted(path: str | os.PathLike, pin: str | None = None) -> tuple[bytes | None, str | None]:
    """(bytes, sha256) when the file is pinned and unchanged, else (None, None) with a warning.

    `pin` is a SHA-256 the caller already holds (a role manifest's `[context.filters].extra`
    entry carries one); without it the pin comes from the trust store (`capsule ctx trust`).
    """
    try:
        where = canonical(path)
        entry = {"sha256": pin.lower()} if pin else load_pins().get(where)
    except TrustError as exc:
        _log.warning("filter file not loaded: %s", exc)
        return None, None
    if entry is None:
        _log.warning("filter file %s not loaded: not trusted (run: capsule ctx trust %s)", path, path)
        return None, None
    try:
        data = _read_once(where)
    except OSError as exc:
        _log.warning("filter file %s not loaded: unreadable (%s)", path, exc.strerror or exc)
        return None, None
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry.get("sha256"):
        _log.warning("filter file %s not loaded: changed since it was trusted "
                     "(review it, then %s)", path,
                     "update its sha256 in the role manifest" if pin else f"run: capsule ctx trust {path}")
        return None, None
    return data, digest
