"""Answer audit: tokens only in removed content are flagged with a risk; kept ones never."""

import json

from capsule.cli.main import main
from capsule.engine import Engine
from capsule.measure import audit
from capsule.observe import rerun as reruns
from capsule.ground.types import Observation


def test_check_answer_flags_only_removed_tokens():
    removed = [("row 233: INV-2024-0233 Cyberdyne 667.98 EUR", "rows 4-300 sampled out", 233),
               ("duplicate: shipping_address_v2", "duplicate hit", 9)]
    kept = "INV-2024-0001 Wonka 261.67\nINV-2024-0760 Gringotts"
    answer = ("The overdue invoice is INV-2024-0233 for 667.98 from Cyberdyne; "
              "INV-2024-0001 is paid. Field shipping_address_v2 changed.")
    result = audit.check_answer(answer, removed, kept)
    found = {f.token: f for f in result.findings}
    assert found["INV-2024-0233"].risk == "high" and found["INV-2024-0233"].line == 233
    assert found["667.98"].risk == "high"
    assert found["shipping_address_v2"].risk == "low"
    assert "INV-2024-0001" not in found
    assert result.risk == "high"
    clean = audit.check_answer("INV-2024-0001 is paid.", removed, kept)
    assert clean.risk == "none" and clean.checked >= 1


def test_cli_audit_end_to_end(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("JACKIN_CTX_STATE_DIR", str(tmp_path / "state"))
    lines = [f"2026-01-01 10:00:{i % 60:02d} INFO rendered INV-2024-{i:04d} ({25000 + i} bytes)"
             for i in range(200)]
    raw = ("\n".join(lines) + "\n").encode()
    engine = Engine()
    out = engine.observe(Observation(raw, command=None, intent="render run"))
    assert out.emission_id and b"INV-2024-0150" not in out.data
    answer = tmp_path / "answer.txt"
    answer.write_text("Invoice INV-2024-0150 was rendered; INV-2024-0000 too.")
    assert main(["ctx", "audit", "--emission", str(out.emission_id), str(answer)]) == 0
    report = capsys.readouterr().out
    assert "INV-2024-0150" in report and "risk: high" in report
    assert "INV-2024-0000  only" not in report
    assert main(["ctx", "audit", "--emission", "999", str(answer)]) == 2


def _rows_json(n=120):
    rows = [{"id": i, "user": f"user{i:03d}", "status": "ok", "latency_ms": 20 + i % 7,
             "region": ["eu", "us", "ap"][i % 3], "error": None} for i in range(n)]
    rows[93]["user"] = "zebra-admin"     # an ordinary row only the intent singles out
    return json.dumps(rows, indent=2)


def test_rerun_uses_the_stored_intent(tmp_path, monkeypatch):
    from capsule.measure.ledger import Ledger
    from capsule.store.archive import Archive

    monkeypatch.setenv("JACKIN_CTX_STATE_DIR", str(tmp_path / "state"))
    intent = "what happened to zebra-admin"
    out = Engine().observe(Observation(_rows_json().encode(), command="curl -s api/users", intent=intent))
    shown = out.data.decode()
    assert "zebra-admin" in shown and "user092" not in shown      # the lossy tier, intent-conditioned
    row = Ledger().get(out.emission_id)
    assert row["intent"] == intent and row["transform"] == "json"
    original = Archive().get(out.handle).decode()
    rerun = reruns.emitted_text(row, original)
    assert rerun is not None and rerun in shown                     # the same text the model saw
    assert "zebra-admin" not in reruns.emitted_text({**row, "intent": None}, original)

    answer = "The failing account is zebra-admin; user003 looked fine."
    found = {f.token for f in audit.audit_emission(answer, row, original, reruns.emitted_text).findings}
    assert "zebra-admin" not in found                               # the model saw it
    assert "user003" in found                                       # sampled out (a preview)
