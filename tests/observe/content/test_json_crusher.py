"""JSON crusher: lossless tier proven by round trip; lossy tier keeps every anomalous row."""

import json

from capsule.observe.content import json_crusher, toon
from capsule.observe.transform_types import Context


def _records(n=120):
    rows = []
    for i in range(n):
        rows.append({"id": i, "user": f"user{i:03d}", "status": "ok", "latency_ms": 20 + i % 7,
                     "region": ["eu", "us", "ap"][i % 3], "error": None, "owner": "team-a"})
    rows[17]["error"] = "upstream timeout after 30s"
    rows[17]["status"] = "failed"
    rows[42]["owner"] = None                 # null where every other row has a value
    rows[77]["latency_ms"] = 9800            # numeric outlier
    rows[93]["user"] = "zebra-admin"         # only the intent names it
    return rows


def test_lossless_tier_round_trips_and_shrinks():
    data = {"items": [{"id": i, "name": f"pkg-{i}", "version": f"1.{i}.0", "ok": True}
                      for i in range(25)], "meta": {"source": "registry", "count": 25}}
    text = json.dumps(data, indent=2)
    result = json_crusher.crush(text, Context(mode="standard"))
    assert result.lossless is True
    assert toon.strict_equal(toon.decode(result.text), data) or \
        toon.strict_equal(json.loads(result.text), data)
    assert len(result.text) < 0.5 * len(text)


def test_lossy_tier_keeps_every_anomaly_and_discloses_counts():
    rows = _records(120)
    text = json.dumps(rows, indent=2)
    result = json_crusher.crush(text, Context(intent="what happened to zebra-admin"))
    assert result.lossless is False
    for marker in ("upstream timeout after 30s", "zebra-admin", "9800"):
        assert marker in result.text
    kept_rows = {int(x) for x in __import__("re").findall(r"(?m)^\s*(?:\"_row\": |)(\d+),", result.text)}
    assert {17, 42, 77, 93} <= kept_rows or all(f'"_row": {i}' in result.text for i in (17, 42, 77, 93))
    assert "of 120 rows" in result.text
    assert sum(r.count for r in result.removals) == 120 - len(json_crusher.sample(rows, "zebra-admin").kept)
    assert all(r.reason and r.preview for r in result.removals)


def test_anomaly_rules_name_their_reason():
    why = json_crusher.anomalies(_records(120), "zebra-admin")
    assert "error field error" in why[17]
    assert "null owner" in why[42]
    assert "outlier latency_ms" in why[77]
    assert any(r.startswith("intent") for r in why[93])


def test_error_rows_survive_the_verbatim_check():
    from capsule.observe.verbatim import missing_verbatim

    rows = _records(120)
    text = json.dumps(rows, indent=2)
    result = json_crusher.crush(text, Context())
    assert not missing_verbatim(text, result.text)


def test_stream_of_values_and_non_json():
    stream = '{"a": 1}\n{"a": 2}\n{"a": 3}\n'
    result = json_crusher.crush(stream, Context())
    assert result.lossless and "stream of 3" in result.notes[0]
    not_json = json_crusher.crush("{oops", Context())
    assert not_json.text == "{oops" and not not_json.removals


def _invoices(n=60):
    names = ["Wonka Confiserie", "Initech AG", "Tyrell Corp", "Pied Piper BV"]
    return [{"number": f"INV-2024-{i:04d}", "customer": names[i % 4], "issued": f"2024-0{1 + i % 9}-{10 + i % 18}",
             "month": f"2024-0{1 + i % 9}", "net": round(100 + i * 7.31, 2), "currency": "EUR",
             "status": ["paid", "open", "overdue"][i % 3], "note": None if i % 2 else "partial, see credit note"}
            for i in range(n)]


def test_lossless_forms_measure_every_delimiter_and_all_round_trip():
    from capsule.ground.tokens import count

    rows = _invoices()
    forms = json_crusher.lossless_forms(rows)
    toons = [(text, how) for text, how in forms if how.startswith("TOON")]
    assert {how.split(" (")[0] for _, how in toons} == {
        "TOON, comma-separated rows", "TOON, tab-separated rows", "TOON, space-separated rows"}
    assert all(toon.strict_equal(toon.decode(text), rows) for text, _ in toons)
    assert [count(t) for t, _ in forms] == sorted(count(t) for t, _ in forms)
    best = forms[0][0]
    header = best.split("\n")[0]
    assert "every row also has currency=EUR" in header and "month is the first 7 characters of issued" in header
    assert count(best) <= 0.4 * count(json.dumps(rows, indent=2))   # >= 60% against pretty JSON


def test_crush_emits_the_decodable_table():
    rows = _invoices(25)   # under the lossy tier's row floor: the lossless tier answers
    result = json_crusher.crush(json.dumps({"invoices": rows}, indent=2), Context())
    assert result.lossless and result.notes[0].startswith("TOON")
    assert toon.strict_equal(toon.decode(result.text), {"invoices": rows})


def test_long_strings_are_cut_but_short_values_and_error_fields_survive():
    import json as _json

    from capsule.observe.content.json_crusher import crush
    from capsule.observe.transform_types import Context

    packages = [{"metadata": {"name": f"pkg{i}", "version": f"1.{i}.0",
                              "requires_dist": ["urllib3<3,>=1.26"] if i == 7 else [],
                              "description": ("A long README paragraph about the package. " * 40)},
                 "installer": "pip"} for i in range(12)]
    doc = {"version": "1", "installed": packages,
           "error": "Traceback (most recent call last): " + "frame line here " * 40}
    text = _json.dumps(doc, indent=2)
    result = crush(text, Context())
    assert not result.lossless
    assert '"urllib3<3,>=1.26"' in result.text
    assert '"version": "1.7.0",' in result.text
    assert doc["error"] in result.text                       # error-like key: never cut
    assert "…[+" in result.text and len(result.text) < len(text) // 3
    assert all(r.reason.startswith("string over 400 chars") for r in result.removals)
    assert len(result.removals) == 12
