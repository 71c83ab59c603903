"""The caps in capsule/agents/data/client_limits.toml, checked against the real clients.

Each client runs one scripted session whose shell calls print just under and just over its cap;
the fake model API records what the model would see.
"""

from __future__ import annotations

from tests.e2e import harness

from capsule.agents import limits


def _printing(*sizes: int) -> tuple[harness.Call, ...]:
    # 99 characters and a newline per line, so characters == bytes; the last line is cut to size.
    return tuple(harness.Call(f"{n}", f"python -c \"import sys; sys.stdout.write(('{'x' * 99}\\n' * {n // 100 + 1})[:{n}])\"",
                              f"print {n} characters", ()) for n in sizes)


def test_claude_code_persists_output_over_its_cap(tmp_path):
    cap = limits.data()["claude"]["cap"]
    calls = _printing(cap - 10, cap + 10)
    ws = tmp_path / "ws"
    ws.mkdir()
    s = harness.run_claude(ws, tmp_path / "home", "plain", "", calls)
    under, over = s.results
    assert len(under) == cap - 10 and "<persisted-output>" not in under
    assert "<persisted-output>" in over and len(over) < 4000


def _codex_cut(tmp_path, model: str, cap: int):
    calls = _printing(cap - 200, cap + 200)
    ws = tmp_path / model
    ws.mkdir()
    s = harness.run_codex(ws, tmp_path / f"home-{model}", "plain", "", calls, model=model)
    under, over = s.results
    assert "truncated" not in under and under.count("x" * 99) == (cap - 200) // 100, under[:400]
    assert "truncated" in over and over.count("x" * 99) < (cap + 200) // 100, over[:400]


def test_codex_cuts_catalog_models_at_ten_thousand_tokens(tmp_path):
    spec = limits.data()["codex"]
    assert harness.CODEX_MODEL in spec["catalog"]
    _codex_cut(tmp_path, harness.CODEX_MODEL, spec["cap"])


def test_codex_cuts_unknown_models_at_ten_kilobytes(tmp_path):
    spec = limits.data()["codex"]
    assert "gpt-5-codex" not in spec["catalog"]
    _codex_cut(tmp_path, "gpt-5-codex", spec["unknown_model_cap"])


# 3,000 log lines (~150 KB) with one failure in the middle: over every cap above.
LOG_CMD = ("python -c \"import sys; sys.stdout.write(''.join("
           "'12:00:%02d worker-%d handled request %d in %d ms\\n' % (i % 60, i % 7, i, i % 13) if i != 1700 else "
           "'12:28:20 worker-3 request 1700 FAILED: upstream reset by peer (code=ECONNRESET)\\n' for i in range(3000)))\"")
FAILURE = "request 1700 FAILED: upstream reset by peer (code=ECONNRESET)"


def _shaped(result: str, cap: int) -> None:
    assert FAILURE in result, result[:2000]
    assert "<persisted-output>" not in result and "tokens truncated" not in result, result[:2000]
    assert "[full output: capsule ctx expand" in result and len(result) < cap


def test_capsule_fits_an_over_cap_output_under_each_clients_cap(tmp_path):
    """A transform that fails passes raw output; capsule still shapes it under the client's cap
    (errors first), so neither client previews or truncates it."""
    calls = (harness.Call("log", LOG_CMD, "Run the worker log replay", ()),)
    raw = {"JACKIN_CTX_FAULT_INJECT": "*"}
    for client, kw, cap in (("claude", {}, limits.data()["claude"]["cap"]),
                            ("codex", {"model": "gpt-5-codex"}, limits.data()["codex"]["unknown_model_cap"])):
        ws = tmp_path / client
        ws.mkdir()
        plain = harness.RUNNERS[client](ws, tmp_path / f"home-{client}-plain", "plain", "", calls, **kw)
        assert FAILURE not in plain.results[0]                      # the client's own preview / cut lost it
        s = harness.RUNNERS[client](ws, tmp_path / f"home-{client}", "capsule", "", calls, extra_env=raw, **kw)
        _shaped(s.results[0], cap)
