"""What one agent session costs with and without capsule, as the measure layer reports it.

The real Claude Code runs the same scripted 10-call session (ls -la, git log --stat, git status, six
echos) plain and under `capsule up --local`, against a fake Messages API that reports the usage the
prompt cache would really report for the bytes it received (tests/fakes/cache.py,
FakeCachingAnthropic: ~4 bytes a token, reads = longest previously written breakpoint prefix).
`capsule ctx report --json` then reads the transcripts and the ledger. Prints one table, and which of
the client's own context features (context editing, tool search, auto-compaction) each run had on:
both run at the client's defaults.

    python benchmarks/bench_session_cost.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.measure import clients  # noqa: E402
from tests.fakes.cache import CachingMessages as FakeCachingAnthropic  # noqa: E402
from tests.measure.test_cache_real_client import script  # noqa: E402


NATIVE: dict[str, str] = {}


def native_features(requests: list[dict], env: dict) -> str:
    """Which of the client's own context features were on, read off what it sent: capsule's win is
    measured over them at their defaults, never over a client with them turned off."""
    first = requests[0] if requests else {}
    edits = [e.get("type") for e in (first.get("context_management") or {}).get("edits") or []]
    names = [t.get("name") for t in first.get("tools") or []]
    return ", ".join([
        "context editing " + ("/".join(edits) if edits else "off"),
        "tool search " + ("on" if "ToolSearch" in names else "off"),
        "auto-compaction " + ("off" if env.get("DISABLE_AUTO_COMPACT") else "on (default)")])


def run(ws: Path, work: Path, with_capsule: bool) -> dict:
    name = "capsule" if with_capsule else "plain"
    state, cfg = work / f"state-{name}", work / f"cc-{name}"
    state.mkdir()
    fake = FakeCachingAnthropic(script)
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(cfg), "ANTHROPIC_BASE_URL": fake.url, "ANTHROPIC_API_KEY": "test",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "IS_SANDBOX": "1",
           "JACKIN_CTX_STATE_DIR": str(state), "HOME": str(work)}
    cmd = [clients.client("claude"), "-p", "go", "--allowedTools", "Bash", "--output-format", "json"]
    if with_capsule:
        cmd = [sys.executable, "-m", "capsule", "up", "--role", "python-dev", "--local", "--", *cmd]
    try:
        proc = subprocess.run(cmd, cwd=ws, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    finally:
        fake.close()
    if proc.returncode:
        raise SystemExit(f"{name} run failed: {proc.stderr[-1500:]}")
    NATIVE[name] = native_features(fake.requests, env)
    rep = subprocess.run([sys.executable, "-m", "capsule", "ctx", "report", "--json", "--claude-dir", str(cfg)],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(rep.stdout)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bench-session-") as tmp:
        work = Path(tmp)
        ws = clients.make_workspace(work / "ws")
        plain, cap = run(ws, work, False), run(ws, work, True)
        if (ws / "CLAUDE.md").exists():
            (ws / "CLAUDE.md").unlink()
    rows = [("model calls", "calls", "{:,}"), ("fresh input tokens", "input_tokens", "{:,}"),
            ("cache read tokens", "cache_read_input_tokens", "{:,}"), ("cache write tokens", "cache_creation_5m", "{:,}"),
            ("output tokens", "output_tokens", "{:,}"), ("cost USD", "cost_usd", "{:.4f}"),
            ("cache-read share", "cache_read_share", "{:.1%}")]
    print(f"{'one scripted 10-call session, real Claude Code':<46}{'plain':>12}{'capsule':>12}{'ratio':>8}")
    print("-" * 78)
    for label, key, fmt in rows:
        a, b = plain["totals"][key], cap["totals"][key]
        ratio = f"{b / a:.3f}" if a else "-"
        print(f"{label:<46}{fmt.format(a):>12}{fmt.format(b):>12}{ratio:>8}")
    sp, sc = plain["savings"]["totals"], cap["savings"]["totals"]
    for label, key in (("tool-result tokens received", "received_tokens"), ("removed by capsule", "removed_tokens"),
                       ("added by capsule (standing context)", "added_tokens"), ("bounced back", "bounce_tokens"),
                       ("net saved", "net_tokens")):
        print(f"{label:<46}{sp[key]:>12,}{sc[key]:>12,}{'':>8}")
    busts = sum(len(c["busts"]) for c in plain["cache"] + cap["cache"])
    print(f"cache busts: {busts}; INV-1 misses: {sum(len(c['inv1_misses']) for c in plain['cache'] + cap['cache'])}")
    for name, features in NATIVE.items():
        print(f"client's own features ({name}): {features}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
