"""Incremental ingestion of agent transcripts into the usage store.

Finds Claude Code transcripts (`$CLAUDE_CONFIG_DIR` or ~/.claude: projects/<slug>/<session>.jsonl,
<session>/subagents/agent-*.jsonl, 2.0.x agent-*.jsonl) and Codex rollouts (`$CODEX_HOME` or ~/.codex:
sessions/YYYY/MM/DD/rollout-*.jsonl), reads each from its stored byte offset to its last complete
line, and stores the parsed rows and the new offset in one transaction.
Not responsible for the line formats (capsule.measure.transcripts) or for reporting.
Invariant: ingesting the same bytes twice changes no total; a half-written last line is left for
the next pass; a replaced or truncated file is read again from the start (rows dedupe by id).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from capsule.measure.transcripts import claude, codex
from capsule.measure.usage import UsageStore

CHUNK_BYTES = 8 << 20
READERS = {"claude": claude.parse, "codex": codex.parse}


def claude_home(env=None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("CLAUDE_CONFIG_DIR") or Path(env.get("HOME") or Path.home()) / ".claude")


def codex_home(env=None) -> Path:
    env = os.environ if env is None else env
    return Path(env.get("CODEX_HOME") or Path(env.get("HOME") or Path.home()) / ".codex")


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
        with open(path, "rb") as f:
            for _ in range(20):
                line = f.readline()
                if not line:
                    break
                try:
                    ts = json.loads(line).get("timestamp")
                except (ValueError, AttributeError):
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
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return self.__dict__.copy()


def ingest_file(store: UsageStore, agent: str, path: Path, report: Report) -> None:
    parse = READERS[agent]
    key = str(path)
    try:
        st = path.stat()
    except OSError as exc:
        report.errors.append(f"{path}: {exc}")
        return
    identity = f"{st.st_dev}:{st.st_ino}"
    known = store.file_state(key)
    offset, state, lines = 0, {}, 0
    if known and known[0] == identity and known[1] <= st.st_size and "_sessions" in known[2]:
        offset, state, lines = known[1], json.loads(known[2]), known[3]
    if offset == st.st_size and known and offset:
        return
    report.files_read += 1
    with open(path, "rb") as f:
        f.seek(offset)
        carry = b""
        while True:
            chunk = f.read(CHUNK_BYTES)
            if not chunk:
                break
            data = carry + chunk
            end = data.rfind(b"\n")
            if end < 0:
                carry = data
                continue
            complete, carry = data[:end + 1], data[end + 1:]
            batch_lines = complete.splitlines()
            batch = parse([ln for ln in batch_lines if ln.strip()], key, state)
            # Which sessions this file holds: `--claude-dir X` reports exactly those, even when
            # the proxy stored their calls first.
            held = set(state.get("_sessions", []))
            held.update(s.session_id for s in batch.sessions)
            state["_sessions"] = sorted(held)
            state["_agent"] = agent
            offset += len(complete)
            lines += len(batch_lines)
            store.write(batch, (key, identity, offset, json.dumps(state), lines))
            if batch.route:
                _route_facts(store, batch.route, report)
            report.lines += len(batch_lines)
            report.bytes += len(complete)
            report.calls_seen += len(batch.calls)
    if known is None and offset == 0:
        store.write(parse([], key, state), (key, identity, 0, json.dumps(state), 0))


def ingest(store: UsageStore, claude_dirs: list[Path] = (), codex_dirs: list[Path] = ()) -> Report:
    report = Report()
    for agent, dirs, lister in (("claude", claude_dirs, claude_files), ("codex", codex_dirs, codex_files)):
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
                try:
                    ingest_file(store, agent, path, report)
                except OSError as exc:  # a file vanishing mid-read is skipped, never fatal
                    report.errors.append(f"{path}: {exc}")
    return report


def _route_facts(store: UsageStore, facts: list[dict], report: Report) -> None:
    """Rate-limit windows and task boundaries a rollout recorded, into the quota store and route log
    next to this usage store (the state dir)."""
    from capsule.ground import paths  # noqa: PLC0415
    from capsule.measure import quota, route_log  # noqa: PLC0415

    state = Path(store.path).parent
    try:
        samples = [s for f in facts if f["kind"] == "rate_limits"
                   for s in quota.from_codex_event(f["payload"], "openai:codex-login", f.get("session"), f["ts"])]
        if samples:
            qs = quota.QuotaStore(state / quota.QUOTA_DB)
            try:
                qs.add(samples)
            finally:
                qs.close()
        bounds = [f for f in facts if f["kind"] == "boundary"]
        if bounds:
            log = route_log.RouteLog(state / paths.LEDGER_DB)
            try:
                for b in bounds:
                    log.record("boundary", session=b.get("session"), conversation=b.get("thread"),
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


def ingest_default(store: UsageStore | None = None, env=None) -> Report:
    """Ingest the agents' own folders (respecting CLAUDE_CONFIG_DIR and CODEX_HOME)."""
    own = store is None
    store = store or UsageStore()
    try:
        return ingest(store, [claude_home(env)], [codex_home(env)])
    finally:
        if own:
            store.close()
