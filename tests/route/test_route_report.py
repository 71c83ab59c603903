"""`ctx report` route section on recorded rows: decision log, INV-9 audit, utilization chart (real Chromium)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_quota import _samples  # noqa: E402

from capsule.route import quota  # noqa: E402
from capsule.store.route_rows import RouteLog  # noqa: E402
from capsule.measure.usage import record_usage, UsageStore  # noqa: E402


@pytest.fixture
def state(tmp_path):
    st = tmp_path / "state"
    st.mkdir()
    store = quota.QuotaStore(st / quota.QUOTA_DB)
    store.add(_samples("anthropic_subscription"))
    store.close()
    log = RouteLog(st / "ledger.db")
    t = 1764590400
    log.record("boundary", session="s-main", conversation="s-main/a", task_class="main", source="proxy",
               reason="conversation start", detail={}, ts=t)
    log.record("decision", session="s-main", conversation="s-main/a", task_class="main", source="proxy",
               reason="10% < degrade_at 80%: role lane", detail={"degraded": False, "utilization": 0.1,
                                                                  "sent": {"model": "claude-sonnet-4-5"}}, ts=t + 1)
    log.record("boundary", session="s-sub", conversation="s-sub/b", task_class="subagent", source="proxy",
               reason="conversation start", detail={}, ts=t + 5400)
    log.record("decision", session="s-sub", conversation="s-sub/b", task_class="subagent", source="proxy",
               reason="5h at 70% >= degrade_at 60%: subagent lane degraded to claude-haiku-4-5/low",
               detail={"degraded": True, "utilization": 0.7, "sent": {"model": "claude-haiku-4-5"}}, ts=t + 5401)
    log.record("change", session="s-main", conversation="s-main/a", task_class="main", source="user",
               reason="model/effort changed by the client inside its conversation",
               detail={"request": 3, "from": {"model": "claude-sonnet-4-5"}, "to": {"model": "claude-opus-4-8"}}, ts=t + 60)
    log.close()
    us = UsageStore(st / "usage.db")
    for i, model in enumerate(["claude-sonnet-4-5", "claude-sonnet-4-5", "claude-opus-4-8"]):
        record_usage("s-main", "claude", model, f"msg_{i}", input_tokens=10, cache_read_input_tokens=0 if i == 2 else 5000,
                     cache_creation_5m=20_000 if i == 2 else 100, output_tokens=50, ts=t + 30 * i, store=us)
    us.close()
    return st


def run(state, *args):
    home = state.parent / "home"      # no transcripts: the proxy rows alone
    home.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "capsule", "ctx", "report", *args], capture_output=True, text=True,
                          env={"JACKIN_CTX_STATE_DIR": str(state), "PATH": "/usr/bin:/bin", "HOME": str(home)})


def test_json_has_the_decision_log_and_the_audit(state):
    proc = run(state, "--json")
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)["route"]
    assert [(d["task_class"], d["degraded"]) for d in r["decisions"]] == [("main", False), ("subagent", True)]
    assert r["boundaries"] == {"conversation start": 2}
    a = r["audit"]
    assert a["capsule_changes"] == 0 and a["user_changes"] == 1
    [c] = a["in_conversation"]
    assert (c["from"], c["to"], c["cache_write_tokens"], c["by"]) == ("claude-sonnet-4-5", "claude-opus-4-8", 20_000, "user")
    assert c["cache_write_usd"] == pytest.approx(20_000 * 6.25 / 1e6)
    assert [u for _, u in r["utilization"]["anthropic:acct/5h"]] == [0.1, 0.3, 0.6, 0.7]
    text = run(state)
    assert "model/effort changes inside a conversation (each rewrites the prompt cache): 0 by capsule; 1 by the client" in text.stdout
    assert "DEGRADED" in text.stdout and "claude-sonnet-4-5 -> claude-opus-4-8" in text.stdout


def test_html_chart_draws_utilization_with_decisions_marked(state, tmp_path):
    page = tmp_path / "r.html"
    assert run(state, "--html", str(page)).returncode == 0
    chromium = shutil.which("chromium")
    assert chromium, "chromium is not installed; scripts/test-all installs it"
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          f"--user-data-dir={tmp_path / 'p'}", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    assert 'data-ready="1"' in dom and not re.search(r"<body[^>]*data-errors=", dom)
    chart = dom[dom.index('id="chart-quota"'):]
    chart = chart[:chart.index("</svg>")]
    assert len(re.findall(r'data-series="anthropic:acct/(5h|7d)"', chart)) == 2
    assert re.findall(r'data-decision="(\w+)"', chart) == ["main", "subagent"]
    assert "0 model/effort changes inside a conversation by capsule" in dom
