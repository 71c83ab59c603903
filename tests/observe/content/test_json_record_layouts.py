"""Records in every layout (issue 25): one record a line (a JSON array written so, JSON Lines, a JSON
log stream) gets the record sampling of pretty JSON with the anomalous record kept, each shown
record its own line; the key that identifies records is never sampled away. The files are written
by Python's json module and read with the real `cat`."""

from __future__ import annotations

import json
import random
import re
import subprocess

from capsule.engine import Engine
from capsule.ground.types import Observation
from capsule.ground import tokens


def orders() -> list[dict]:
    rnd = random.Random(7)
    recs = [{"id": f"ord-{1000 + i}", "customer": f"cust-{rnd.randint(1, 80):03}", "status": "paid",
             "amount_cents": rnd.randint(500, 20000), "currency": "EUR", "items": rnd.randint(1, 5),
             "created": f"2026-11-{1 + i % 28:02}T10:{i % 60:02}:00Z"} for i in range(400)]
    recs[233].update(status="refund_failed", error="gateway timeout after 3 retries")
    return recs


def cat(tmp_path, name: str, text: str) -> bytes:
    (tmp_path / name).write_text(text)
    return subprocess.run(["cat", name], cwd=tmp_path, capture_output=True, check=True).stdout


def expand(text: str) -> set[str]:
    """Every value a `first…last` run of consecutive `prefix<N>` values stands for, and the rest."""
    out = set()
    for item in re.split(r",\s*|:\s+", text):
        m = re.fullmatch(r"(.*?)(\d+)…(.*?)(\d+)", item.strip())
        if m and m.group(1) == m.group(3):
            out |= {f"{m.group(1)}{n}" for n in range(int(m.group(2)), int(m.group(4)) + 1)}
        out.add(item.strip())
    return out


def check(tmp_path, raw: bytes, command: str, lines: list[str]) -> str:
    out = Engine(tmp_path / "st", mode="standard", scope="t").observe(Observation(raw, command=command)).data.decode()
    anomalous = next(ln for ln in lines if "refund_failed" in ln)
    assert {anomalous, anomalous + ","} & set(out.splitlines())         # the record that differs, as written
    assert tokens.count(out) < tokens.count_bytes(raw) // 10            # it passed whole before
    ident = next(ln for ln in out.splitlines() if "id of the" in ln)
    assert {r["id"] for r in orders()} <= expand(ident) | set(re.findall(r'"id": "([^"]+)"', out))
    return out


def test_a_json_array_one_record_a_line(tmp_path):
    lines = [json.dumps(r) for r in orders()]
    raw = cat(tmp_path, "orders.json", "[\n" + ",\n".join(lines) + "\n]\n")
    out = check(tmp_path, raw, "cat orders.json", lines)
    assert out.splitlines()[2] == "["


def test_json_lines(tmp_path):
    lines = [json.dumps(r) for r in orders()]
    raw = cat(tmp_path, "orders.jsonl", "\n".join(lines) + "\n")
    check(tmp_path, raw, "cat orders.jsonl", lines)


def test_a_json_log_stream_keeps_its_error_record(tmp_path):
    # docker's json-file driver: one {"log","stream","time"} object a line
    lines = [json.dumps({"log": f"GET /api/orders/{i} 200 {3 + i % 9}ms\n", "stream": "stdout",
                         "time": f"2026-12-01T10:{i // 60 % 60:02}:{i % 60:02}.000000000Z"}) for i in range(300)]
    lines[171] = json.dumps({"log": "ERROR refund_half: ZeroDivisionError in cents rounding\n", "stream": "stderr",
                             "time": "2026-12-01T10:02:51.000000000Z"})
    raw = cat(tmp_path, "container.log", "\n".join(lines) + "\n")
    out = Engine(tmp_path / "st", mode="standard", scope="t").observe(Observation(raw, command="cat container.log")).data.decode()
    assert lines[171] in out.splitlines()
    assert tokens.count(out) < tokens.count_bytes(raw) // 5


def test_npm_view_array_of_version_documents_keeps_every_version(tmp_path):
    docs = [{"_id": f"left-pad@5.{i // 10}.{i % 10}", "name": "left-pad", "version": f"5.{i // 10}.{i % 10}",
             "description": "String left pad", "license": "WTFPL",
             "dist": {"shasum": f"{i:040x}", "tarball": f"https://registry.npmjs.org/left-pad/-/left-pad-5.{i}.tgz"},
             "maintainers": [{"name": "stevemao", "email": "maochenyan@gmail.com"}]} for i in range(45)]
    raw = cat(tmp_path, "view.json", json.dumps(docs, indent=2) + "\n")
    out = Engine(tmp_path / "st", mode="standard", scope="t").observe(Observation(raw, command="npm view left-pad@5 --json")) \
        .data.decode()
    assert tokens.count(out) < tokens.count_bytes(raw) // 3
    head = out.splitlines()[0]
    shown = set(re.findall(r'"version": "([^"]+)"', out))
    assert {d["version"] for d in docs} <= expand(head.split("version of the", 1)[1]) | shown


def test_an_empty_error_field_on_every_record_is_no_error(tmp_path):
    # exports often carry `"error": null` on every row: that names no error, so the rows are sampled;
    # the rows whose error has a value are each kept, as written (both layouts, read with the real cat)
    recs = [{"id": f"ord-{i:05d}", "status": "shipped", "total": round(10 + i * 7.31 % 400, 2), "error": None}
            for i in range(1, 401)]
    for i, why in ((50, "card_declined: issuer timeout after 30s"), (251, "refund failed: gateway 502"),
                   (333, "address not found")):
        recs[i].update(status="failed", error=why)
    lines = [json.dumps(r) for r in recs]
    for name, text in (("orders.json", "[\n" + ",\n".join(lines) + "\n]\n"), ("orders.jsonl", "\n".join(lines) + "\n")):
        raw = cat(tmp_path, name, text)
        out = Engine(tmp_path / "st", mode="standard", scope="t").observe(
            Observation(raw, command=f"cat {name}")).data.decode()
        shown = {ln.rstrip(",") for ln in out.splitlines()}
        assert {lines[50], lines[251], lines[333]} <= shown, out[:2000]
        assert tokens.count(out) < tokens.count_bytes(raw) // 10, out[:2000]
