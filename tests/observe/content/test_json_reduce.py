"""Structural reduction of any large collection (issue 10 item 1): long arrays of scalars, wide
maps and deep documents shrink, every anomaly and the path to each kept part survive, each
removal carries its reason. The fixture is real: `npm view semver --json` (npm 9, this host)."""

import json
from pathlib import Path

from capsule.ground.tokens import count
from capsule.observe import pipeline
from capsule.observe.classify import classify
from capsule.observe.content import json_crusher, json_reduce, json_text
from capsule.observe.transform_types import Context

NPM_VIEW = (Path(__file__).parent / "samples" / "npm_view_semver.json").read_text()


def _body(text: str) -> str:
    return "\n".join(ln for ln in text.split("\n") if not ln.startswith("# "))


def test_npm_view_versions_and_time_map_shrink_with_anomalies_and_paths():
    doc = json.loads(NPM_VIEW)
    result = json_crusher.crush(NPM_VIEW, Context())
    assert not result.lossless
    assert count(result.text) < 0.5 * count(NPM_VIEW)
    # head, tail, the latest version and every prerelease (a rare form among x.y.z) are shown
    for v in doc["versions"][:5] + doc["versions"][-3:] + [doc["dist-tags"]["latest"]]:
        assert v in result.text
    for v in doc["versions"]:
        if "-" in v:
            assert v in result.text, v
    # every removal names the path and why; the counts add up to what went
    assert all(r.reason.startswith(("versions", "time")) and "sampled out" in r.reason
               for r in result.removals)
    shown = json_reduce.lossy(json_text.loads(NPM_VIEW), None, as_json=True)
    body = json.loads(_body(shown.text))          # the lossy JSON rendering stays valid JSON
    kept_versions = [v for v in body["versions"] if not v.startswith(json_reduce.ELIDED)]
    elided = sum(r.count for r in shown.removals if r.reason.startswith("versions"))
    assert len(kept_versions) + elided == len(doc["versions"])
    assert all(k in doc["time"] for k in body["time"] if not k.startswith(json_reduce.ELIDED))


def test_anomalies_among_scalars_and_map_values_are_kept():
    doc = json.loads(NPM_VIEW)
    doc["versions"][60] = None                                   # a null among strings
    doc["time"][doc["versions"][70]] = "ERROR: publish failed (E503)"
    doc["downloads"] = [120 + (i * 7) % 13 for i in range(200)]
    doc["downloads"][123] = 98765                                # an outlier
    text = json.dumps(doc, indent=2)
    result = json_crusher.crush(text, Context())
    assert not result.lossless
    assert "ERROR: publish failed (E503)" in result.text
    assert "98765" in result.text
    assert "null" in result.text
    reasons = " ".join(r.reason for r in result.removals)
    assert "downloads[" in reasons and "time.{" in reasons


def test_intent_keeps_the_named_item():
    doc = json.loads(NPM_VIEW)
    target = doc["versions"][40]
    result = json_crusher.crush(json.dumps(doc, indent=2), Context(intent=f"when was {target} published"))
    assert target in result.text


def test_deep_document_is_summarised_below_the_depth_but_keeps_errors():
    def deep(i, level):
        return {"name": f"node-{i}-level-{level}", "path": f"/srv/data/{i}/{level}", "size": i * level,
                "child": deep(i, level + 1) if level < 14 else {"leaf": True}}
    doc = {"tree": [deep(i, 0) for i in range(25)]}
    doc["tree"][7]["child"]["child"]["child"]["child"]["child"]["child"]["child"]["status"] = "failed: disk full"
    text = json.dumps(doc, indent=2)
    result = json_crusher.crush(text, Context())
    assert not result.lossless
    assert count(result.text) < 0.6 * count(text)
    assert "failed: disk full" in result.text
    assert any("depth" in r.reason and r.reason.startswith("tree[") for r in result.removals)


def test_small_collections_stay_lossless():
    doc = {"versions": [f"1.0.{i}" for i in range(20)], "time": {f"1.0.{i}": "2024-01-01" for i in range(20)}}
    result = json_crusher.crush(json.dumps(doc, indent=2), Context())
    assert result.lossless


def test_pipeline_emits_one_marker_and_the_footer_for_npm_view():
    raw = NPM_VIEW.encode()
    cmd = "npm view semver --json"
    em = pipeline.process(raw, Context(command=cmd), None, classify(cmd, raw[:1024]))
    out = em.data.decode()
    assert em.transform_id == "json" and em.emitted_tokens < 0.5 * em.raw_tokens
    assert out.count("more lines]") == 1 and "capsule ctx expand" in out and "<<ccr:" in out


def test_yaml_with_large_collections_is_reduced_as_valid_yaml_keeping_numbers_as_written():
    import yaml

    from capsule.observe.content import yaml_toml

    doc = json.loads(NPM_VIEW)
    text = yaml.safe_dump(doc, sort_keys=False) + "ratio: 1.10\nbig: 123456789012345678901234567890\nwhen: 2024-01-02\n"
    result = yaml_toml.yaml(text, Context())
    assert not result.lossless and count(result.text) < 0.5 * count(text)
    back = yaml.safe_load(result.text)                     # valid YAML, the summary a comment
    assert back["dist-tags"] == doc["dist-tags"]
    assert "ratio: 1.10\n" in result.text and "big: 123456789012345678901234567890\n" in result.text
    for v in doc["versions"]:
        if "-" in v:
            assert v in result.text, v
    assert all("sampled out" in r.reason for r in result.removals)


def test_a_config_file_with_many_keys_stays_whole():
    # `cat package.json` of a project with 60 dependencies: read to be edited, not sampled
    pkg = {"name": "app", "version": "1.0.0", "scripts": {"test": "jest"},
           "dependencies": {f"dep-{i}": f"^{i % 7}.{i}.0" for i in range(60)}}
    text = json.dumps(pkg, indent=2)
    result = json_crusher.crush(text, Context(command="cat package.json"))
    assert result.lossless
    for i in range(60):
        assert f"dep-{i}" in result.text


def test_a_document_over_two_megabytes_takes_a_small_sampled_form_directly():
    rows = [{"id": i, "name": f"user{i}", "score": i * 1.5, "ok": True} for i in range(30000)]
    rows[12345]["error"] = "quota exceeded for user12345"
    text = json.dumps(rows, indent=2)
    assert len(text) >= json_crusher.BIG_TEXT
    result = json_crusher.crush(text, Context())
    assert not result.lossless and "quota exceeded for user12345" in result.text
    assert count(result.text) < 0.01 * count(text)


# ---- records with long metadata (issue 10: pip inspect). Fixture: `pip inspect` (pip 23.2.1)
# of a venv holding iniconfig, pluggy and packaging, this host.
PIP_INSPECT = (Path(__file__).parent / "samples" / "pip_inspect.json").read_text()


def test_pip_inspect_keeps_every_record_identity_and_summarises_bulky_members():
    doc = json.loads(PIP_INSPECT)
    result = json_crusher.crush(PIP_INSPECT, Context())
    assert not result.lossless
    assert count(result.text) < 0.3 * count(PIP_INSPECT)
    for rec in doc["installed"]:
        md = rec["metadata"]
        # identity and every short scalar, as the `"key": value` lines a reader quotes
        for line in (f'"name": "{md["name"]}",', f'"version": "{md["version"]}",',
                     f'"metadata_location": "{rec["metadata_location"]}",', f'"requested": {json.dumps(rec["requested"])}'):
            assert line in result.text, line
    # the marker line says what was summarised, and each removal names its path
    head = result.text.split("\n", 1)[0]
    assert head.startswith("# sampled:") and "text values cut" in head and "lists cut" in head
    assert all(r.reason.startswith("installed[") for r in result.removals)
    body = json.loads(_body(result.text))           # still valid JSON
    assert [r["metadata"]["name"] for r in body["installed"]] == [r["metadata"]["name"] for r in doc["installed"]]


def test_record_members_holding_error_text_or_the_intent_are_not_cut():
    doc = json.loads(PIP_INSPECT)
    pkg = doc["installed"][1]["metadata"]
    pkg["classifier"].insert(6, "Topic :: Software Development :: Bug Tracking")
    pkg["description"] = "line one\n" * 20 + "Traceback (most recent call last):\n  boom\n"
    result = json_crusher.crush(json.dumps(doc, indent=2), Context(intent="which package has bug tracking"))
    assert "Topic :: Software Development :: Bug Tracking" in result.text
    assert json.dumps(pkg["description"]) in result.text


from hypothesis import given, settings, strategies as st  # noqa: E402

# number literals whose text a float round trip would change
_num_lit = st.one_of(st.integers(-10**40, 10**40).map(str),
                     st.sampled_from(["-0", "-0.0", "1.10", "1e999", "-1E-400", "12345678901234567890.5",
                                      "1700000000.123456789", "3.141592653589793238462643383279502884"]))


@settings(max_examples=8, deadline=None)
@given(st.lists(st.tuples(_num_lit, st.integers(7, 30), st.integers(0, 29), st.booleans()), min_size=3, max_size=8))
def test_record_rule_keeps_numbers_as_written_errors_and_every_record(recs):
    """Generated record arrays in a large document: the lossy view keeps every record, every
    number literal as written, every error item of a cut list; the body stays valid JSON."""
    blocks = []
    for i, (num, n_tags, bad, has_bad) in enumerate(recs):
        tags = [f'"tag {j} of record {i}"' for j in range(n_tags)]
        if has_bad:
            tags[bad % n_tags] = f'"error: build of record {i} failed"'
        text = json.dumps("A description of the record.\n" * 250)
        items = ",\n".join(tags)
        blocks.append(f'{{\n"name": "pkg-{i}",\n"size": {num},\n"tags": [\n{items}\n],\n"description": {text}\n}}')
    doc = '{\n"installed": [\n' + ",\n".join(blocks) + "\n]\n}"          # one value per line, as pip prints
    result = json_crusher.crush(doc, Context())
    assert not result.lossless and result.text.startswith("# sampled:")
    for i, (num, n_tags, bad, has_bad) in enumerate(recs):
        assert f'"name": "pkg-{i}"' in result.text and f'"size": {num}' in result.text
        if has_bad:
            assert f"error: build of record {i} failed" in result.text
    body = json_text.loads(_body(result.text))
    assert len(body["installed"]) == len(recs)
