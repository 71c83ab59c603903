"""The names of records a sample does not show are listed compactly: a run of numbered names, zero
padded or not, is written first…last (400 `ord-00001`-style ids were listed one by one)."""

import json
import subprocess
import sys

from capsule.observe.content.json_records import compact


def test_zero_padded_runs_are_written_first_to_last():
    ids = [f"ord-{i:05d}" for i in range(4, 251)] + [f"ord-{i:05d}" for i in range(252, 400)]
    assert compact(ids) == "ord-00004…ord-00250, ord-00252…ord-00399"


def test_a_change_of_padding_or_a_gap_ends_the_run():
    assert compact(["v8", "v9", "v10", "v11"]) == "v8…v11"
    assert compact(["a1", "a2", "a03"]) == "a1, a2, a03"
    assert compact(["x09", "x10", "x11", "x100"]) == "x09…x11, x100"


def test_an_export_of_padded_ids_keeps_the_failed_record_and_stays_small(state_dir):
    rows = [{"id": f"ord-{i:05d}", "status": "shipped", "total": i * 1.5} for i in range(1, 401)]
    rows[250].update(status="failed", error="card_declined: issuer timeout")
    raw = json.dumps(rows, indent=2) + "\n"
    out = subprocess.run([sys.executable, "-m", "capsule", "ctx", "pipe", "--cmd", "cat orders.json"],
                         input=raw.encode(), capture_output=True, check=True).stdout.decode()
    assert "card_declined: issuer timeout" in out and "ord-00251" in out
    assert "ord-00004…ord-00250" in out
    assert len(out) < len(raw) / 10
