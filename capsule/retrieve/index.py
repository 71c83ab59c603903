"""The workspace search index: tantivy BM25 over path and content, refreshed from a corpus signature.

Responsible for building, refreshing and querying one workspace's index under
capsule.ground.paths.index_dir()/<workspace id>/, and for boosting hits by frecency.
Not responsible for snippets or budgets (packer.py) or for which files exist (workspace.py).
Invariant: the index is a rebuildable cache; a refresh re-reads only files whose (mtime, size)
changed and re-indexes only those whose hash changed. A file is in the index at most once, even
when a refresh was killed between its commit and its signature update (every add is preceded by
a delete of that path, and an index whose document count disagrees with its signatures is
re-indexed on open); opening never deletes index files another process may be using.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import tantivy
from blake3 import blake3

from capsule.ground import paths
from capsule.observe.cues import WORD, query_terms, split_identifier  # noqa: F401 - the one tokenizer of cues and the index
from capsule.retrieve import workspace
from capsule.retrieve.frecency import Meta

SCHEMA_VERSION = "1"
_NOT_INDEXED = bytes(16)   # signature digest of a tracked file kept out of the index
WRITER_HEAP = 128 << 20
_WORD = WORD
_HUMPY = re.compile(r"[A-Za-z0-9_]*(?:[a-z0-9][A-Z]|[A-Z][A-Z][a-z])[A-Za-z0-9_]*")

Progress = Callable[[int, int], None]


def _content_field(text: str) -> str:
    """Text as indexed: the default tokenizer splits snake_case itself; camelCase parts are added."""
    humps = set(_HUMPY.findall(text))
    if not humps:
        return text
    extra = " ".join(" ".join(split_identifier(w)) for w in sorted(humps))
    return f"{text}\n{extra}"


def _path_field(rel: str) -> str:
    words = _WORD.findall(rel)
    return rel + " " + " ".join(" ".join(split_identifier(w)) for w in words)


def workspace_index_dir(root: Path) -> Path:
    root = Path(root).resolve()
    tag = blake3(str(root).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return paths.index_dir() / f"{root.name or 'root'}-{tag}"


@dataclass
class BuildReport:
    files: int = 0           # files in the workspace after the refresh
    indexed: int = 0         # files (re)indexed now
    removed: int = 0
    unchanged: int = 0
    skipped: int = 0         # binary or too large
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.indexed / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class Hit:
    path: str
    score: float


class WorkspaceIndex:
    """One workspace's index, kept open (warm) by whoever holds the object."""

    def __init__(self, root: Path | str, directory: Path | None = None):
        self.root = Path(root).resolve()
        self.dir = Path(directory) if directory else workspace_index_dir(self.root)
        paths.private_dir(self.dir.parent)     # tantivy writes 0644 files: 0700 dirs keep them ours
        paths.private_dir(self.dir)
        self.meta = Meta(self.dir)
        self._lock = threading.Lock()
        self._open()

    def _open(self) -> None:
        # The schema version names the directory: a new version starts a new directory, so no
        # process ever deletes files of an index another process (an older or concurrent one)
        # has open. Layouts of other versions are removed; nothing of this version ever is.
        tdir = self.dir / f"tantivy-{SCHEMA_VERSION}"
        for old in self.dir.glob("tantivy*"):
            if old != tdir and old.is_dir():
                shutil.rmtree(old, ignore_errors=True)
        (self.dir / "schema-version").unlink(missing_ok=True)
        paths.private_dir(tdir)
        sb = tantivy.SchemaBuilder()
        sb.add_text_field("path", stored=True, tokenizer_name="raw", index_option="basic")
        sb.add_text_field("path_t", stored=False)
        sb.add_text_field("content", stored=False, index_option="freq")
        self.schema = sb.build()
        self.index = tantivy.Index(self.schema, path=str(tdir), reuse=True)
        self._heal()

    def _heal(self) -> None:
        """Signatures that disagree with the index (a refresh killed between its commit and its
        signature update, an index directory lost) are dropped: the next refresh re-indexes every
        file, and since each add first deletes its path, nothing is ever doubled."""
        indexed = sum(1 for sig in self.meta.signatures().values() if sig[2] != _NOT_INDEXED)
        if indexed != self.num_docs():
            self.meta.clear_signatures()

    def close(self) -> None:
        self.meta.close()

    # -- building ----------------------------------------------------------------------------------
    def refresh(self, progress: Progress | None = None, threads: int = 1) -> BuildReport:
        """Bring the index up to date with the workspace; cheap when little changed."""
        with self._lock:
            return self._refresh(progress, threads)

    def _refresh(self, progress: Progress | None, threads: int) -> BuildReport:
        start = time.perf_counter()
        report = BuildReport()
        files = workspace.list_files(self.root)
        known = self.meta.signatures()
        put: dict[str, tuple[int, int, bytes]] = {}
        changed: list[tuple[str, int, int]] = []
        for rel in files:
            try:
                st = os.stat(self.root / rel)
            except OSError:
                continue
            old = known.get(rel)
            if old and old[0] == st.st_mtime_ns and old[1] == st.st_size:
                report.unchanged += 1
            else:
                changed.append((rel, st.st_mtime_ns, st.st_size))
        present = set(files)
        gone = [p for p in known if p not in present]
        writer = None
        total = len(changed)
        for n, (rel, mtime, size) in enumerate(changed, 1):
            if progress and (n % 250 == 0 or n == total):
                progress(n, total)
            if size > workspace.MAX_INDEX_BYTES:
                report.skipped += 1
                put[rel] = (mtime, size, _NOT_INDEXED)
                continue
            try:
                # no-follow, regular files only: a name swapped for a link or a FIFO mid-build
                # is skipped, never followed out of the workspace or waited on
                data = workspace.read_inside(self.root, self.root / rel, rel, workspace.MAX_INDEX_BYTES)
            except (OSError, workspace.WorkspaceError):
                continue
            if workspace.is_binary(data):
                report.skipped += 1
                put[rel] = (mtime, size, _NOT_INDEXED)
                continue
            digest = blake3(data).digest()[:16]
            old = known.get(rel)
            if old and old[2] == digest:
                put[rel] = (mtime, size, digest)
                report.unchanged += 1
                continue
            if writer is None:
                writer = self.index.writer(WRITER_HEAP, threads)
            writer.delete_documents_by_term("path", rel)   # always: a committed add may lack its signature
            text = data.decode("utf-8", "replace")
            writer.add_document(tantivy.Document(path=rel, path_t=_path_field(rel), content=_content_field(text)))
            put[rel] = (mtime, size, digest)
            report.indexed += 1
        if gone:
            if writer is None:
                writer = self.index.writer(WRITER_HEAP, threads)
            for rel in gone:
                writer.delete_documents_by_term("path", rel)
            report.removed = len(gone)
        if writer is not None:
            writer.commit()
            writer.wait_merging_threads()
        self.index.reload()                  # also picks up commits made by other processes
        self.meta.update_signatures(put, gone)
        report.files = self.num_docs()
        report.seconds = time.perf_counter() - start
        (self.dir / "last-build").write_text(f"{time.time():.0f} {report.files} {report.indexed} {report.seconds:.3f}")
        return report

    # -- querying ----------------------------------------------------------------------------------
    def search(self, query: str, k: int = 10) -> list[Hit]:
        terms = query_terms(query)
        if not terms:
            return []
        q = self.index.parse_query(" ".join(terms), ["path_t", "content"], field_boosts={"path_t": 1.5})
        searcher = self.index.searcher()     # the latest generation, other processes' commits included
        found = searcher.search(q, limit=max(k * 3, 30), count=False).hits
        now = time.time()
        hits = []
        for score, addr in found:
            rel = searcher.doc(addr)["path"][0]
            hits.append(Hit(rel, score * self.meta.boost(rel, now)))
        hits.sort(key=lambda h: (-h.score, h.path))
        return hits[:k]

    def num_docs(self) -> int:
        """Documents in the latest commit, whichever process made it."""
        self.index.reload()
        return self.index.searcher().num_docs

    def status(self) -> dict:
        last = (self.dir / "last-build")
        stamp = last.read_text().split() if last.exists() else []
        return {
            "workspace": str(self.root),
            "index_dir": str(self.dir),
            "documents": self.num_docs(),
            "files_tracked": len(self.meta.signatures()),
            "last_build": float(stamp[0]) if stamp else None,
            "last_build_seconds": float(stamp[3]) if len(stamp) > 3 else None,
        }

    def stale(self) -> int:
        """Files whose (mtime, size) differ from the signature, plus new and removed files."""
        known = self.meta.signatures()
        files = workspace.list_files(self.root)
        n = 0
        for rel in files:
            old = known.get(rel)
            try:
                st = os.stat(self.root / rel)
            except OSError:
                continue
            if not old or old[0] != st.st_mtime_ns or old[1] != st.st_size:
                n += 1
        return n + len(set(known) - set(files))
