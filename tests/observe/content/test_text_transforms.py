"""Keep-guarantees of the line transforms: search, logs, tabular, yaml/toml, binary, gates."""

import os

from hypothesis import given, settings, strategies as st

from capsule.observe.content import binary, gate, log_lines, search, tabular, yaml_toml
from capsule.observe.transform_types import Context


# ---- search


def test_search_never_drops_a_matching_line_and_dedups():
    hits = [f"src/app/mod{i}.py:{i + 3}:    total = compute_total(items)" for i in range(8)]
    out = "\n".join(hits + [hits[2], "src/a.py-4-import os", "src/a.py-5-total_x = 1", "--",
                            "src/a.py:6:compute_total()"]) + "\n"
    result = search.shape(out, Context(command="grep -rn -C1 compute_total src"))
    for h in hits + ["src/a.py:6:compute_total()", "src/a.py-5-total_x = 1"]:
        assert h in result.text
    assert result.text.count(hits[2]) == 1
    assert "import os" not in result.text
    reasons = {r.reason for r in result.removals}
    assert {"duplicate hit", "context noise (blank or import line)", "context separator"} <= reasons


def test_search_query_from_command_and_long_lines_windowed():
    q = search.query_of("rg -n -i --glob '*.js' 'apiBase'")
    assert q.search("APIBASE") and not q.search("other")
    assert search.query_of("grep -rn -e 'a|b' .").pattern == "a|b"
    long = "x" * 5000 + " apiBase = 1 " + "y" * 5000
    result = search.shape(f"dist/app.js:1:{long}\n", Context(command="grep -n apiBase dist/app.js"))
    assert "apiBase = 1" in result.text and len(result.text) < 600


def test_find_listing_grouped_by_folder():
    paths = [f"./src/pkg/mod{i}.py" for i in range(10)] + ["./README.md"]
    result = search.shape("\n".join(paths) + "\n", Context(command="find . -name '*.py'"))
    assert "./src/pkg/ (10): mod0.py" in result.text and "./README.md" in result.text


# ---- logs


def test_logs_keep_first_last_and_every_error():
    lines = [f"2026-01-01 10:00:{i:02d} INFO fetched page {i} in {i * 3}ms" for i in range(40)]
    lines[20] = "2026-01-01 10:00:20 ERROR fetch page 20 failed: connection refused"
    text = "\n".join(lines) + "\n"
    result = log_lines.cluster(text, Context())
    assert lines[0] in result.text and lines[-1] in result.text and lines[20] in result.text
    assert "[×39 like this" in result.text
    assert result.removed_lines == 37
    assert all(r.start and r.end and r.preview for r in result.removals)


def test_log_template_masks_variables():
    a = log_lines.template("2026-01-01T10:00:00Z req 7f3a9c21 took 12ms from 10.0.0.1")
    b = log_lines.template("2026-01-02T11:30:59Z req 0bd1e4aa took 7ms from 10.0.0.2")
    assert a == b


def test_access_log_request_lines_share_a_template_per_method_and_status():
    # python -m http.server / Common Log Format: the request target is the variable part
    a = log_lines.template('127.0.0.1 - - [01/Dec/2026 04:47:02] "GET /README.md HTTP/1.1" 200 -')
    b = log_lines.template('127.0.0.1 - - [01/Dec/2026 04:47:03] "GET /docs/_static/x.svg?v=2 HTTP/1.1" 200 -')
    c = log_lines.template('10.1.2.3 - bob [10/Oct/2000:13:55:36 -0700] "GET /a.gif HTTP/1.0" 200 2326')
    assert a == b
    assert log_lines.template('127.0.0.1 - - [01/Dec/2026 04:47:02] "GET /README.md HTTP/1.1" 404 -') != a
    assert c != a and '"GET <target> HTTP/1.0" 200' in c


def test_access_log_keeps_every_distinct_failing_request():
    # 4xx/5xx are the errors of an access log: each distinct failing request stays exact even
    # when failures are common enough to form a template; identical repeats fold into the count
    lines = []
    for i in range(600):
        status = 404 if i % 10 == 3 else 500 if i == 250 else 200
        lines.append(f'127.0.0.1 - - [01/Dec/2026 04:47:{i % 60:02d}] "GET /p{i % 7}/f{i}.md HTTP/1.1" {status} -')
    lines += ['127.0.0.1 - - [01/Dec/2026 04:48:00] "GET /favicon.ico HTTP/1.1" 404 -'] * 5
    result = log_lines.cluster("\n".join(lines) + "\n", Context())
    out = result.text.split("\n")
    failing = [ln for ln in lines if '" 404 -' in ln or '" 500 -' in ln]
    assert all(any(o.startswith(ln) for o in out) for ln in failing)
    assert sum(1 for o in out if "/favicon.ico" in o) == 2          # first and last of the repeat
    assert sum(1 for o in out if '" 200 -' in o) == 2
    assert result.removed_lines == (539 - 2) + 3                    # 200s but first/last; 3 repeats


def test_log_lines_the_intent_names_survive_the_fold():
    # issue 10 item 3: when a template folds, the intent decides which of its lines stay
    lines = [f"2026-01-01 10:{i // 60:02d}:{i % 60:02d} INFO job {i} for user u{1000 + i} done" for i in range(400)]
    text = "\n".join(lines) + "\n"
    assert lines[234] not in log_lines.cluster(text, Context()).text
    result = log_lines.cluster(text, Context(intent="what happened to the job of user u1234"))
    assert lines[234] in result.text.split("\n")
    assert result.removed_lines == 400 - 3
    # a term on most lines picks nothing out; the fold stays as tight as without intent
    assert log_lines.cluster(text, Context(intent="which job is done")).removed_lines == 398


def test_sniff_names_an_access_log_a_log():
    from capsule.observe.content.sniff import sniff
    head = "".join(f'127.0.0.1 - - [01/Dec/2026 04:47:0{i}] "GET /f{i}.md HTTP/1.1" 200 -\n' for i in range(6))
    assert sniff(head.encode())[:2] == ("logs", "logs")


# ---- tabular


def test_csv_sampling_keeps_header_anomalies_and_counts():
    rows = ["id,name,amount,status"] + [f"{i},cust{i},{100 + i % 5}.00,paid" for i in range(200)]
    rows[1 + 120] = "120,cust120,99999.00,paid"
    rows[1 + 150] = "150,cust150,,paid"
    text = "\n".join(rows) + "\n"
    result = tabular.sample(text, Context())
    assert rows[0] in result.text and rows[121] in result.text and rows[151] in result.text
    assert result.text.startswith("# 200 rows,")
    kept = [ln for ln in result.text.split("\n")[1:] if ln]
    assert kept[0] == rows[0] and all(ln in rows for ln in kept)
    assert result.removed_lines + len(kept) - 1 == 200


# ---- yaml / toml


def test_yaml_minify_is_data_equal_and_respects_block_scalars():
    text = "# top\nname: web   \n\nscript: |\n  # kept: inside a block scalar\n  run\nport: 80\n"
    result = yaml_toml.yaml(text, Context())
    assert "# kept: inside a block scalar" in result.text and "# top" not in result.text
    import yaml

    assert yaml.safe_load(result.text) == yaml.safe_load(text)


def test_toml_minify_refuses_to_change_data():
    text = '# c\n[tool]\nname = "x"\n\nmsg = """\n# not a comment\n"""\n'
    result = yaml_toml.toml(text, Context())
    import tomllib

    assert tomllib.loads(result.text) == tomllib.loads(text)
    assert "# not a comment" in result.text and "# c" not in result.text


# ---- binary


def test_binary_becomes_one_description_line():
    data = b"\x7fELF\x02\x01\x01" + os.urandom(3000)
    result = binary.describe(data.decode("utf-8", "surrogateescape"), Context())
    assert result.text.startswith("[ELF executable") and result.text.count("\n") == 1
    latin1 = ("Fehler beim Export f\xfcr Kunde M\xfcller\n" * 5).encode("latin-1")
    text_like = binary.describe(latin1.decode("utf-8", "surrogateescape"), Context())
    assert "not binary" in text_like.notes[0]


# ---- gates


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "a", "b", "", "  x  ", "\x1b[31mred\x1b[0m", "c  [×2]"]),
                max_size=30))
def test_lossless_steps_invert_exactly(lines):
    text = "\n".join(lines)
    for name, step, inverse in gate.STEPS:
        out, record = step(text)
        assert inverse(out, record) == text or gate.checked(step, inverse, text) is None


def test_lossless_transform_and_probe():
    text = "\x1b[1mbuild\x1b[0m   \n" + "waiting\n" * 10 + "done\n"
    result = gate.lossless(text, Context())
    assert "waiting  [×10]" in result.text and "\x1b" not in result.text and result.lossless
    assert gate.compressibility("abc " * 500) < 0.2
    assert not gate.worth_aggressive(os.urandom(20000).decode("latin-1"))


LOG_PIECES = st.one_of(st.sampled_from([
    "2026-01-01T10:00:00Z", "2026-01-01 10:00:00,123", "12/31/2026", "1.2.2026", "10:00", "10:00:59.5", "INFO",
    "req", "7f3a9c21", "0xdeadBEEF", "deadbeef12", "took 12ms", "from 10.0.0.1:8080", "user-42", "id_7x", "v1.2.3",
    "/usr/lib/x.so", "./a/b", "../c/d/", "http://h:80/p?q=1", "https://x.io", "550e8400-e29b-41d4-a716-446655440000",
    '"GET /a.gif HTTP/1.0" 200', '"POST /api HTTP/1.1" 503', "HTTP/2", "١٢٣", "٣.٤", "-", ":", ".", "/", " ", "\t",
    "é", "\u2028", "x9", "9x", "_", "0", "99999999"]), st.text(max_size=6))


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(lines=st.lists(st.lists(LOG_PIECES, max_size=8).map(" ".join), max_size=40))
def test_log_templates_in_bulk_are_the_per_line_templates(lines):
    lines = [ln.replace("\n", " ") for ln in lines]     # the lines of a split text
    assert log_lines.templates(lines) == [log_lines.template(ln) for ln in lines]
