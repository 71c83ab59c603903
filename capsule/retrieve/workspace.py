"""The workspace a read door serves: its root, which paths are inside it, which files it holds.

Not responsible for reading or indexing content.
Invariant: no path that resolves (symlinks included) outside the root is ever opened, and a file
ignored by .gitignore is never listed. Files are opened by a walk from the root that follows no
symlink (so a link swapped in after the check cannot redirect the read) and must be regular files.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import re
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

ALWAYS_SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", ".tox", ".mypy_cache",
                    ".pytest_cache", ".ruff_cache"}
MAX_INDEX_BYTES = 1 << 20     # larger files are not indexed (they are rarely source)


class WorkspaceError(ValueError):
    """A path the workspace will not serve: outside it, missing, or not a readable text file."""


def resolve(root: Path, path: str) -> Path:
    """The real path of `path` (relative to root, or absolute), refusing anything outside root."""
    if not path or "\0" in path:
        raise WorkspaceError("empty path; give a file path relative to the workspace")
    root = Path(root).resolve()
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = root / candidate
    try:
        real = Path(os.path.realpath(candidate))
    except OSError as exc:   # a link changed while it was being resolved
        raise WorkspaceError(f"{path} changed while being resolved ({exc.strerror}); retry") from None
    if real != root and root not in real.parents:
        raise WorkspaceError(f"path outside the workspace: {path} (workspace is {root})")
    if not real.exists():
        raise WorkspaceError(f"no such file in the workspace: {path}")
    if real.is_dir():
        raise WorkspaceError(f"{path} is a directory; give a file (ctx_search finds files)")
    return real


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused right after, by type.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def open_inside(root: Path, real: Path, shown: str) -> int:
    """A read-only descriptor of the regular file `real` (a resolved path under root).

    Each component is opened relative to its parent's descriptor with O_NOFOLLOW, so a component
    swapped for a symlink between resolve() and here fails the open instead of leaving the root."""
    root = Path(root).resolve()
    parts = Path(real).relative_to(root).parts
    if not parts:
        raise WorkspaceError(f"{shown} is a directory; give a file (ctx_search finds files)")
    dir_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            nxt = os.open(part, _DIR_FLAGS, dir_fd=dir_fd)
            os.close(dir_fd)
            dir_fd = nxt
        fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        raise WorkspaceError(f"no such file in the workspace: {shown}") from None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise WorkspaceError(f"{shown} changed into a link while being opened; not read (retry)") from None
        raise
    finally:
        os.close(dir_fd)
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        what = "directory" if stat.S_ISDIR(mode) else "FIFO, device or socket"
        raise WorkspaceError(f"{shown} is a {what}, not a regular file; ctx_read serves files")
    return fd


def read_inside(root: Path, real: Path, shown: str, limit: int) -> bytes:
    """At most `limit` bytes of a regular file under root, read from one no-follow descriptor;
    a file larger than `limit` raises WorkspaceError naming its size."""
    fd = open_inside(root, real, shown)
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > limit:
            raise WorkspaceError(f"{shown} is {size} bytes; read a part with mode=lines:N-M or signatures")
        data = fh.read(limit + 1)
    if len(data) > limit:   # grew after the size check
        raise WorkspaceError(f"{shown} is over {limit} bytes; read a part with mode=lines:N-M or signatures")
    return data


def relative(root: Path, real: Path) -> str:
    return real.relative_to(Path(root).resolve()).as_posix()


# -- .gitignore ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Rule:
    regex: re.Pattern
    negate: bool
    dir_only: bool


def _compile(pattern: str) -> _Rule | None:
    line = pattern.rstrip("\n")
    if not line.strip() or line.startswith("#"):
        return None
    line = line.rstrip()
    negate = line.startswith("!")
    if negate:
        line = line[1:]
    if line.startswith("\\"):
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.strip("/") if dir_only else line
    anchored = "/" in line.rstrip("/")
    line = line.lstrip("/")
    parts = []
    i = 0
    while i < len(line):
        if line.startswith("**/", i):
            parts.append("(?:.*/)?")
            i += 3
        elif line.startswith("/**", i) and i + 3 == len(line):
            parts.append("/.*")
            i += 3
        elif line.startswith("**", i):
            parts.append(".*")
            i += 2
        elif line[i] == "*":
            parts.append("[^/]*")
            i += 1
        elif line[i] == "?":
            parts.append("[^/]")
            i += 1
        elif line[i] == "[":
            end = line.find("]", i + 1)
            if end < 0:
                parts.append(re.escape(line[i]))
                i += 1
            else:
                parts.append(fnmatch.translate(line[i:end + 1])[4:-3])
                i = end + 1
        else:
            parts.append(re.escape(line[i]))
            i += 1
    body = "".join(parts)
    prefix = "" if anchored else "(?:.*/)?"
    return _Rule(re.compile(f"^{prefix}{body}$"), negate, dir_only)


class _Ignore:
    """The rules of one .gitignore, matched against paths relative to its directory."""

    def __init__(self, text: str):
        self.rules = [r for r in (_compile(line) for line in text.splitlines()) if r]

    def verdict(self, rel: str, is_dir: bool) -> bool | None:
        result = None
        for rule in self.rules:
            if rule.dir_only and not is_dir:
                continue
            if rule.regex.match(rel):
                result = not rule.negate
        return result


def _walk(root: Path) -> list[str]:
    """Files under root honouring nested .gitignore files (for trees that are not git checkouts)."""
    out: list[str] = []
    stack: list[tuple[Path, list[tuple[str, _Ignore]]]] = [(root, [])]
    while stack:
        directory, inherited = stack.pop()
        rules = inherited
        gi = directory / ".gitignore"
        if gi.is_file():
            try:
                rules = inherited + [(relative(root, directory) if directory != root else "",
                                      _Ignore(gi.read_text(errors="replace")))]
            except OSError:
                pass
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                if not is_dir and not entry.is_file(follow_symlinks=False):
                    continue
            except OSError:
                continue
            if is_dir and entry.name in ALWAYS_SKIP_DIRS:
                continue
            rel = Path(entry.path).relative_to(root).as_posix()
            ignored = False
            for base, ignore in rules:
                sub = rel[len(base) + 1:] if base else rel
                verdict = ignore.verdict(sub, is_dir)
                if verdict is not None:
                    ignored = verdict
            if ignored:
                continue
            if is_dir:
                stack.append((Path(entry.path), rules))
            else:
                out.append(rel)
    return sorted(out)


def list_files(root: Path) -> list[str]:
    """Workspace files (posix, relative to root), .gitignore honoured; git's own answer when a checkout."""
    root = Path(root).resolve()
    if (root / ".git").exists():
        try:
            proc = subprocess.run(
                ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                capture_output=True, timeout=60, check=True)
            files = [f for f in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if f]
            return sorted(f for f in files if (root / f).is_file() and not (root / f).is_symlink()
                          and not any(p in ALWAYS_SKIP_DIRS for p in f.split("/")[:-1]))
        except (OSError, subprocess.SubprocessError):
            pass  # git missing or broken: the walker honours .gitignore too
    return _walk(root)


def is_binary(head: bytes) -> bool:
    return b"\0" in head[:8192]
