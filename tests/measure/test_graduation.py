"""`ctx doctor` graduation view: a measure-only role's baseline and what standard mode would save."""

from __future__ import annotations

import json

from capsule.measure.ledger import Ledger


def test_doctor_shows_the_baseline_and_the_would_save_for_a_measure_role(capsule, tmp_path):
    empty = json.loads(capsule("ctx", "doctor", "--role", "default", "--json").stdout)
    assert empty["graduation"] == {"emissions": 0}
    listing = tmp_path / "many"
    listing.mkdir()
    for i in range(300):
        (listing / f"file_{i:03d}.txt").write_text("x")
    for scope in ("s1", "s2"):
        proc = capsule("ctx", "run", "--", "ls", "-la", str(listing), env={"JACKIN_CTX_MODE": "measure",
                                                                          "JACKIN_CTX_SCOPE": scope})
        assert proc.returncode == 0, proc.stderr
    rows = Ledger().rows()
    assert len(rows) == 2 and not any(r["applied"] for r in rows)
    report = json.loads(capsule("ctx", "doctor", "--role", "default", "--json").stdout)
    g = report["graduation"]
    assert g["emissions"] == 2 and g["sessions"] == 2
    assert g["raw_tokens"] == sum(r["raw_tokens"] for r in rows)
    assert g["would_save_tokens"] == sum(r["raw_tokens"] - r["would_emit_tokens"] for r in rows) > 0
    text = capsule("ctx", "doctor", "--role", "default").stdout.decode()
    assert f"standard mode would have saved {g['would_save_tokens']:,}" in text
    # A role that already compresses has nothing to graduate from.
    assert json.loads(capsule("ctx", "doctor", "--role", "python-dev", "--json").stdout)["graduation"] is None
