"""CSV whose quoted fields hold newlines (issue 11, Clean failure): the engine must see records,
not lines — every record it shows is whole and keeps its row id; the original expands exactly."""

from __future__ import annotations

import csv
import io
import random
import re

import pytest

from capsule.engine import Engine
from capsule.ground.types import Observation

FOOTER = re.compile(r"^\[full output: .*<<ccr:([0-9a-f]{24})>>.*\]$")
MARKER = re.compile(r"^\[\d+ more lines?\]$")


def _table(rng: random.Random, rows: int) -> tuple[bytes, dict[str, list[str]]]:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")        # the stdlib's writer quotes as real tools do
    w.writerow(["id", "name", "note", "amount"])
    by_id = {}
    for i in range(1, rows + 1):
        lines = rng.choice([1, 1, 2, 3, 5])
        note = "\n".join(f"part {k} of note {i}, with a comma" if k % 2 else f"part {k} of note {i}"
                         for k in range(lines))
        rec = [str(i), f"name{i}", note, str(rng.randint(1, 99999))]
        by_id[rec[0]] = rec
        w.writerow(rec)
    return buf.getvalue().encode(), by_id


def _shown_records(out: str) -> list[list[str]]:
    body = [ln for ln in out.split("\n") if not ln.startswith("# ") and not MARKER.match(ln.strip())
            and not FOOTER.match(ln.strip())]
    return [r for r in csv.reader(io.StringIO("\n".join(body), newline="")) if r]


@pytest.mark.parametrize("seed", range(12))
def test_every_record_shown_is_whole_and_keeps_its_id(state_dir, seed):
    rng = random.Random(seed)
    raw, by_id = _table(rng, rng.randint(60, 400))
    engine = Engine(state_dir)
    outcome = engine.observe(Observation(raw, command=None, stream="content"))   # as `ctx pipe` sees it
    out = outcome.data.decode()
    assert len(outcome.data) < len(raw), "a table this size is worth shrinking"
    records = _shown_records(out)
    assert records[0] == ["id", "name", "note", "amount"]
    for rec in records[1:]:
        assert len(rec) == 4, f"a fragment without its row: {rec!r}"
        assert rec == by_id[rec[0]], f"record {rec[0]} was cut"
    handle = FOOTER.match(out.rstrip("\n").split("\n")[-1].strip()).group(1)
    assert engine.archive.get(handle) == raw
    engine.close()


def test_the_sniffer_recognises_a_table_whose_first_rows_hold_newlines():
    from capsule.observe.content.tabular import delimiter_of

    raw, _ = _table(random.Random(1), 40)
    head = raw.decode()[:1024]
    assert delimiter_of(head) == ","
    assert delimiter_of('He said "hi,\nthere" and left.\nNothing, here\n') is None
