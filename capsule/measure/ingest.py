"""Incremental ingestion of agent transcripts into the usage store.

Finds Claude Code transcripts (`$CLAUDE_CONFIG_DIR` or ~/.claude: projects/<slug>/<session>.jsonl,
<session>/subagents/agent-*.jsonl, 2.0.x agent-*.jsonl), Codex rollouts (`$CODEX_HOME` or ~/.codex:
sessions/YYYY/MM/DD/rollout-*.jsonl), Gemini CLI chats (~/.gemini/tmp/<project>/chats/*.jsonl) and
OpenCode's SQLite store (opencode.db, read whole when it changed), reads each from its stored byte offset to its last complete
line, and stores the parsed rows and the new offset in one transaction.
Not responsible for the line formats (capsule.measure.transcripts) or for reporting.
Invariant: ingesting the same bytes twice changes no total; a half-written last line is left for
the next pass; a replaced or truncated file is read again from the start (rows dedupe by id).
"""

from __future__ import annotations

import json
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from capsule.measure.transcripts import claude_transcript, codex_transcript, gemini_transcript, opencode_transcript
from capsule.measure.usage import UsageStore, checked
from capsule.ground import paths
from capsule.measure.transcripts.codex_transcript import from_codex_event
from capsule.store import quota_rows, route_rows

CHUNK_BYTES = 8 << 20
MAX_LINE_BYTES = 64 << 20      # a longer line is skipped and counted (it would be held whole in memory)
MAX_PASS_BYTES = 256 << 20     # read from one file per pass; the next pass goes on from the offset
BUDGET_S = 20.0                # the supervisor's pass, at most (ingest_default(budget_s=...))
READERS = {"claude": claude_transcript.parse, "codex": codex_transcript.parse, "gemini": gemini_transcript.parse}


def claude_home(env=None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("CLAUDE_CONFIG_DIR") or Path(env.get("HOME") or Path.home()) / ".claude")


def codex_home(env=None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("CODEX_HOME") or Path(env.get("HOME") or Path.home()) / ".codex")


def gemini_home(env=None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("GEMINI_CLI_HOME") or env.get("HOME") or Path.home()) / ".gemini"


def opencode_db(env=None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME") or Path.home()) / ".local" / "share")
    return Path(base) / "opencode" / "opencode.db"


def gemini_files(root: Path) -> list[Path]:
    """`root` is a Gemini CLI dir (holding tmp/<project>/chats/) or a chats dir itself."""
    return sorted(set((root / "tmp").glob("*/chats/session-*.jsonl")) | set(root.glob("session-*.jsonl")))


def claude_files(root: Path) -> list[Path]:
    """`root` is a Claude config dir (holding projects/) or a projects dir itself."""
    projects = root / "projects" if (root / "projects").is_dir() else root
    return sorted(set(projects.glob("*/*.jsonl")) | set(projects.glob("*/*/subagents/*.jsonl")))


def _originals_first(paths: list[Path]) -> list[Path]:
    return sorted(paths, key=lambda p: (_first_ts(p), str(p)))


def codex_files(root: Path) -> list[Path]:
    """`root` is a Codex home (holding sessions/) or a sessions dir itself."""
    sessions = root / "sessions" if (root / "sessions").is_dir() else root
    return sorted(sessions.rglob("rollout-*.jsonl"))


def _first_ts(path: Path) -> str:
    """The first timestamp in a file: originals sort before their forks (which copy their lines),
    so a copied call stays with the session that made it (trap 3)."""
    try:
        f, _ = _open_regular(path)
        with f:
            for _ in range(20):
                line = f.readline(1 << 20)
                if not line:
                    break
                try:
                    ts = json.loads(line).get("timestamp")
                except (ValueError, AttributeError, RecursionError):
                    continue
                if isinstance(ts, str):
                    return ts
    except OSError:
        pass
    return "~"


@dataclass
class Report:
    files: int = 0
    files_read: int = 0
    lines: int = 0
    bytes: int = 0
    calls_seen: int = 0
    skipped: int = 0              # bad lines and refused values of this pass
    skipped_total: int = 0        # ... of every pass so far (the store's files remember them)
    estimated_results: int = 0    # tool results too large to count exactly (common.COUNT_CHARS)
    unfinished: bool = False      # the time budget ran out: the next pass goes on from the offsets
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return self.__dict__.copy()


class NotRegular(OSError):
    pass


def _open_regular(path: Path):
    """The file, opened without blocking (a FIFO would block open()) and only if it is a regular
    file (a symlink to /dev/zero is an endless line)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegular(f"{path}: not a regular file; skipped")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb"), st
    except BaseException:
        os.close(fd)
        raise


def ingest_file(store: UsageStore, agent: str, path: Path, report: Report, deadline: float | None = None) -> None:
    parse = READERS[agent]
    key = str(path)
    f, st = _open_regular(path)
    with f:
        identity = f"{st.st_dev}:{st.st_ino}"
        known = store.file_state(key)
        offset, state, lines = 0, {}, 0
        if known and known[0] == identity and known[1] <= st.st_size and "_sessions" in known[2]:
            offset, state, lines = known[1], json.loads(known[2]), known[3]
        if offset == st.st_size and known and offset:
            return
        report.files_read += 1
        f.seek(offset)
        carry, skipping, budget = b"", 0, MAX_PASS_BYTES
        while budget > 0 and (deadline is None or time.monotonic() < deadline):
            chunk = f.read(min(CHUNK_BYTES, budget))
            if not chunk:
                break
            budget -= len(chunk)
            if skipping:                  # inside a line over the cap: drop bytes to its end
                end = chunk.find(b"\n")
                if end < 0:
                    skipping += len(chunk)
                    continue
                offset += skipping + end + 1
                state["bad_lines"] = state.get("bad_lines", 0) + 1
                store.write(parse([], key, state), (key, identity, offset, json.dumps(state), lines))
                skipping, chunk = 0, chunk[end + 1:]
            data = carry + chunk
            end = data.rfind(b"\n")
            if end < 0:
                if len(data) > MAX_LINE_BYTES:
                    carry, skipping = b"", len(data)
                else:
                    carry = data
                continue
            complete, carry = data[:end + 1], data[end + 1:]
            if len(carry) > MAX_LINE_BYTES:
                carry, skipping = b"", len(carry)
            batch_lines = complete.splitlines()
            before = (state.get("bad_lines", 0), state.get("estimated_results", 0))
            batch = parse([ln for ln in _capped(batch_lines, state) if ln.strip()], key, state)
            # Which sessions this file holds: `--claude-dir X` reports exactly those, even when
            # the proxy stored their calls first.
            held = set(state.get("_sessions", []))
            held.update(s.session_id for s in batch.sessions if isinstance(s.session_id, str))
            state["_sessions"] = sorted(held)
            state["_agent"] = agent
            offset += len(complete)
            lines += len(batch_lines)
            checked(batch)
            state["bad_values"] = state.get("bad_values", 0) + batch.rejected
            store.write(batch, (key, identity, offset, json.dumps(state), lines))
            if batch.route:
                _route_facts(store, batch.route, report)
            report.lines += len(batch_lines)
            report.bytes += len(complete)
            report.calls_seen += len(batch.calls)
            report.skipped += state.get("bad_lines", 0) - before[0] + batch.rejected
            report.estimated_results += state.get("estimated_results", 0) - before[1]
        else:
            report.unfinished = True
        if known is None and offset == 0:
            store.write(parse([], key, state), (key, identity, 0, json.dumps(state), 0))


def _capped(lines: list[bytes], state: dict) -> list[bytes]:
    """Lines over MAX_LINE_BYTES are skipped (and counted); the rest pass."""
    if all(len(ln) <= MAX_LINE_BYTES for ln in lines):
        return lines
    kept = [ln for ln in lines if len(ln) <= MAX_LINE_BYTES]
    state["bad_lines"] = state.get("bad_lines", 0) + len(lines) - len(kept)
    return kept


def transcript_files(claude_dirs: list[Path] = (), codex_dirs: list[Path] = ()) -> list[tuple[str, Path]]:
    """Every transcript under these folders as (agent, path), originals before their forks."""
    out: list[tuple[str, Path]] = []
    for agent, dirs, lister in (("claude", claude_dirs, claude_files), ("codex", codex_dirs, codex_files)):
        for root in dirs:
            if Path(root).is_dir():
                out += [(agent, p) for p in _originals_first(lister(Path(root)))]
    return out


def ingest(store: UsageStore, claude_dirs: list[Path] = (), codex_dirs: list[Path] = (),
           budget_s: float | None = None, gemini_dirs: list[Path] = (), opencode_dbs: list[Path] = ()) -> Report:
    """One pass; with budget_s it stops (between chunks) when the budget is spent, offsets kept."""
    report = Report()
    deadline = None if budget_s is None else time.monotonic() + budget_s
    for db in opencode_dbs:
        ingest_sqlite(store, Path(db), report)
    for agent, dirs, lister in (("claude", claude_dirs, claude_files), ("codex", codex_dirs, codex_files),
                                ("gemini", gemini_dirs, gemini_files)):
        for root in dirs:
            root = Path(root)
            if not root.is_dir():
                continue
            paths = lister(root)
            report.files += len(paths)
            known = store.file_offsets()
            todo = [p for p in paths if _changed(p, known.get(str(p)))]
            if agent == "claude":
                todo = _originals_first(todo)   # only files with new bytes are opened to sort them
            for path in todo:
                if deadline is not None and time.monotonic() >= deadline:
                    report.unfinished = True
                    break
                try:
                    ingest_file(store, agent, path, report, deadline)
                except NotRegular as exc:
                    report.errors.append(str(exc))
                except OSError as exc:  # a file vanishing mid-read is skipped, never fatal
                    report.errors.append(f"{path}: {exc}")
    report.skipped_total = store.skipped()
    return report


def _route_facts(store: UsageStore, facts: list[dict], report: Report) -> None:
    """Rate-limit windows and task boundaries a rollout recorded, into the quota store and route log
    next to this usage store (the state dir)."""
    state = Path(store.path).parent
    try:
        samples = [s for f in facts if f["kind"] == "rate_limits"
                   for s in from_codex_event(f["payload"], "openai:codex-rollout", f.get("session"), f["ts"])]
        if samples:
            qs = quota_rows.QuotaStore(state / quota_rows.QUOTA_DB)
            try:
                qs.add(samples)
            finally:
                qs.close()
        bounds = [f for f in facts if f["kind"] == "boundary"]
        if bounds:
            log = route_rows.RouteLog(state / paths.LEDGER_DB)
            try:
                for b in bounds:
                    log.record("boundary", session=str(b.get("session") or "")[:80] or None,
                               conversation=str(b.get("thread") or "")[:80] or None,
                               task_class=b.get("task_class"), source="codex rollout", reason=b["reason"],
                               detail=b.get("detail") or {}, ts=b["ts"])
            finally:
                log.close()
    except Exception as exc:  # noqa: BLE001 - route facts are measurement; usage rows are already stored
        report.errors.append(f"route facts: {exc}")


def _changed(path: Path, known: tuple[str, int] | None) -> bool:
    if known is None:
        return True
    try:
        st = path.stat()
    except OSError:
        return False
    return known != (f"{st.st_dev}:{st.st_ino}", st.st_size)


def ingest_sqlite(store: UsageStore, db: Path, report: Report) -> None:
    """OpenCode keeps its sessions in SQLite: read whole each time it changed (ids dedupe), its
    size and mtime remembered as the file's state."""
    try:
        st = db.stat()
    except OSError:
        return
    if not stat.S_ISREG(st.st_mode):
        report.errors.append(f"{db}: not a regular file; skipped")
        return
    wal = db.with_name(db.name + "-wal")
    try:
        wal_size = wal.stat().st_size
    except OSError:
        wal_size = 0
    key, identity = str(db), f"{st.st_dev}:{st.st_ino}:{st.st_mtime_ns}:{wal_size}"
    known = store.file_state(key)
    report.files += 1
    if known and known[0] == identity:
        return
    state: dict = {}
    try:
        batch = opencode_transcript.read(db, state)
    except Exception as exc:  # noqa: BLE001 - a locked or foreign database is skipped, never fatal
        report.errors.append(f"{db}: {exc}")
        return
    checked(batch)
    state["_agent"] = "opencode"
    state["_sessions"] = sorted({s.session_id for s in batch.sessions})
    store.write(batch, (key, identity, st.st_size, json.dumps(state), len(batch.calls)))
    report.files_read += 1
    report.calls_seen += len(batch.calls)
    report.skipped += state.get("bad_lines", 0) + batch.rejected


def ingest_default(store: UsageStore | None = None, env=None, budget_s: float | None = None) -> Report:
    """Ingest the agents' own folders (respecting CLAUDE_CONFIG_DIR and CODEX_HOME)."""
    own = store is None
    store = store or UsageStore()
    try:
        return ingest(store, [claude_home(env)], [codex_home(env)], budget_s, gemini_dirs=[gemini_home(env)],
                      opencode_dbs=[opencode_db(env)])
    finally:
        if own:
            store.close()
