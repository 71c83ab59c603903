"""The content door through the real engine: sniffed content reaches its typed transform,
and the pipeline's guard accepts the result (footer, one marker, errors kept)."""

import json

from capsule.engine import Engine
from capsule.ground.types import Observation


def test_piped_csv_is_sampled_and_recoverable(state_dir):
    rows = ["id,name,amount"] + [f"{i},n{i},{10 + i % 3}" for i in range(300)]
    rows[200] = "199,n199,99999"
    raw = ("\n".join(rows) + "\n").encode()
    out = Engine().observe(Observation(raw, command=None))
    text = out.data.decode()
    assert "199,n199,99999" in text and "# 300 rows" in text
    assert "capsule ctx expand '<<ccr:" in text and out.handle


def test_piped_json_array_keeps_error_rows(state_dir):
    data = [{"id": i, "status": "ok", "error": None, "ms": 20 + i % 5} for i in range(200)]
    data[150]["error"] = "connection refused by upstream"
    raw = json.dumps(data, indent=2).encode()
    engine = Engine()
    out = engine.observe(Observation(raw, command=None))
    text = out.data.decode()
    assert "connection refused by upstream" in text
    assert len(out.data) < len(raw) / 5
    row = engine.ledger.get(out.emission_id)
    assert row["transform"] == "json" and any("sampled out" in r["reason"] for r in row["manifest"])
