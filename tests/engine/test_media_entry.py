"""Media through the one door contract: a media Observation -> Engine.observe -> one Emission (parts to
send) + one ledger row; the master switch and any fault pass the original unrecorded."""

from __future__ import annotations

from capsule import engine_media
from capsule.engine import Engine
from capsule.ground import switches
from capsule.measure.ledger import Ledger
from tests.observe.media import fixtures as fx


def _obs(data, **kw):
    return engine_media.observation(data, door="test", path="spec.pdf", scope="s1", media_type="application/pdf",
                                    model="claude-sonnet-4-5", api="anthropic", table=kw.pop("table", None),
                                    context_mode=kw.pop("context_mode", "standard"), **kw)


def test_a_pdf_observation_gives_text_parts_and_one_ledger_row(state_dir):
    pdf = fx.born_digital_pdf(2)
    engine = Engine(state_dir)
    em = engine.observe(_obs(pdf))
    assert em.applied and em.parts and em.parts[0].text.startswith("[PDF spec.pdf: 2 pages")
    assert em.emission_id is not None and engine.archive.get(em.handle) == pdf
    (row,) = Ledger(state_dir / "ledger.db").rows()
    assert row["transform"] == "media:pdf:text" and row["command"] == "test:pdf spec.pdf" and row["stream"] == "pdf"
    assert row["emitted_tokens"] < row["raw_tokens"] and row["token_label"].startswith("formula:anthropic@")


def test_measure_records_what_it_would_send_and_sends_nothing_new(state_dir):
    engine = Engine(state_dir)
    em = engine.observe(_obs(fx.born_digital_pdf(1), context_mode="measure"))
    assert em.parts is None and not em.applied
    (row,) = Ledger(state_dir / "ledger.db").rows()
    assert not row["applied"] and row["would_emit_tokens"] < row["raw_tokens"] == row["emitted_tokens"]


def test_the_master_switch_and_bad_bytes_pass_the_original_unrecorded(state_dir, monkeypatch):
    engine = Engine(state_dir)
    assert engine_media.observation(b"plain text", door="t", path=None, scope=None, media_type=None, model=None,
                                    api="anthropic", table=None, context_mode=None) is None
    assert engine.observe(_obs(b"%PDF-1.7 broken")).parts is None
    monkeypatch.setenv(switches.DISABLE, "1")
    assert engine.observe(_obs(fx.born_digital_pdf(1))).parts is None
    assert not (state_dir / "ledger.db").exists() or Ledger(state_dir / "ledger.db").rows() == []
