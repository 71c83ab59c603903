"""`capsule ctx report`: real transcripts (the real clients' runs) joined with a real ledger (the
engine run through `capsule ctx run` under the session's scope); the HTML page in real headless
Chromium (Debian's package; scripts/test-all installs it)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from capsule.measure.ledger import Ledger

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]
CHARTS = ("chart-cost", "chart-family", "chart-door", "chart-cache")


@pytest.fixture
def reported(claude_run, codex_run, capsule, state_dir, tmp_path):
    """Ledger rows from the real engine under the Claude session's scope: one applied, one measure-only."""
    sid = claude_run["sid"]
    listing = tmp_path / "many"
    listing.mkdir()
    for i in range(400):
        (listing / f"file_{i:03d}.txt").write_text("x")
    for mode in ("standard", "measure"):
        proc = capsule("ctx", "run", "--", "ls", "-la", str(listing),
                       env={"JACKIN_CTX_SCOPE": sid, "JACKIN_CTX_MODE": mode})
        assert proc.returncode == 0, proc.stderr
    rows = Ledger().rows()
    assert {r["applied"] for r in rows} == {0, 1}
    args = ("--claude-dir", str(claude_run["cfg"]), "--codex-dir", str(codex_run["home"]))
    return {"sid": sid, "rows": rows, "args": args}


def test_report_joins_ledger_savings_cache_and_discovery(reported, capsule, claude_run):
    proc = capsule("ctx", "report", "--json", *reported["args"])
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    applied = [x for x in reported["rows"] if x["applied"]]
    measured = [x for x in reported["rows"] if not x["applied"]]
    s = next(x for x in r["savings"]["sessions"] if x["session_id"] == reported["sid"])
    # Every figure recomputes from the rows it lists.
    assert sorted(s["ledger_ids"]) == sorted(x["id"] for x in reported["rows"])
    assert s["removed_tokens"] == sum(x["raw_tokens"] - x["emitted_tokens"] for x in applied) > 0
    assert s["would_remove_tokens"] == sum(x["raw_tokens"] - x["would_emit_tokens"] for x in measured) > 0
    assert s["net_tokens"] == s["removed_tokens"] - s["added_tokens"] - s["bounce_tokens"]
    assert s["added_tokens"] > 0 and "mcp tools" in s["added_parts"]   # the part as Claude Code sends it (issue 19)
    assert s["received_tokens"] > 0
    assert r["ledger"]["by_family"][0]["saved_tokens"] == s["removed_tokens"]
    # The resumed run re-ran `echo alpha` with no edit in between: a repeated command.
    assert any(x["command"] == "echo alpha" and x["session_id"] == reported["sid"]
               for x in r["discovery"]["repeated_commands"])
    # Cache health covers every session; the Codex compaction is found and explained.
    assert {c["session_id"] for c in r["cache"]} == {x["session_id"] for x in r["sessions"]}
    busts = [b for c in r["cache"] if c["agent"] == "codex" for b in c["busts"]]
    assert busts and all(b["explained"] == "compaction" for b in busts)
    text = capsule("ctx", "report", *reported["args"])
    assert text.returncode == 0 and b"NET SAVINGS" in text.stdout and b"CACHE HEALTH" in text.stdout


def test_html_report_draws_every_chart_in_headless_chromium(reported, capsule, tmp_path):
    page = tmp_path / "report.html"
    proc = capsule("ctx", "report", "--html", str(page), *reported["args"])
    assert proc.returncode == 0, proc.stderr
    html = page.read_text()
    # Self-contained: nothing fetched (no src/href, no URL but the SVG namespace), a CSP that forbids it.
    assert not re.search(r"\b(src|href)\s*=", html)
    assert set(re.findall(r"https?://[^\s\"']+", html)) <= {"http://www.w3.org/2000/svg"}
    assert "default-src 'none'" in html
    chromium = shutil.which("chromium")
    assert chromium, "chromium is not installed; scripts/test-all installs it (apt-get install chromium)"
    run = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                          "--enable-logging=stderr", "--v=0", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    dom = run.stdout
    assert 'data-ready="1"' in dom, dom[-2000:]
    assert not re.search(r"<body[^>]*data-errors=", dom)
    assert ":CONSOLE" not in run.stderr, [ln for ln in run.stderr.splitlines() if ":CONSOLE" in ln]
    for chart in CHARTS:
        m = re.search(rf'<div class="chart" id="{chart}"[^>]*data-drawn="(\d+)"[^>]*>(.*?)</div>\s*<h2|'
                      rf'<div class="chart" id="{chart}"[^>]*data-drawn="(\d+)"[^>]*>(.*?)</svg>', dom, re.S)
        assert m, f"{chart} was not drawn"
        drawn = int(m.group(1) or m.group(3))
        body = m.group(2) or m.group(4)
        assert drawn >= 1 and "<rect" in body, f"{chart}: {drawn} bars"


@pytest.mark.parametrize("args", [("usage", "--claude-dir", "/nonexistent/dir"), ("usage", "--since", "yesterdayish"),
                                  ("report", "--html", "/nonexistent/dir/r.html"), ("report", "--codex-dir", "/nonexistent")])
def test_bad_input_is_one_line_and_exit_2(capsule, args):
    proc = capsule("ctx", *args)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and err.startswith("capsule: ") and err.count("\n") == 1, err
