"""One definition of each figure (issue 33): `ctx gain`, `ctx report` (text, JSON, HTML) and `fleet report`
(text, JSON, HTML) show the same names and numbers for the same ledger rows; a figure that needs the
agents' transcripts says so instead of reading 0; one HTML renderer, checked in headless Chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "capsule"]
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("figures")
    ws, state = root / "ws", root / "state"
    git = ["git", "-c", "user.email=a@b", "-c", "user.name=a", "-C", str(ws)]
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    for i in range(40):
        (ws / f"f{i}").write_text(f"{i}\n")
        subprocess.run([*git, "add", f"f{i}"], check=True)
        subprocess.run([*git, "commit", "-qm", f"change number {i} of the history"], check=True)
    env = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state)}
    subprocess.run([*CLI, "ctx", "run", "--", "git", "log"], cwd=ws, env=env, check=True, capture_output=True)
    (root / "claude").mkdir()
    (root / "codex").mkdir()

    def capsule(*args):
        proc = subprocess.run([*CLI, *args], cwd=root, env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    capsule("fleet", "sync", "--dsn", f"sqlite:///{root / 'fleet.db'}", "--state", str(state), "--role", "dev")
    return {"root": root, "capsule": capsule,
            "none": ("--claude-dir", str(root / "claude"), "--codex-dir", str(root / "codex"))}


def test_every_report_gives_the_same_gross_and_says_why_net_is_missing(world):
    c, none, root = world["capsule"], world["none"], world["root"]
    gain = json.loads(c("ctx", "gain", "--json"))["total"]
    assert gain["saved_tokens"] > 100
    local = json.loads(c("ctx", "report", "--json", *none))["figures"]
    fleet = json.loads(c("fleet", "report", "--dsn", f"sqlite:///{root / 'fleet.db'}", "--json"))["fleet"]["figures"]
    for f in (local, fleet):
        assert f["gross_saved_tokens"] == gain["saved_tokens"] and f["emissions"] == gain["emissions"]
        assert f["net_saved_tokens"] is None and f["session_cost_usd"] is None and "transcripts" in f["note"]
    text = c("ctx", "report", *none)
    assert f"gross saved {gain['saved_tokens']:,} tokens" in text and "net saved n/a" in text
    assert "NET 0" not in text and "transcripts" in text
    ftext = c("fleet", "report", "--dsn", f"sqlite:///{root / 'fleet.db'}")
    assert "gross saved" in ftext and "net saved" in ftext and f"{gain['saved_tokens']:,}" in ftext
    assert "net tok" not in ftext


def _chromium(page: Path, tmp: Path, shot: Path) -> str:
    chromium = shutil.which("chromium")
    assert chromium, "chromium is not installed; scripts/test-all installs it (apt-get install chromium)"
    prof = f"--user-data-dir={tmp / 'profile'}"
    got = subprocess.run([chromium, *CHROMIUM_FLAGS, prof, "--window-size=1100,1400", f"--screenshot={shot}",
                          page.as_uri()], capture_output=True, text=True, timeout=120)
    assert got.returncode == 0 and shot.stat().st_size > 10_000, got.stderr[-1000:]
    dom = subprocess.run([chromium, *CHROMIUM_FLAGS, prof, "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-1000:]
    assert 'data-ready="1"' in dom.stdout and not re.search(r"<body[^>]*data-errors=", dom.stdout)
    return dom.stdout


@pytest.mark.parametrize("which", ["ctx", "fleet"])
def test_one_html_renderer_with_figures_window_round_ticks_values_and_empty_states(world, which, tmp_path):
    c, root = world["capsule"], world["root"]
    page = tmp_path / f"{which}.html"
    if which == "ctx":
        c("ctx", "report", "--html", str(page), "--since", "1d", *world["none"])
    else:
        c("fleet", "report", "--dsn", f"sqlite:///{root / 'fleet.db'}", "--html", str(page))
    gross = json.loads(c("ctx", "gain", "--json"))["total"]["saved_tokens"]
    dom = _chromium(page, tmp_path, tmp_path / f"{which}.png")
    kpi = re.search(r'data-kpi="gross"><span>gross saved</span><b>([^<]*)</b>', dom)
    assert kpi and kpi.group(1) == f"{gross:,} tok"
    assert re.search(r'data-kpi="net"><span>net saved</span><b>n/a</b>', dom)
    assert "Generated 20" in dom and "window: " in dom and (which == "fleet" or "window: since " in dom)
    assert "transcripts" in dom                           # the one-line reason net saved is n/a
    ticks = [int(t.replace(",", "")) for t in re.findall(r'class="tick"[^>]*>([\d,]+)<', dom)]
    assert ticks and ticks[0] == 0
    ticks = ticks[:ticks.index(0, 1)] if 0 in ticks[1:] else ticks     # the first chart's (savings by family)
    assert ticks[-1] >= gross
    step = ticks[1] - ticks[0]                            # round steps (1, 2 or 5 x 10^k), never 68,652
    assert str(step).rstrip("0") in ("1", "2", "5") and ticks == [i * step for i in range(len(ticks))], ticks
    assert re.search(rf'class="value"[^>]*>{gross:,}<', dom)  # the bar says its value
    assert "per 0 min" not in dom and ">0,0,0" not in dom
    if which == "ctx":                                    # no transcripts: each empty section says what fills it
        assert "No model calls in this window: the agents' transcripts fill this" in dom
        assert "No agent sessions in this window" in dom
    else:
        assert "<h3>by role</h3>" in dom and ">dev<" in dom
    assert "INV-" not in dom
