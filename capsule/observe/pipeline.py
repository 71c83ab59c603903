"""The observation pipeline for one Observation: CLASSIFY → POLICY → TRANSFORM → GUARD → ARCHIVE → FIT,
or, for a spooled payload too large to hold, the HUGE stage (salient lines, error windows, edges).

Not responsible for I/O beyond the archive it is handed, nor for the ledger row (the
engine writes it from the Emission). Pure apart from the archive put. Classifies once.
Invariants: any transform failure emits raw (INV-4); never worse (INV-3) and worth it; verbatim-class
lines survive or raw is emitted (INV-7); a lossy emission has one footer and markers that add up
(INV-5: one per omitted run in the form of markers.py, written by the salience model under the cut
(rarity.py) or by a streaming family that marks its own (filters/streaming.py), else the single
`[N more lines]`).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field, replace

from capsule.ground import switches, tokens
from capsule.ground.types import Limit, Observation
from capsule.observe import fit, guard, markers, rarity, registry
from capsule.observe.classify import Classification, classify
from capsule.observe.intent import shorten
from capsule.observe.keep import missing, split as keep_split
from capsule.observe.salience import with_intent
from capsule.observe.transform_types import Context, Removal, StageReport
from capsule.observe.verbatim import EXEMPT_TRANSFORMS
from capsule.store.archive import handle_of

log = logging.getLogger("capsule.pipeline")


# Transforms that cut an output by dropping its lines (not re-shaping a document, not a read): the
# salience model runs under them and their omissions are re-marked in the one form.
REMARKED = frozenset({"default", "filter", "logs", "line_budget", "run_collapse"})
MODELLED = frozenset({"default", "line_budget"})     # the salience model's own cut (rarity.shape)
def _in_contract(text: str, out_text: str, original_markers: int) -> bool:
    """A transform's own cut already in the one marker contract (ranged markers that add up, as
    markers.render writes them): it stands as it is."""
    if guard.count_markers(out_text) <= original_markers:
        return False
    return markers.check(len(keep_split(text)), keep_split(out_text), original_markers) is None


PENDING = -1     # a stage report's token figure not yet counted (Emission.settle fills it in)


@dataclass
class Emission:
    """What the agent sees, and the figures the ledger records about it.

    Counting the raw input's tokens is most of the cost of a large observe, and the agent does
    not need it: the guard decides on a cheap lower bound (tokens.at_least) and the exact count
    is made when a figure is first read (settle), after the data has been emitted."""

    data: bytes                  # what the agent sees
    known_raw_tokens: int | None  # None until settle() counts raw_text
    known_emitted_tokens: int | None  # None: raw was emitted, so it is the raw count
    family: str
    transform_id: str
    handle: str | None = None    # set when the emission is lossy
    applied: bool = True         # False in measure-only mode: data is raw
    known_would_emit: int | None = None   # None: the raw count
    removals: list[Removal] = field(default_factory=list)
    reports: list[StageReport] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)   # a transform's own, for the log
    notice: str | None = None    # one line the door shows the user (stderr): an engine failure the log cannot hold
    elapsed_ms: float = 0.0
    raw_text: str | None = field(default=None, repr=False)
    transformed_text: str | None = field(default=None, repr=False)
    raw_bytes: int = 0           # the size of the original
    token_label: str | None = None   # None: the tokenizer's own label (tokens.label())
    sent_tokens_known: int | None = None  # a door's own view: the tokens it sends, whatever `applied` says
    ledger_manifest: list[dict] | None = None   # the huge stage's own manifest and reports
    ledger_reports: list[dict] | None = None
    emission_id: int | None = None   # the ledger row, once written (None while deferred or unrecorded)
    intent: str | None = None        # the goal the transform was given (an over-long one shortened)
    parts: list | None = None        # a media observation: the blocks to send (None: the original)

    @property
    def lossy(self) -> bool:
        return self.handle is not None

    def settle(self) -> None:
        """Count what was deferred (exact, the same figures as counting up front)."""
        if self.known_raw_tokens is None:
            # a transform's output counted next that keeps most of the lines: encode them once
            out_text, raw_text = self.transformed_text, self.raw_text or ""
            reuse = out_text is not None and out_text != raw_text and 2 * len(out_text) > len(raw_text)
            self.known_raw_tokens = tokens.count(raw_text, remember=reuse)
        elif self.raw_text is None and self.transformed_text is None:
            return
        out = None
        if self.transformed_text is not None:
            same = self.transformed_text == self.raw_text
            out = self.known_raw_tokens if same else tokens.count(self.transformed_text)
        for r in self.reports:
            if r.tokens_before == PENDING:
                r.tokens_before = self.known_raw_tokens
            if r.tokens_after == PENDING:
                r.tokens_after = self.known_raw_tokens if out is None or r.name != "transform" else out
        self.raw_text = self.transformed_text = None

    @property
    def raw_tokens(self) -> int:
        self.settle()
        return self.known_raw_tokens

    @property
    def emitted_tokens(self) -> int:
        return self.raw_tokens if self.known_emitted_tokens is None else self.known_emitted_tokens

    @emitted_tokens.setter
    def emitted_tokens(self, n: int) -> None:
        self.known_emitted_tokens = n

    @property
    def sent_tokens(self) -> int:
        """Tokens of what the agent got: the emission when applied, else the original."""
        if self.sent_tokens_known is not None:
            return self.sent_tokens_known
        return self.emitted_tokens if self.applied else self.raw_tokens

    @property
    def would_emit_tokens(self) -> int:
        return self.raw_tokens if self.known_would_emit is None else self.known_would_emit

    @would_emit_tokens.setter
    def would_emit_tokens(self, n: int) -> None:
        self.known_would_emit = n


def raw_emission(data: bytes) -> Emission:
    """What fail-open returns: the original, unrecorded (an empty `data` with a spool: stream the spool)."""
    return Emission(data, None, None, "unknown", "passthrough", applied=False, raw_bytes=len(data))


def failed_open(data: bytes, error: BaseException, original: bytes | None, size: int) -> Emission:
    """The original after the engine itself failed (a store busy past its budget, a bug): recorded
    like any output, with the error named in its reports. `data` is what the door sends (b"": it
    streams its spool); `original` is the text counted late, None for a payload too large to hold,
    whose tokens are estimated from its size."""
    known, label = (None, None) if original is not None else (tokens.estimate_bytes(size), tokens.LABEL_APPROX)
    em = Emission(data, known, None, "unknown", "passthrough:engine-error", applied=False, raw_bytes=size,
                  raw_text=None if original is None else original.decode("utf-8", "surrogateescape"),
                  token_label=label)
    em.reports.append(StageReport("engine", PENDING, PENDING, f"failed open: {error!r}"[:300]))
    return em


def run(obs: Observation, archive, *, mode: str, languages: tuple[str, ...], measure_only: bool,
        large_bytes: int, long_line_bytes: int, salient: list[str] | None = None, cues=None) -> Emission:
    """The one way through: an Observation in, one Emission out (the engine records it).
    `salient`: what this session's failures named (observe/salience.py), ranked with the intent;
    `cues`: () -> observe.cues.Cues, the session's cues, called only by a cut that ranks by them."""
    if obs.view is not None:
        return _door_view(obs, measure_only)
    raw = obs.raw
    if obs.spool is not None:
        if obs.size > large_bytes:
            return _huge(obs, archive, mode, measure_only)
        obs.spool.seek(0)
        raw = obs.spool.read()
        if len(raw) > long_line_bytes and max(map(len, raw.split(b"\n"))) > long_line_bytes:
            del raw
            return _huge(obs, archive, mode, measure_only)
    intent = shorten(obs.intent)[0] if obs.intent else None    # an over-long goal never costs the output
    cls = classify(obs.command, raw[:1024], obs.cwd)
    if intent and cls.transform_id == "default" and not cls.passthrough:
        # No tool-specific filter knows this output, but the step's goal is known.
        cls = replace(cls, transform_id="reflex", reason=cls.reason + "; intent known: reflex")
    stated = intent  # what the ledger keeps: the client's own goal, not what the session added to it
    if salient:      # (after the reflex choice: a session's failures do not make every output a reflex read)

        intent = shorten(with_intent(intent, salient))[0]
    ctx = Context(command=obs.command, family=cls.family, stream=obs.stream, intent=intent, exit_code=obs.exit_code,
                  mode="standard" if mode == "measure" else mode, path=obs.path, languages=languages,
                  filter_id=cls.filter_id, cues=cues)
    em = process(raw, ctx, archive, cls, measure_only=measure_only)
    em.raw_bytes, em.intent = len(raw), stated
    if obs.limit is not None and obs.budget is not None and not measure_only:
        em = _fit(em, raw, obs.command, obs.limit, obs.budget, archive)
    return em


def _fit(em: Emission, raw: bytes, command: str | None, limit: Limit, budget: int, archive) -> Emission:
    """FIT: still over the client's cap after compression, the original is shaped, errors first."""
    if limit.size(em.data.decode("utf-8", "surrogateescape")) <= budget:
        return em
    handle = archive.put(raw, command)
    shaped = fit.fit(raw.decode("utf-8", "surrogateescape"), budget, limit.size, handle, context=limit.context,
                     head=limit.head, tail=limit.tail, line_chars=limit.line_chars)
    em.data = shaped.encode("utf-8", "surrogateescape")
    em.emitted_tokens = em.would_emit_tokens = tokens.count(shaped)
    em.handle, em.applied = handle, True
    em.transform_id = f"{em.transform_id}+fit:{limit.client}"
    return em


def _huge(obs: Observation, archive, mode: str, measure_only: bool) -> Emission:
    """HUGE: a payload never loaded whole (over the engine's size, or with a line too long to
    tokenise) shows its salient lines, error windows and edges (huge.py), one ranged marker per
    omitted run; its tokens are estimated, and labelled so."""
    from capsule.observe import huge  # noqa: PLC0415 - bench_startup "ctx run cold, no engine"; only a payload too large to hold comes here (~2 ms)

    f = obs.spool
    f.seek(0)
    head = f.read(1024)
    f.seek(0)
    cls = classify(obs.command, head)
    body, removed, cut_bytes, notes = huge.summarise(f)
    raw_tokens = tokens.estimate_bytes(obs.size)
    manifest = [{"reason": "beyond line budget (large payload)", "count": removed}] + (
        [{"reason": "bytes of long lines not shown (large payload)", "count": 0, "bytes": cut_bytes}] if cut_bytes else [])
    if measure_only:
        would = tokens.count_bytes(body)
        data, handle, emitted = b"", None, None          # b"": the door streams its spool
    else:
        handle = archive.put_file(f, obs.size, obs.digest, obs.command)
        text = guard.with_footer(body.decode("utf-8", "surrogateescape"), handle)
        if notes:       # what the markers cannot say (bytes cut from shown lines) rides on the footer's line
            text = text[:-1] + " " + notes.decode() + "\n"
        data = text.encode("utf-8", "surrogateescape")
        would = emitted = tokens.count_bytes(data)
    em = Emission(data, raw_tokens, emitted, cls.family, "large_salient", handle=handle, applied=not measure_only,
                  known_would_emit=would, raw_bytes=obs.size, token_label=tokens.LABEL_APPROX,
                  ledger_manifest=manifest, ledger_reports=[{"name": "large", "would_emit_tokens": would}],
                  intent=shorten(obs.intent)[0] if obs.intent else None)
    return em


def _door_view(obs: Observation, measure_only: bool) -> Emission:
    """A door's own view on the agent's explicit request (a ctx_read mode): recorded as sent, with
    what an active door would send (`would_view`) as the would-emit figure."""
    sent = tokens.count(obs.view)
    would = sent if obs.would_view is None else tokens.count(obs.would_view)
    return Emission(obs.view.encode("utf-8", "surrogateescape"), tokens.count(obs.raw.decode("utf-8", "surrogateescape")),
                    sent, "read", obs.transform or "read", applied=not measure_only, known_would_emit=would,
                    raw_bytes=len(obs.raw), sent_tokens_known=sent)


def process(raw: bytes, ctx: Context, archive=None, classification: Classification | None = None,
            measure_only: bool = False) -> Emission:
    start = time.perf_counter()
    text = raw.decode("utf-8", "surrogateescape")
    # The exact raw count is deferred (Emission.settle); decisions use this floor, and the exact
    # count only when the floor cannot decide (small outputs, or an emission close to raw).
    floor = tokens.at_least(text)
    exact: list[int] = [floor] if len(text) < tokens.EXACT_BELOW else []

    def raw_count() -> int:
        if not exact:
            exact.append(tokens.count(text))
        return exact[0]

    reports: list[StageReport] = []
    transformed: list[str] = []      # the transform's own output, counted for its stage report

    cls = classification or classify(ctx.command, raw[:1024])
    ctx = replace(ctx, family=cls.family if ctx.family == "unknown" else ctx.family,
                  filter_id=ctx.filter_id or cls.filter_id)
    reports.append(StageReport("classify", PENDING, PENDING, f"{cls.family} -> {cls.transform_id} ({cls.reason})"))

    def emission(data: bytes, emitted: int | None, transform_id: str, **kw) -> Emission:
        em = Emission(data, exact[0] if exact else None, emitted, ctx.family, transform_id, reports=reports,
                      raw_text=text, transformed_text=transformed[0] if transformed else None,
                      **kw)
        em.elapsed_ms = (time.perf_counter() - start) * 1000
        return em

    def passthrough(reason: str, transform_id: str = "passthrough", warn: str | None = None) -> Emission:
        reports.append(StageReport("guard", PENDING, PENDING, reason))
        em = emission(raw, None, transform_id, applied=not measure_only)
        if warn:
            em.warnings.append(warn)
            log.warning(warn)
        return em

    if ctx.mode == "off" or cls.passthrough:
        return passthrough(f"passthrough: {'mode off' if ctx.mode == 'off' else cls.reason}")
    if guard.is_small(text, floor if floor > guard.SMALL_TOKENS else raw_count(), cls.transform_id):
        return passthrough("small output: untouched")

    if ctx.mode == "aggressive":
        from capsule.observe.content import gate  # noqa: PLC0415 - bench_startup "ctx run cold, no engine"; only the aggressive mode asks it

        if not gate.worth_aggressive(text):
            # The Kolmogorov gate: incompressible content gains nothing from aggressive modes.
            ctx = replace(ctx, mode="standard")
            reports.append(StageReport("gate", PENDING, PENDING, "incompressible: aggressive -> standard"))

    # TRANSFORM, isolated: any exception means raw output and a logged warning.
    tid = cls.transform_id
    try:
        if os.environ.get(switches.FAULT_INJECT) in (tid, "*"):
            raise RuntimeError(f"injected fault in {tid}")
        result = registry.get(tid)(text, ctx)
    except Exception as exc:  # noqa: BLE001 - fail open is the contract
        return passthrough(f"transform {tid} failed: raw", tid,
                           warn=f"transform {tid} failed: {exc!r}; raw output passed through")
    out_text = result.text
    transformed.append(out_text)
    reports.append(StageReport("transform", PENDING, PENDING, result.transform_id, result.removals))

    if out_text == text:
        return passthrough("transform changed nothing", result.transform_id)

    # POLICY after the fact: every verbatim-class line, and every line the whole-text rules
    # protect (error blocks, anomalies, rare lines of a failing run), must still be there.
    # (A delegating transform, such as a file read that outlines, is judged as what it ran.)
    exempt = tid in EXEMPT_TRANSFORMS or result.transform_id in EXEMPT_TRANSFORMS
    lost = [] if result.lossless or exempt else missing(text, out_text, ctx.exit_code)
    reports.append(StageReport("policy", PENDING, PENDING,
                               f"verbatim-class lines lost: {len(lost)}" if lost else "every verbatim-class line kept"))
    if lost:
        return passthrough(f"verbatim line lost ({lost[0][:80]!r}): raw", result.transform_id,
                           warn=f"{result.transform_id} dropped {len(lost)} verbatim line(s); raw output passed through")

    # The salience model under every line-dropping family (observe/rarity.py): the rare lines the
    # family cut go back, and every omitted run gets one marker of the one contract (markers.py).
    original_markers = guard.count_markers(text)
    removed = result.removed_lines
    remarked = None
    if tid in MODELLED and any(r.start is not None and r.reason.startswith("salience") for r in result.removals):
        remarked = out_text     # the model's own cut: already in the contract's form
    elif markers.RANGED_NOTE in result.notes:
        remarked = out_text     # a family that marked its own cut, rare lines kept (filters/streaming.py)
    elif tid in REMARKED and not result.lossless:
        remarked = rarity.under(text, out_text)
    if remarked is not None:
        out_text = remarked
        check = markers.check_ranged if markers.RANGED_NOTE in result.notes else markers.check
        broken = check(len(keep_split(text)), keep_split(out_text), original_markers)
        if broken:
            return passthrough(f"marker contract broken ({broken}): raw", result.transform_id,
                               warn=f"{result.transform_id}: {broken}; raw output passed through")
        if out_text == text:
            return passthrough("transform changed nothing", result.transform_id)
    else:
        out_text = guard.with_marker(out_text, removed, original_markers)
    if remarked is None and not guard.marker_ok(out_text, removed, original_markers) and not _in_contract(
            text, out_text, original_markers):
        return passthrough("marker contract broken: raw", result.transform_id,
                           warn=f"{result.transform_id} broke the one-marker contract; raw output passed through")

    # The handle is a pure function of the original, so the footer can be measured exactly
    # before anything is stored; footer tokens count toward never-worse.
    handle = handle_of(raw)
    footer_text = guard.with_footer(out_text, handle)
    if not guard.worth_counting(len(text), len(footer_text)):
        return passthrough(f"not worth it: saves {len(text) - len(footer_text)} of {len(text)} characters: raw",
                           result.transform_id)
    emitted_tokens = tokens.count(footer_text, remember=True)     # its original is counted next
    # Never worse and worth it grow with the raw count: holding on the floor, they hold exactly.
    if emitted_tokens >= floor or not guard.worth_it(floor, emitted_tokens):
        if emitted_tokens >= raw_count():
            return passthrough(f"never worse: {emitted_tokens} >= {raw_count()} tokens: raw", result.transform_id)
        if not guard.worth_it(raw_count(), emitted_tokens):
            return passthrough(f"not worth it: saves {raw_count() - emitted_tokens} of {raw_count()} tokens: raw",
                               result.transform_id)

    if measure_only:
        reports.append(StageReport("guard", PENDING, emitted_tokens, "measure only: raw emitted"))
        return emission(raw, None, result.transform_id, applied=False, known_would_emit=emitted_tokens,
                        removals=result.removals)

    if archive is not None:
        archive.put(raw, ctx.command)
    data = footer_text.encode("utf-8", "surrogateescape")
    reports.append(StageReport("guard", PENDING, emitted_tokens, "ok"))
    reports.append(StageReport("archive", emitted_tokens, emitted_tokens, handle or "no archive"))
    return emission(data, emitted_tokens, result.transform_id, handle=handle, known_would_emit=emitted_tokens,
                    removals=result.removals)
