"""The engine: one warm object that observes payloads and records them.

Not responsible for running commands (cli/run.py and the shims do) or for transport
(the supervisor's socket). Owns the archive and ledger connections for one state dir.
Invariant: observe() never raises to its caller; on any internal failure the raw bytes
come back and a warning is logged (fail open). Output never waits long on a store: another
process holding the archive's or ledger's write lock past STORE_BUDGET_MS means raw output
(an original that cannot be archived is never replaced by a shorter text) and no ledger row.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from capsule.ground import logs, paths
from capsule.ground import tokens
from capsule.measure.ledger import Ledger, Row
from capsule.observe import guard, huge, pipeline
from capsule.observe.classify import classify
from capsule.observe.types import Context
from capsule.ground import switches
from capsule.policy.modes import default_mode
from capsule.store.archive import Archive

TYPE_CHECKING = False     # typing.TYPE_CHECKING without importing typing (~2 ms of a cold `ctx run`)
if TYPE_CHECKING:     # imported where used: the embedded `ctx run` (a cold process) has no client cap
    from typing import BinaryIO

    from capsule.agents.limits import Limit

log = logs.get("capsule.engine")

STORE_BUDGET_MS = 1000     # the longest the agent's output waits on another writer's lock

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


@dataclass
class Outcome:
    data: bytes
    emission_id: int | None
    handle: str | None


class Engine:
    def __init__(self, state_dir: Path | None = None, mode: str | None = None, scope: str | None = None,
                 languages: tuple[str, ...] = ()):
        if state_dir is not None:
            os.environ[switches.STATE_DIR] = str(state_dir)
        self.state_dir = paths.state_dir()
        self.mode = mode or default_mode()
        self.scope = scope or default_scope()
        self.languages = tuple(languages)   # the role's grammars; empty means every grammar
        self._archive: Archive | None = None
        self._ledger: Ledger | None = None
        # defer: record() jobs wait for drain(), which a caller runs after the output is written
        # (the supervisor after its reply, `ctx run`/`ctx pipe` after their write), so counting the
        # raw input's tokens and the ledger write are off the agent's path. Same figures either way.
        self.defer = False
        self._pending: list = []

    @property
    def archive(self) -> Archive:
        if self._archive is None:
            self._archive = Archive(self.state_dir / paths.ARCHIVE_DB, busy_timeout_ms=STORE_BUDGET_MS)
        return self._archive

    @property
    def ledger(self) -> Ledger:
        if self._ledger is None:
            self._ledger = Ledger(self.state_dir / paths.LEDGER_DB, busy_timeout_ms=STORE_BUDGET_MS)
        return self._ledger

    def observe(self, raw: bytes, *, command: str | None = None, stream: str = "stdout",
                exit_code: int | None = None, intent: str | None = None, scope: str | None = None,
                path: str | None = None, duration_ms: float | None = None, mode: str | None = None,
                languages: tuple[str, ...] = (), cwd: str | None = None, limit: Limit | None = None,
                budget: int | None = None) -> Outcome:
        """`limit`/`budget`: the agent client's cap and what this emission may take of it (fit.py)."""
        sw = switches.Switches.read()
        if sw.disable or not raw:
            return Outcome(raw, None, None)
        mode = mode or self.mode
        measure_only = sw.measure_only or mode == "measure"
        try:
            if intent:      # an over-long goal is shortened, never a reason to lose the output
                from capsule.observe.intent import shorten  # noqa: PLC0415

                intent = shorten(intent)[0]
            cls = classify(command, raw[:1024], cwd)
            if intent and cls.transform_id == "default" and not cls.passthrough:
                # No tool-specific filter knows this output, but the step's goal is known.
                cls = replace(cls, transform_id="reflex", reason=cls.reason + "; intent known: reflex")
            ctx = Context(command=command, family=cls.family, stream=stream, intent=intent, exit_code=exit_code,
                          mode="standard" if mode == "measure" else mode, path=path,
                          languages=tuple(languages) or self.languages,
                          filter_id=cls.filter_id)
            self.archive.defer_index = self.defer
            em = pipeline.process(raw, ctx, self.archive, cls, measure_only=measure_only)
            if limit is not None and budget is not None and not measure_only:
                em = self._fit(em, raw, command, limit, budget)
        except Exception as exc:  # noqa: BLE001 - the engine fails open
            log.warning("pipeline failed: %r; raw output passed through", exc)
            return Outcome(raw, None, None)
        if self.defer:
            self._pending.append(lambda: self._record(em, command, stream, mode, exit_code, scope, duration_ms,
                                                      len(raw), intent))
            return Outcome(em.data, None, em.handle)
        emission_id = self._record(em, command, stream, mode, exit_code, scope, duration_ms, len(raw), intent)
        return Outcome(em.data, emission_id, em.handle)

    def pending(self) -> bool:
        """Is there deferred work (records, full-text rows) waiting for drain()?"""
        return bool(self._pending) or bool(self._archive is not None and self._archive._unindexed)

    def drain(self) -> None:
        """Count and record what observe() deferred, and index the originals it stored; never
        raises (a lost row costs no output, a missing index row no original)."""
        while self._pending:
            job = self._pending.pop(0)
            try:
                job()
            except Exception as exc:  # noqa: BLE001
                log.warning("deferred record failed: %r", exc)
        if self._archive is not None:
            try:
                self._archive.index_pending()
            except Exception as exc:  # noqa: BLE001
                log.warning("deferred archive index failed: %r", exc)

    def _fit(self, em: pipeline.Emission, raw: bytes, command: str | None, limit: Limit,
             budget: int) -> pipeline.Emission:
        """Still over the client's cap after compression: shape the original, errors first."""
        from capsule.agents import limits
        from capsule.observe import fit

        text = em.data.decode("utf-8", "surrogateescape")
        if limit.size(text) <= budget:
            return em
        shape = limits.data()["shape"]
        handle = self.archive.put(raw, command)
        shaped = fit.fit(raw.decode("utf-8", "surrogateescape"), budget, limit.size, handle,
                         context=int(shape["context"]), head=int(shape["head"]), tail=int(shape["tail"]),
                         line_chars=int(shape["line_chars"]))
        em.data = shaped.encode("utf-8", "surrogateescape")
        em.emitted_tokens = em.would_emit_tokens = tokens.count(shaped)
        em.handle, em.applied = handle, True
        em.transform_id = f"{em.transform_id}+fit:{limit.client}"
        return em

    def observe_command(self, command: str, stdout: bytes, stderr: bytes, exit_code: int,
                        duration_ms: float, scope: str | None = None, cwd: str | None = None,
                        meta: dict[str, str] | None = None, intent: str | None = None) -> tuple[bytes, bytes]:
        """Both streams of one command; `meta` is the command's environment as the shim forwarded it
        (limits.env_names()): a known client's cap bounds the two emissions together."""
        from capsule.agents import limits

        limit = limits.detect(meta)
        if intent is None and meta:
            from capsule.agents import intent as intents, session  # noqa: PLC0415

            intent = intents.lookup(session.intents_dir(self.state_dir),
                                    meta.get(limits.data()["claude"]["session_env"]), command)
            if intent is None and meta.get(limits.data()["codex"]["detect_env"]):
                from capsule.agents import codex  # noqa: PLC0415

                intent = intents.codex_prompt(codex.codex_home(), meta[limits.data()["codex"]["detect_env"]])
        whole = limit.budget() if limit else None
        err_budget = out_budget = None
        if whole is not None:   # stderr first (usually short); it leaves stdout at least half
            err_budget = whole - min(limit.size(stdout.decode("utf-8", "surrogateescape")), whole // 2)
        kw = dict(command=command, exit_code=exit_code, scope=scope, duration_ms=duration_ms, cwd=cwd,
                  intent=intent, limit=limit)
        err = self.observe(stderr, stream="stderr", budget=err_budget, **kw).data if stderr else stderr
        if whole is not None:
            out_budget = whole - limit.size(err.decode("utf-8", "surrogateescape"))
        out = self.observe(stdout, stream="stdout", budget=out_budget, **kw).data if stdout else stdout
        return out, err

    def observe_file(self, f: BinaryIO, size: int, digest: str, *, command: str | None, stream: str,
                     exit_code: int | None, scope: str | None = None, duration_ms: float | None = None,
                     intent: str | None = None) -> Outcome:
        """A spooled payload: small ones go through observe(); large ones, and any with a line over
        LONG_LINE_BYTES, stream (bounded memory). An empty Outcome.data: the caller streams the spool."""
        if size <= LARGE_BYTES:
            f.seek(0)
            raw = f.read()
            if not has_long_line(raw):
                return self.observe(raw, command=command, stream=stream, exit_code=exit_code,
                                    scope=scope, duration_ms=duration_ms, intent=intent)
            del raw
        sw = switches.Switches.read()
        if sw.disable:
            return Outcome(b"", None, None)  # caller streams the spool itself
        try:
            return self._observe_large(f, size, digest, command, stream, exit_code, scope, duration_ms,
                                       measure_only=sw.measure_only or self.mode == "measure")
        except Exception as exc:  # noqa: BLE001
            log.warning("large payload failed: %r; raw output passed through", exc)
            return Outcome(b"", None, None)

    def _observe_large(self, f, size, digest, command, stream, exit_code, scope, duration_ms, measure_only):
        cls = classify(command, _peek(f, 1024))
        body, removed, cut_bytes = huge.summarise(f)
        # Tokens of a payload this size are estimated from its bytes, and labelled so.
        raw_tokens = tokens.estimate_bytes(size)
        if measure_only:
            self._record_large(cls, command, stream, exit_code, scope, duration_ms, size, raw_tokens,
                               tokens.count_bytes(body), None, removed, applied=False, cut_bytes=cut_bytes)
            return Outcome(b"", None, None)
        handle = self.archive.put_file(f, size, digest, command)
        text = body.decode("utf-8", "surrogateescape")
        data = guard.with_footer(text, handle).encode("utf-8", "surrogateescape")
        emission_id = self._record_large(cls, command, stream, exit_code, scope, duration_ms, size, raw_tokens,
                                         tokens.count_bytes(data), handle, removed, applied=True, emitted_bytes=len(data),
                                         cut_bytes=cut_bytes)
        return Outcome(data, emission_id, handle)

    def _record_large(self, cls, command, stream, exit_code, scope, duration_ms, size, raw_tokens, emitted_tokens,
                      handle, removed, applied, emitted_bytes=0, cut_bytes=0):
        row = Row(scope=scope or self.scope, command=command, family=cls.family, transform="large_head_tail",
                  stream=stream, mode=self.mode, applied=applied, raw_tokens=raw_tokens,
                  emitted_tokens=emitted_tokens if applied else raw_tokens, raw_bytes=size,
                  emitted_bytes=emitted_bytes if applied else size, exit_code=exit_code, handle=handle,
                  duration_ms=duration_ms, token_label=tokens.LABEL_APPROX, would_emit_tokens=emitted_tokens,
                  manifest=[{"reason": "beyond line budget (large payload)", "count": removed}]
                  + ([{"reason": "bytes of long lines not shown (large payload)", "count": 0, "bytes": cut_bytes}]
                     if cut_bytes else []),
                  reports=[{"name": "large", "would_emit_tokens": emitted_tokens}])
        return self._safe_record(row)

    def _record(self, em: pipeline.Emission, command, stream, mode, exit_code, scope, duration_ms, raw_bytes,
                intent=None):
        row = Row(scope=scope or self.scope, command=command, family=em.family, transform=em.transform_id,
                  stream=stream, mode=mode, applied=em.applied, raw_tokens=em.raw_tokens,
                  emitted_tokens=em.emitted_tokens if em.applied else em.raw_tokens,
                  raw_bytes=raw_bytes, emitted_bytes=len(em.data), exit_code=exit_code, handle=em.handle,
                  duration_ms=duration_ms, token_label=tokens.label(), would_emit_tokens=em.would_emit_tokens,
                  intent=intent,
                  manifest=[r.as_dict() for r in em.removals],
                  reports=[r.as_dict() for r in em.reports] + [{"name": "would_emit", "tokens": em.would_emit_tokens}])
        return self._safe_record(row)

    def _safe_record(self, row: Row) -> int | None:
        try:
            return self.ledger.record(row)
        except Exception as exc:  # noqa: BLE001 - a ledger failure must not cost the agent its output
            log.warning("ledger write failed: %r", exc)
            return None

    def close(self) -> None:
        self.drain()
        for store in (self._archive, self._ledger):
            if store is not None:
                store.close()


def _peek(f: BinaryIO, n: int) -> bytes:
    f.seek(0)
    data = f.read(n)
    f.seek(0)
    return data
