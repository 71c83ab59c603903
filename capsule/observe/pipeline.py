"""The observation pipeline for one payload: CLASSIFY → POLICY → TRANSFORM → GUARD → ARCHIVE.

Not responsible for I/O beyond the archive it is handed, nor for the ledger row (the
engine writes it from the Emission). Pure apart from the archive put.
Invariants: any transform failure emits raw (INV-4); never worse (INV-3) and worth it; verbatim-class
lines survive or raw is emitted (INV-7); a lossy emission has one marker and one footer (INV-5).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field, replace

from capsule.measure import tokens
from capsule.observe import guard, registry
from capsule.observe.content import gate
from capsule.observe.classify import Classification, classify
from capsule.observe.types import Context, Removal, StageReport
from capsule.observe.keep import missing
from capsule.observe.verbatim import EXEMPT_TRANSFORMS
from capsule.policy import switches
from capsule.store.archive import handle_of

log = logging.getLogger("capsule.pipeline")


@dataclass
class Emission:
    data: bytes                  # what the agent sees
    raw_tokens: int
    emitted_tokens: int
    family: str
    transform_id: str
    handle: str | None = None    # set when the emission is lossy
    applied: bool = True         # False in measure-only mode: data is raw
    would_emit_tokens: int | None = None
    removals: list[Removal] = field(default_factory=list)
    reports: list[StageReport] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    elapsed_ms: float = 0.0

    @property
    def lossy(self) -> bool:
        return self.handle is not None


def process(raw: bytes, ctx: Context, archive=None, classification: Classification | None = None,
            measure_only: bool = False) -> Emission:
    start = time.perf_counter()
    text = raw.decode("utf-8", "surrogateescape")
    raw_tokens = tokens.count(text)
    reports: list[StageReport] = []

    cls = classification or classify(ctx.command, raw[:1024])
    ctx = replace(ctx, family=cls.family if ctx.family == "unknown" else ctx.family,
                  filter_id=ctx.filter_id or cls.filter_id)
    reports.append(StageReport("classify", raw_tokens, raw_tokens, f"{cls.family} -> {cls.transform_id} ({cls.reason})"))

    def passthrough(reason: str, transform_id: str = "passthrough", warn: str | None = None) -> Emission:
        reports.append(StageReport("guard", raw_tokens, raw_tokens, reason))
        em = Emission(raw, raw_tokens, raw_tokens, ctx.family, transform_id, reports=reports,
                      applied=not measure_only, would_emit_tokens=raw_tokens)
        if warn:
            em.warnings.append(warn)
            log.warning(warn)
        em.elapsed_ms = (time.perf_counter() - start) * 1000
        return em

    if ctx.mode == "off" or cls.passthrough:
        return passthrough(f"passthrough: {'mode off' if ctx.mode == 'off' else cls.reason}")
    if guard.is_small(text, raw_tokens, cls.transform_id):
        return passthrough("small output: untouched")

    if ctx.mode == "aggressive" and not gate.worth_aggressive(text):
        # The Kolmogorov gate: incompressible content gains nothing from aggressive modes.
        ctx = replace(ctx, mode="standard")
        reports.append(StageReport("gate", raw_tokens, raw_tokens, "incompressible: aggressive -> standard"))

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
    reports.append(StageReport("transform", raw_tokens, tokens.count(out_text), result.transform_id, result.removals))

    if out_text == text:
        return passthrough("transform changed nothing", result.transform_id)

    # POLICY after the fact: every verbatim-class line, and every line the whole-text rules
    # protect (error blocks, anomalies, rare lines of a failing run), must still be there.
    # (A delegating transform, such as a file read that outlines, is judged as what it ran.)
    exempt = tid in EXEMPT_TRANSFORMS or result.transform_id in EXEMPT_TRANSFORMS
    lost = [] if result.lossless or exempt else missing(text, out_text, ctx.exit_code)
    reports.append(StageReport("policy", raw_tokens, raw_tokens,
                               f"verbatim-class lines lost: {len(lost)}" if lost else "every verbatim-class line kept"))
    if lost:
        return passthrough(f"verbatim line lost ({lost[0][:80]!r}): raw", result.transform_id,
                           warn=f"{result.transform_id} dropped {len(lost)} verbatim line(s); raw output passed through")

    original_markers = guard.count_markers(text)
    removed = result.removed_lines
    out_text = guard.with_marker(out_text, removed, original_markers)
    if not guard.marker_ok(out_text, removed, original_markers):
        return passthrough("marker contract broken: raw", result.transform_id,
                           warn=f"{result.transform_id} broke the one-marker contract; raw output passed through")

    # The handle is a pure function of the original, so the footer can be measured exactly
    # before anything is stored; footer tokens count toward never-worse.
    handle = handle_of(raw)
    footer_text = guard.with_footer(out_text, handle)
    emitted_tokens = tokens.count(footer_text)
    if emitted_tokens >= raw_tokens:
        return passthrough(f"never worse: {emitted_tokens} >= {raw_tokens} tokens: raw", result.transform_id)
    if not guard.worth_it(raw_tokens, emitted_tokens):
        return passthrough(f"not worth it: saves {raw_tokens - emitted_tokens} of {raw_tokens} tokens: raw",
                           result.transform_id)

    if measure_only:
        reports.append(StageReport("guard", raw_tokens, emitted_tokens, "measure only: raw emitted"))
        em = Emission(raw, raw_tokens, raw_tokens, ctx.family, result.transform_id, applied=False,
                      would_emit_tokens=emitted_tokens, removals=result.removals, reports=reports)
        em.elapsed_ms = (time.perf_counter() - start) * 1000
        return em

    if archive is not None:
        archive.put(raw, ctx.command)
    data = footer_text.encode("utf-8", "surrogateescape")
    reports.append(StageReport("guard", raw_tokens, emitted_tokens, "ok"))
    reports.append(StageReport("archive", emitted_tokens, emitted_tokens, handle or "no archive"))
    em = Emission(data, raw_tokens, emitted_tokens, ctx.family, result.transform_id, handle=handle,
                  would_emit_tokens=emitted_tokens, removals=result.removals, reports=reports)
    em.elapsed_ms = (time.perf_counter() - start) * 1000
    return em
