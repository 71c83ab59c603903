"""Huge outputs keep their errors (issue 10 item 6): over 16 MiB the streaming path finds error
text anywhere — inside one huge line too — shows it, and its marker counts what really went."""

from __future__ import annotations

import io
import json
import re
import tempfile

from capsule.engine import LARGE_BYTES, Engine
from capsule.observe import guard, huge, markers
from capsule.ground.types import Observation

ERR = b"ERROR: replica 7 lost quorum (term 41)"


def _observe(state_dir, data: bytes) -> bytes:
    with tempfile.TemporaryFile() as f:
        f.write(data)
        size = f.tell()
        out = Engine(state_dir).observe(Observation(spool=f, size=size, digest="0" * 24, command="produce", stream="stdout", exit_code=1))
    return out.data


def test_error_after_17_mib_of_one_line_is_shown_and_the_cut_is_counted(state_dir):
    data = b"a" * (17 << 20) + b" " + ERR + b" " + b"b" * 1000
    assert len(data) > LARGE_BYTES
    out = _observe(state_dir, data)
    assert ERR in out
    assert b"[0 more lines]" not in out
    m = re.search(rb"\[(\d+) bytes not shown from 1 long line\]", out)
    assert m, out[-400:]
    shown = min(huge.LINE_CAP, huge.EDGE_BUDGET) + (2 * huge.WINDOW + len(b"ERROR"))
    assert int(m.group(1)) == len(data) - shown
    assert len(out) < 16 * 1024


def test_json_log_error_past_4096_bytes_of_its_line_keeps_its_text(state_dir):
    lines = []
    for i in range(4000):   # ~24 MB of JSON log lines of ~6 KB each
        rec = {"ts": f"2026-11-30T10:{i // 60 % 60:02d}:{i % 60:02d}Z", "level": "info", "blob": "x" * 6000,
               "msg": "request served"}
        if i == 2500:
            rec["level"] = "error"
            rec["msg"] = "upstream refused connection: pool exhausted"
        lines.append(json.dumps(rec).encode())
    data = b"\n".join(lines) + b"\n"
    assert len(data) > 24_000_000
    out = _observe(state_dir, data)
    assert b"upstream refused connection: pool exhausted" in out
    assert b"[line 2501, bytes " in out
    body = [ln for ln in out.decode().split("\n")[:-1] if not guard.FOOTER_RE.search(ln)]
    assert markers.check(4000, body) is None, markers.check(4000, body)     # ranged markers add up
    assert len(out) < 64 * 1024     # long head/tail lines share a budget: the error is not pushed out


def test_an_error_in_a_long_head_line_past_its_shown_part_gets_a_window():
    head = [b"h" * 6000 for _ in range(40)]
    head[2] = b"h" * 1000 + b" FATAL: head trouble " + b"h" * 5000
    body = b"\n".join(head) + b"\n" + b"filler line ok\n" * ((17 << 20) // 15)
    text, removed, cut, notes = huge.summarise(io.BytesIO(body))
    assert b"FATAL: head trouble" in text and b"[line 3, bytes " in text


def test_marker_counts_exactly_the_lines_not_shown():
    body = b"".join(b"worker ok %07d\n" % i for i in range(1_200_000))   # ~19 MB, short lines
    mid = body.index(b"worker ok 0600000\n")
    data = body[:mid] + b"FATAL: checksum mismatch in shard 12\n" + body[mid:]
    text, removed, cut, notes = huge.summarise(io.BytesIO(data))
    total = data.count(b"\n")
    assert b"FATAL: checksum mismatch in shard 12\n" in text
    lines = text.decode().split("\n")[:-1]
    assert markers.check(total, lines) is None, markers.check(total, lines)
    assert removed == total - len([ln for ln in lines if markers.parse(ln) is None]) and cut == 0 and not notes
    assert "[599979 more lines L21-599999]" in lines       # the run up to the FATAL line's neighbour: one marker
    assert text.startswith(b"worker ok 0000000\n") and text.endswith(b"worker ok 1199999\n")
