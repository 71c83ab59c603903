"""The cost engine: prices from the data file, upstream cost wins, unknown models are unpriced."""

from __future__ import annotations

import json
import re

import pytest

from capsule.measure import cost

CALL = {"model": "claude-sonnet-4-5-20250929", "input_tokens": 1_000_000, "cache_read_input_tokens": 2_000_000,
        "cache_creation_5m": 1_000_000, "cache_creation_1h": 1_000_000, "output_tokens": 1_000_000}


def test_every_price_row_is_complete_and_the_buckets_are_priced_separately():
    table = cost.prices()
    assert table and all(set(cost.FIELDS) <= set(row) for row in table.values())
    p = table["claude-sonnet-4-5"]
    want = p["input"] + 2 * p["cache_read"] + p["cache_write_5m"] + p["cache_write_1h"] + p["output"]
    got = cost.call_cost(CALL)
    assert got.basis == "priced" and got.usd == pytest.approx(want)


def test_current_lineups_are_priced_with_source_and_date():
    table = cost.prices()
    for model in ("gpt-5.5", "gpt-5.3-codex", "claude-opus-4-8", "claude-sonnet-5-5", "claude-fable-5-1"):
        assert cost.price_for(model) is not None, model
    assert cost.price_for("gpt-5.3-codex")["output"] == 14.0 and cost.price_for("gpt-5.5")["cache_read"] == 0.5
    for model, row in table.items():
        assert row.get("source") and re.fullmatch(r"\d{4}-\d{2}-\d{2}", row.get("checked", "")), model


def test_upstream_cost_wins_and_unknown_models_are_never_guessed():
    assert cost.call_cost({**CALL, "cost_usd": 0.5}) == cost.Cost(0.5, "upstream")
    # A look-alike of a priced model is still unknown (gpt-5.5 is priced since issue 18: its look-alike here).
    for model in ("claude-sonnet-4-5-turbo", "gpt-5.5-turbo", "claude-opus-5-5", "", None):
        assert cost.call_cost({**CALL, "model": model}) == cost.Cost(None, "unpriced")
    t = cost.total_cost([CALL, {**CALL, "model": "mystery-1"}])
    assert t["unpriced_calls"] == 1 and t["unpriced_models"] == ["mystery-1"] and t["cost_usd"] > 0
    assert cost.total_cost([{**CALL, "model": "mystery-1"}])["cost_usd"] is None


def test_claude_code_own_cost_figure_matches(claude_run, capsule, tmp_path):
    """Claude Code prices its calls itself (`total_cost_usd`); ours, from the same buckets, agrees."""
    import shutil

    cfg = tmp_path / "cc"
    shutil.copytree(claude_run["cfg"], cfg)
    path = next((cfg / "projects").glob(f"*/{claude_run['sid']}.jsonl"))
    path.write_bytes(claude_run["first_transcript"])
    for other in (cfg / "projects").glob("*/*.jsonl"):
        if other != path:
            other.unlink()
    got = json.loads(capsule("ctx", "usage", "--json", "--claude-dir", str(cfg)).stdout)
    assert got["totals"]["unpriced_calls"] == 0
    assert got["totals"]["cost_usd"] == pytest.approx(claude_run["first_result"]["total_cost_usd"], abs=1e-6)


def test_claude_code_default_model_is_reported_unpriced_never_guessed(tmp_path, capsule):
    """Claude Code 2.1.332's default model (claude-opus-5-5) has no price row: a real session on it is
    reported unpriced, with no cost figure, though the client itself prices it (its own guess)."""
    from tests.fakes.usage import DistinctMessages
    from tests.measure import clients

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f.txt").write_text("hello\n")
    fake = DistinctMessages(clients.claude_script(str(ws / "f.txt")))
    try:
        clients.run_claude(fake, ws, tmp_path / "cc", "go", model=clients.UNPRICED_DEFAULT)
    finally:
        fake.close()
    assert cost.price_for(clients.UNPRICED_DEFAULT) is None
    seen = {e["model"] for e in fake.log}
    assert clients.UNPRICED_DEFAULT in seen, seen
    data = json.loads(capsule("ctx", "usage", "--json", "--claude-dir", str(tmp_path / "cc")).stdout)
    got = data["totals"]
    unpriced = sum(1 for e in fake.log if cost.price_for(e["model"]) is None)
    assert got["unpriced_calls"] == unpriced == len(fake.log) and got["cost_usd"] is None, got
    assert {m for s in data["sessions"] for m in s["unpriced_models"]} == {clients.UNPRICED_DEFAULT}, data["sessions"]
    text = capsule("ctx", "usage", "--claude-dir", str(tmp_path / "cc")).stdout.decode()
    assert f"unpriced (no row in capsule/measure/data/prices.toml): {clients.UNPRICED_DEFAULT}" in text, text
