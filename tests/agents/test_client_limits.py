"""Client caps: which client an observation came from, and an emission shaped to fit under its cap."""

from __future__ import annotations

from capsule.agents import codex, limits
from capsule.engine import Engine
from capsule.observe import fit, guard, markers
from capsule.shims import door

CLAUDE = {"CLAUDECODE": "1"}
LOG = [f"12:00:{i % 60:02d} worker-{i % 7} handled request {i} in {i % 13} ms" for i in range(4000)]
LOG[2500] = "12:41:40 worker-3 request 2500 FAILED: upstream reset by peer (code=ECONNRESET)"
RAW = ("\n".join(LOG) + "\n").encode()


def test_detect_reads_the_markers_and_the_model():
    assert limits.detect({}) is None and limits.detect(None) is None
    claude = limits.detect(CLAUDE)
    assert (claude.client, claude.unit, claude.cap) == ("claude", "chars", 30000)
    assert limits.detect({**CLAUDE, "BASH_MAX_OUTPUT_LENGTH": "5000"}).cap == 5000
    known = limits.detect({"CODEX_THREAD_ID": "t", "JACKIN_CTX_AGENT_MODEL": "gpt-5.5"})
    assert (known.client, known.unit, known.cap) == ("codex", "bytes", 40000)
    unknown = limits.detect({"CODEX_THREAD_ID": "t", "JACKIN_CTX_AGENT_MODEL": "gpt-5-codex"})
    assert unknown.cap == 10000
    assert limits.parse_meta(b"CLAUDECODE=1\nHOME=/root\nbroken\n") == {"CLAUDECODE": "1"}


def test_codex_model_from_argv_then_config(tmp_path):
    env = {"CODEX_HOME": str(tmp_path)}
    assert codex.model_of(["codex", "exec", "-m", "gpt-5.5", "hi"], env) == "gpt-5.5"
    assert codex.model_of(["codex", "--model=o9", "hi"], env) == "o9"
    assert codex.model_of(["codex", "-c", 'model="gpt-x"'], env) == "gpt-x"
    assert codex.model_of(["codex", "exec"], env) is None
    (tmp_path / "config.toml").write_text('model = "gpt-5.5"\n')
    assert codex.model_of(["codex", "exec"], env) == "gpt-5.5"


def test_fit_keeps_errors_first_then_edges_and_counts_every_removed_line():
    text = RAW.decode()
    out = fit.fit(text, 3000, len, "0" * 24, context=2, head=5, tail=5)
    assert len(out) <= 3000
    lines = out.splitlines()
    assert LOG[2500] in lines and LOG[2499] in lines and LOG[2501] in lines      # the error and its context
    assert lines[0] == LOG[0] and LOG[-1] in lines
    assert markers.check(len(LOG), lines[:-1]) is None                           # one marker per omitted run, adding up
    assert lines[-1] == guard.footer("0" * 24) and "[2493 more lines L6-2498]" in lines
    assert fit.fit("short\n", 3000, len, "0" * 24) == "short\n"


def test_fit_under_a_tiny_budget_still_keeps_the_error_first():
    out = fit.fit(RAW.decode(), 300, len, "0" * 24)
    assert len(out) <= 300 and LOG[2500] in out


def test_engine_shapes_an_over_cap_emission_for_the_client_only(state_dir, monkeypatch):
    # A transform that fails passes the raw output: 240 KB, far over both clients' caps.
    monkeypatch.setenv("JACKIN_CTX_FAULT_INJECT", "*")
    engine = Engine(state_dir, mode="standard")
    plain, _ = door.observe_command(engine, "./serve.sh", RAW, b"", 0, 1.0, "s")
    assert plain == RAW                                                          # no client: raw, as before
    out, _ = door.observe_command(engine, "./serve.sh", RAW, b"", 0, 1.0, "s", meta=CLAUDE)
    text = out.decode()
    assert len(text) <= 30000 * 0.9 and LOG[2500] in text
    handle = guard.FOOTER_RE.search(text).group(1)
    assert engine.archive.get(handle) == RAW                                     # the original is one expand away
    out, _ = door.observe_command(engine, "./serve.sh", RAW, b"", 0, 1.0, "s",
                                    meta={"CODEX_THREAD_ID": "t", "JACKIN_CTX_AGENT_MODEL": "gpt-5-codex"})
    assert len(out) <= 10000 * 0.9 and LOG[2500].encode() in out


def test_both_streams_share_the_cap(state_dir, monkeypatch):
    monkeypatch.setenv("JACKIN_CTX_FAULT_INJECT", "*")
    engine = Engine(state_dir, mode="standard")
    out, err = door.observe_command(engine, "./serve.sh", RAW, RAW, 1, 1.0, "s", meta={**CLAUDE, "BASH_MAX_OUTPUT_LENGTH": "8000"})
    assert len(out) + len(err) <= 8000 and LOG[2500].encode() in out and LOG[2500].encode() in err
