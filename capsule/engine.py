"""The engine: one warm object with one entry, observe(Observation) -> Emission, which runs the
pipeline (observe/pipeline.py) and writes one ledger row; beside it request(Observation) -> Emission
answers a read door's tool call (obs.request: read, search, doc, expand; capsule/engine_read.py),
shaped here and recorded through observe() as one row.

Not responsible for running commands (cli/run.py and the shims do), for transport (the supervisor's
socket), or for client facts (limits, intents, sessions: the doors resolve them and hand them in;
the engine imports no door and no agent module). Owns the archive and ledger connections for one
state dir. Invariant: observe() never raises to its caller; on any internal failure the raw bytes
come back and a warning is logged (fail open). Output never waits long on a store: another
process holding the archive's or ledger's write lock past STORE_BUDGET_MS means raw output
(an original that cannot be archived is never replaced by a shorter text). A ledger row is never
given up for a busy store: deferred, it waits for the next drain, and a patient drain (a finisher,
close) waits as long as any writer (sqlite.BUSY_TIMEOUT_MS).
"""

from __future__ import annotations

import logging
import os
import time
import tomllib
from pathlib import Path

from capsule.ground import paths, switches, tokens
from capsule.ground.types import Observation
from capsule.observe import pipeline
from capsule.observe.pipeline import Emission
from capsule.policy.modes import default_mode
from capsule.store import sqlite
from capsule.store.archive import Archive

log = logging.getLogger("capsule.engine")

STORE_BUDGET_MS = 1000     # the longest the agent's output waits on another writer's lock
RECENT_COMMANDS = 12      # the session's last shell commands read for the task's cues
RECENT_S = 1800.0

LARGE_BYTES = 16 << 20      # above this a payload is never loaded whole into memory (observe/huge.py)
# A line longer than this takes the same path: one BPE piece of many MB costs seconds and hundreds of
# MB to tokenise (issue 11: a 15 MB line without spaces took 52 s and 900 MB), and no line budget
# can show it anyway; huge.py shows its head, tail and error windows.
LONG_LINE_BYTES = 1 << 20


def has_long_line(raw: bytes) -> bool:
    return len(raw) > LONG_LINE_BYTES and max(map(len, raw.split(b"\n"))) > LONG_LINE_BYTES


def default_scope() -> str:
    for name in (switches.SCOPE, "CLAUDE_CODE_SESSION_ID", "CODEX_THREAD_ID"):
        if os.environ.get(name):
            return os.environ[name]
    return "local"


class Engine:
    def __init__(self, state_dir: Path | None = None, mode: str | None = None, scope: str | None = None,
                 languages: tuple[str, ...] = (), role_mode: str | None = None):
        if state_dir is not None:
            os.environ[switches.STATE_DIR] = str(state_dir)
        self.state_dir = paths.state_dir()
        self.mode = mode or default_mode(role_mode)    # the mode worked out once (policy/modes.py)
        self.scope = scope or default_scope()
        self.languages = tuple(languages)   # the role's grammars; empty means every grammar
        self._archive: Archive | None = None
        self._ledger = None     # a measure.ledger.Ledger, opened by the first row written
        self._busy_ms = STORE_BUDGET_MS     # how long a store write waits for another writer
        # defer: record() jobs wait for drain(), which a caller runs after the output is written
        # (the supervisor after its reply, `ctx run`/`ctx pipe` after their write), so counting the
        # raw input's tokens and the ledger write are off the agent's path. Same figures either way.
        self.defer = False
        self._pending: list = []
        self._reads = None      # the read door's state (engine_read.Reads), made by the first request

    def request(self, obs: Observation) -> Emission:
        """A read door's tool call (obs.request, a ground.types.Request) answered: the view shaped by
        the engine's read transforms, recorded as one ledger row. Unlike observe(), a request that
        cannot be served (a path outside the workspace, an unknown handle, a bad mode) raises
        engine_read.RequestError, a ValueError whose message names the fix: there is no original to
        fall back to."""
        return self.reads.answer(obs.request)

    @property
    def reads(self):
        if self._reads is None:
            from capsule.engine_read import Reads  # noqa: PLC0415 - bench_startup "ctx run cold, no engine"; only the read door asks

            self._reads = Reads(self)
        return self._reads

    @property
    def archive(self) -> Archive:
        if self._archive is None:
            self._archive = Archive(self.state_dir / paths.ARCHIVE_DB, busy_timeout_ms=self._busy_ms)
        return self._archive

    @property
    def ledger(self):
        """The ledger store (measure/ledger.py). Its module is imported where a row is written, not
        with the engine: a deferring door writes its rows after the output (`ctx run`: in the
        finisher), so the process that shows the output never loads it (~2 ms of a cold run)."""
        if self._ledger is None:
            from capsule.measure.ledger import Ledger  # noqa: PLC0415 - bench_startup "ctx run cold, no engine"; see the docstring

            self._ledger = Ledger(self.state_dir / paths.LEDGER_DB, busy_timeout_ms=self._busy_ms)
        return self._ledger

    def observe(self, obs: Observation) -> Emission:
        """The one entry every door calls. An empty Emission.data for a spooled observation means
        the door streams its spool itself (the master switch, a measure-only huge payload, a failure)."""
        sw = switches.Switches.read()
        whole = obs.raw if obs.spool is None else b"" if obs.size == 0 else None
        if sw.disable or whole == b"":
            return pipeline.raw_emission(obs.raw)
        mode = obs.mode or self.mode
        if obs.media is not None:      # an image or a PDF: sized, pointed or read as text (media layer)
            from capsule import engine_media  # noqa: PLC0415 - bench_startup "ctx run cold, no engine"; Pillow and poppler only where media comes

            em = engine_media.emission(self, obs)
            if em.family == "media":
                em.emission_id = self.record(self._row(em, obs, mode))
            return em
        try:
            from capsule.observe import salience  # noqa: PLC0415 - bench_startup "ctx run cold, no engine"

            scope = obs.scope or self.scope
            self.archive.defer_index = self.defer
            em = pipeline.run(obs, self.archive, mode=mode, languages=tuple(obs.languages) or self.languages,
                              measure_only=sw.measure_only or mode == "measure",
                              large_bytes=LARGE_BYTES, long_line_bytes=LONG_LINE_BYTES,
                              salient=salience.recall(self.state_dir, scope),
                              cues=self._lazy_cues([scope], obs.intent, obs.prompt, obs.edits))
            if obs.view is not None and obs.handle:     # a view the engine's read entry cut from an archived original
                em.handle = obs.handle
            if obs.exit_code not in (0, None):      # a failure: what it names ranks first later in the session
                head = whole if whole is not None else _head(obs.spool, salience.SCAN_BYTES)
                text = head.decode("utf-8", "surrogateescape")
                salience.learn(self.state_dir, scope, text, obs.exit_code)
                from capsule.retrieve import focus  # noqa: PLC0415 - bench_startup "ctx run cold, no engine"; only a failure teaches its frames

                focus.learn(self.state_dir, scope, text)
        except Exception as exc:  # noqa: BLE001 - the engine fails open
            log.warning("pipeline failed: %r; raw output passed through", exc)
            try:
                if whole is not None:
                    em = pipeline.failed_open(whole, exc, whole, len(whole))
                else:                          # a spool the door streams itself (data b"")
                    held = _head(obs.spool, obs.size) if obs.size <= LARGE_BYTES else None
                    em = pipeline.failed_open(b"", exc, held, obs.size)
            except Exception:  # noqa: BLE001 - the spool itself failed: the door still streams it
                return pipeline.raw_emission(obs.raw)
            if sqlite.is_full(exc):            # the log cannot be written either: the door shows this line
                em.notice = (f"capsule: the state volume is full ({self.state_dir}): output passed whole, "
                             f"nothing archived or recorded; free space there (capsule ctx doctor)")
        if self.defer:
            self._pending.append(lambda: self.ledger.record(self._row(em, obs, mode)))
        else:
            em.emission_id = self.record(self._row(em, obs, mode))
        return em

    def session_cues(self, scopes: list[str], intent: str | None = None, prompt: str | None = None,
                     edits=(), rel: str | None = None):
        """The task's cues for one session (observe/cues.py): the step's intent, the user's last prompt
        and the session's recent edits (as the door handed them in), the session's failure names
        (observe/salience.py) and failing frames (retrieve/focus.py), its recent shell commands (the
        ledger); `rel`: a file being read, whose frames' lines are its hot lines."""
        from capsule.observe import cues, salience  # noqa: PLC0415 - bench_startup "ctx run cold, no engine"
        from capsule.retrieve import focus  # noqa: PLC0415 - bench_startup "ctx run cold, no engine"; only a cut that ranks reads the session

        names = [n for s in scopes for n in salience.recall(self.state_dir, s)]
        frames = [f for s in scopes for f in focus.frames(self.state_dir, s)]
        lines = [n for s in scopes for n in focus.recall(self.state_dir, s, rel)] if rel else []
        return cues.cues(intent, names, self.recent_commands(scopes), lines, prompt=prompt,
                         edits=list(edits or ()), frames=frames)

    def _lazy_cues(self, scopes: list[str], intent, prompt, edits):
        """session_cues() when a transform first asks (most outputs never rank), then remembered;
        a store that cannot be read means no cues (fail open)."""
        got: list = []

        def read():
            if not got:
                try:
                    got.append(self.session_cues(scopes, intent, prompt, edits))
                except Exception as exc:  # noqa: BLE001 - no cues is a plain cut, never a failed output
                    log.warning("session cues unreadable: %r", exc)
                    from capsule.observe.cues import NONE  # noqa: PLC0415 - bench_startup "ctx run cold, no engine"

                    got.append(NONE)
            return got[0]
        return read

    def recent_commands(self, scopes: list[str]) -> list[str]:
        """The session's last shell commands (the ledger's rows of its scopes), newest first."""
        try:
            rows = self.ledger.rows(since=time.time() - RECENT_S, settled=False)   # best effort, never a wait
        except Exception:  # noqa: BLE001 - no ledger yet, or a busy one: no command cues
            return []
        cmds = [r["command"] for r in reversed(rows) if r["scope"] in scopes and r["command"]
                and r["family"] != "read"]
        return cmds[:RECENT_COMMANDS]

    def warm(self) -> None:
        """Before a long-lived door (the supervisor, the engine daemon) serves: the whole tokenizer
        (a request never pays its load) and this state dir's stores open. What the pipeline imports
        on first use is loaded after, by rehearsals (rehearse) while the door already serves.
        The stores open in a thread beside the load: a fresh state dir's are tens of ms of disk
        waits (files created and synced) that the load's CPU hides. Raises what opening raises."""
        from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415 - only long-lived doors warm

        with ThreadPoolExecutor(1, thread_name_prefix="capsule-stores") as pool:
            stores = pool.submit(lambda: (self.archive, self.ledger))
            tokens.load()
            stores.result()

    def understudy(self, state_dir: Path) -> Engine:
        """An engine like this one (mode, languages, deferred rows) over the stores of another state
        dir, for rehearse(): the modules it loads are this process's, so loaded for this engine too;
        nothing it stores reaches this engine's state dir."""
        twin = Engine(mode=self.mode, scope="warm-up", languages=self.languages)
        twin.state_dir = Path(state_dir)
        twin.defer = True
        return twin

    @staticmethod
    def warm_up_samples() -> list[Observation]:
        """The sample outputs of observe/data/warmup.toml, for rehearse() (its header says how a
        sample is written)."""
        data = tomllib.loads((Path(__file__).parent / "observe" / "data" / "warmup.toml").read_text())
        out = []
        for s in data["sample"]:
            body = s.get("join", "").join(s["body"].replace("{i}", str(i)) for i in range(s.get("repeat", 1)))
            text = s.get("head", "") + body + s.get("tail", "")
            out.append(Observation(text.encode(), command=s["command"], stream=s.get("stream", "stdout"),
                                   exit_code=s.get("exit", 0), scope="warm-up", duration_ms=1.0))
        return out

    def rehearse(self, obs: Observation) -> None:
        """One sample output (warm_up_samples) through observe() and drain(), as a request's would go,
        on an understudy; never raises (a first request of that kind then pays what it would have)."""
        try:
            self.observe(obs)
            self.drain()
        except Exception as exc:  # noqa: BLE001
            log.warning("engine rehearsal of %r failed: %r", obs.command, exc)

    def pending(self) -> bool:
        """Is there deferred work (records, full-text rows) waiting for drain()?"""
        return bool(self._pending) or bool(self._archive is not None and self._archive.has_unindexed())

    def close_stores(self) -> list:
        """Close the archive and ledger connections (no SQLite connection may cross a fork: the child
        would share the parent's lock bookkeeping and lose its writes); returns the originals whose
        full-text rows are still to be written, for reopen_stores() on the other side."""
        unindexed = self._archive.take_unindexed() if self._archive is not None else []
        for store in (self._archive, self._ledger):
            if store is not None:
                store.close()
        self._archive = self._ledger = None
        return unindexed

    def reopen_stores(self, unindexed: list) -> None:
        """After close_stores(): fresh connections, with the full-text rows still owed."""
        if unindexed:
            self.archive.requeue_unindexed(unindexed)

    def drain(self, patient: bool = False, stop=None) -> None:
        """Count and record what observe() deferred, and index the originals it stored; never
        raises (a lost row costs no output, a missing index row no original). A row whose write
        found the ledger busy stays pending for the next drain. patient: nobody waits on this drain
        (a finisher, close): every write from now on waits as long as any writer. stop: asked
        before each row; true leaves the rest pending (a server's next request comes first)."""
        if patient:
            self._be_patient()
        busy = []
        while self._pending:
            if stop is not None and stop():
                self._pending[:0] = busy
                return
            job = self._pending.pop(0)
            try:
                job()
            except sqlite.BUSY as exc:
                log.warning("deferred record waits for a busy ledger: %r", exc)
                busy.append(job)
            except Exception as exc:  # noqa: BLE001
                log.warning("deferred record failed: %r", exc)
        self._pending[:0] = busy
        if self._archive is not None:
            try:
                self._archive.index_pending()
            except Exception as exc:  # noqa: BLE001
                log.warning("deferred archive index failed: %r", exc)

    def _be_patient(self) -> None:
        self._busy_ms = sqlite.BUSY_TIMEOUT_MS
        for store in (self._archive, self._ledger):
            if store is not None:
                store.conn.set_busy_timeout(self._busy_ms)

    def _row(self, em: Emission, obs: Observation, mode: str):
        """The one ledger row (a measure.ledger.Row) of an emission; built when it is written (see ledger)."""
        from capsule.measure.ledger import Row  # noqa: PLC0415 - bench_startup "ctx run cold, no engine"

        return Row(scope=obs.scope or self.scope, command=obs.command, family=em.family, transform=em.transform_id,
                  stream=obs.stream, mode=mode, applied=em.applied, raw_tokens=em.raw_tokens,
                  emitted_tokens=em.sent_tokens, raw_bytes=em.raw_bytes,
                  emitted_bytes=len(em.data) if em.applied else em.raw_bytes, exit_code=obs.exit_code,
                  handle=em.handle, duration_ms=obs.duration_ms, token_label=em.token_label or tokens.label(),
                  would_emit_tokens=em.would_emit_tokens, intent=em.intent, project=paths.project_of(obs.cwd),
                  manifest=em.ledger_manifest if em.ledger_manifest is not None else [r.as_dict() for r in em.removals],
                  reports=em.ledger_reports if em.ledger_reports is not None else
                  [r.as_dict() for r in em.reports] + [{"name": "would_emit", "tokens": em.would_emit_tokens}])

    def record(self, row) -> int | None:
        """Write one ledger row; a failure is logged, never raised (the agent's output comes first)."""
        try:
            return self.ledger.record(row)
        except Exception as exc:  # noqa: BLE001 - a ledger failure must not cost the agent its output
            log.warning("ledger write failed: %r", exc)
            return None

    def close(self) -> None:
        self.drain(patient=True)
        for store in (self._archive, self._ledger):
            if store is not None:
                store.close()


def _head(f, n: int) -> bytes:
    """The first n bytes of a spool, its position back at the start."""
    if f is None:
        return b""
    f.seek(0)
    data = f.read(n)
    f.seek(0)
    return data
