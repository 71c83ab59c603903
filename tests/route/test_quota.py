"""The quota model on recorded rate-limit headers: windows, burn rate, projection, shares; `ctx quota --json`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from capsule.measure.transcripts import codex_transcript
from capsule.route import quota

DATA = json.loads((Path(__file__).with_name("data") / "recorded_headers.json").read_text())


def _samples(name, account="anthropic:acct", regime="subscription"):
    out = []
    for r in DATA[name]:
        out += quota.from_headers("openai" if name == "openai" else "anthropic", r["headers"], account, regime,
                                  r["session"], now=r["ts"])
    return out


def test_unified_windows_burn_projection_and_shares():
    q = quota.model(_samples("anthropic_subscription"))
    assert q["regime"] == "subscription"
    w = {x["name"]: x for x in q["windows"]}
    assert set(w) == {"5h", "7d"}
    five = w["5h"]
    assert five["utilization"] == 0.70 and five["resets_at"] == 1764604800 and five["status"] == "allowed_warning"
    # 0.10 -> 0.70 over 5400 s: 40%/h; 0.30 left -> 0.75 h after the last sample, before the reset
    assert five["burn_per_hour"] == pytest.approx(0.4)
    assert five["projected_exhausted_at"] == pytest.approx(1764595800 + 2700)
    # 7d: 0.31 -> 0.37 over 1.5 h: 4%/h; 0.63 left -> 15.75 h, still before its reset
    assert w["7d"]["projected_exhausted_at"] == pytest.approx(1764595800 + 0.63 / 0.04 * 3600)
    shares = {s["session"]: s["by_window"] for s in q["sessions"]}
    # 5h rises: main +0.20 (0.10->0.30) +0.10 (0.60->0.70), sub +0.30
    assert shares["s-main"]["anthropic:acct/5h"] == pytest.approx(0.5)
    assert shares["s-sub"]["anthropic:acct/5h"] == pytest.approx(0.5)
    assert quota.peak(q)[0] == 0.70


def test_api_key_classic_headers_and_openai_durations():
    s = _samples("anthropic_api_key", regime="api_key")
    w = {x.window: x for x in s}
    assert w["input-tokens"].utilization == 0.75 and w["requests"].utilization == 0.25
    from datetime import datetime, timezone

    assert w["input-tokens"].resets_at == datetime(2025, 12, 1, 12, 0, 30, tzinfo=timezone.utc).timestamp()
    assert w["output-tokens"].utilization == pytest.approx(0.0025) and w["output-tokens"].status == "allowed"
    assert all(x.regime == "api_key" for x in s)
    o = {x.window: x for x in _samples("openai", account="openai:k", regime="api_key")}
    assert o["requests"].utilization == pytest.approx(0.001) and o["requests"].resets_at == 1764590400 + 360
    assert o["tokens"].utilization == pytest.approx(0.1) and o["tokens"].resets_at == pytest.approx(1764590401.5)


def test_codex_rollout_rate_limits():
    ev = DATA["codex_rollout_event"]
    s = codex_transcript.from_codex_event(ev["payload"], "openai:chatgpt", "thread-1", 1764590400.0)
    assert [(x.window, x.utilization, x.resets_at) for x in s] == [("5h", 0.42, 1764594000.0), ("7d", 0.125, 1765065600)]


def test_account_is_a_hash_and_the_regime_is_detected():
    acct, regime = quota.account_of("anthropic", {"x-api-key": "sk-ant-api03-SECRET"})
    assert regime == "api_key" and "SECRET" not in acct and acct.startswith("anthropic:")
    acct2, regime2 = quota.account_of("anthropic", {"authorization": "Bearer sk-ant-oat01-SECRET"})
    assert regime2 == "subscription" and acct2 != acct


def test_ctx_quota_json_on_recorded_samples(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    store = quota.QuotaStore(state / quota.QUOTA_DB)
    store.add(_samples("anthropic_subscription"))
    store.close()
    proc = subprocess.run([sys.executable, "-m", "capsule", "ctx", "quota", "--json"], capture_output=True, text=True,
                          env={"JACKIN_CTX_STATE_DIR": str(state), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    q = json.loads(proc.stdout)
    assert q["regime"] == "subscription"
    five = next(w for w in q["windows"] if w["name"] == "5h")
    assert {"name", "utilization", "resets_at", "projected_exhausted_at"} <= set(five)
    assert five["utilization"] == 0.7
    assert {s["session"] for s in q["sessions"]} == {"s-main", "s-sub"} and all("share" in s for s in q["sessions"])
    text = subprocess.run([sys.executable, "-m", "capsule", "ctx", "quota"], capture_output=True, text=True,
                          env={"JACKIN_CTX_STATE_DIR": str(state), "PATH": "/usr/bin:/bin"}).stdout
    assert "billing regime: subscription" in text and " 70.0%" in text
