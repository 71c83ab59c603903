"""What the cost engine projects for the scripted route run, with the routing policy and without it.

The real Claude Code runs the e2e script of tests/route/test_route_real_clients.py (3 sessions under
`capsule up --local`, each with an Explore and a general-purpose subagent) against the timed
prompt-cache fake whose answers carry 5h utilization ramping 10% -> 95%; once with JACKIN_CTX_NO_ROUTING=1
(the client's own choices), once with the role's lanes but degrade_at = 1.0, once with the policy. Every call the
fake answered is priced with capsule/measure/data/prices.toml. Prints one table.

    python benchmarks/bench_route_policy.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "route"))

from tests.fakes.cache import TimedCacheMessages as TimedCacheAPI, ramp  # noqa: E402
from test_route_real_clients import ROLE, SESSIONS, STEPS, script  # noqa: E402

from capsule.measure import cost  # noqa: E402
from tests.measure import clients  # noqa: E402


def run(routing: bool, role: str = ROLE) -> dict:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        ws, state = tmp / "ws", tmp / "state"
        ws.mkdir()
        (ws / "app.py").write_text("def main():\n    return 1\n")
        state.mkdir(mode=0o700)
        (tmp / "role.toml").write_text(role)
        fake = TimedCacheAPI(script, ratelimit=ramp(0, 0, 0, reset=2_000_000_000, steps=STEPS))
        env = {**os.environ, "CLAUDE_CONFIG_DIR": str(tmp / "cc"), "ANTHROPIC_BASE_URL": fake.url,
               "ANTHROPIC_API_KEY": "test", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "IS_SANDBOX": "1",
               "JACKIN_CTX_STATE_DIR": str(state), "HOME": str(tmp)}
        if not routing:
            env["JACKIN_CTX_NO_ROUTING"] = "1"
        try:
            for i in range(SESSIONS):
                subprocess.run([sys.executable, "-m", "capsule", "up", "--role", str(tmp / "role.toml"), "--local",
                                "--", clients.client("claude"), "-p", f"task {i}", "--allowedTools", "Agent,Read,Bash"],
                               cwd=ws, env=env, capture_output=True, timeout=300, stdin=subprocess.DEVNULL, check=True)
        finally:
            fake.close()
    usd, unpriced, models = 0.0, 0, Counter()
    buckets = Counter()
    for e in fake.log:
        u = e["usage"]
        call = {"model": e["model"], "input_tokens": u["input_tokens"], "cache_read_input_tokens": u["cache_read_input_tokens"],
                "cache_creation_5m": u["cache_creation_input_tokens"], "cache_creation_1h": 0,
                "output_tokens": u["output_tokens"]}
        c = cost.call_cost(call)
        models[e["model"]] += 1
        for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_5m", "output_tokens"):
            buckets[k] += call[k]
        if c.usd is None:
            unpriced += 1
        else:
            usd += c.usd
    return {"calls": len(fake.log), "usd": usd, "unpriced": unpriced, "models": dict(models), "buckets": dict(buckets)}


def main() -> int:
    rows = {"without policy": run(False), "lanes, no degrade": run(True, ROLE.replace("degrade_at = 0.8", "degrade_at = 1.0")),
            "with policy": run(True)}
    print(f"{'run':<18} {'calls':>5} {'cost USD':>10} {'unpriced':>8}  fresh/read/write/out tokens  models")
    for name, r in rows.items():
        b = r["buckets"]
        print(f"{name:<18} {r['calls']:>5} {r['usd']:>10.4f} {r['unpriced']:>8}  {b['input_tokens']:,}/"
              f"{b['cache_read_input_tokens']:,}/{b['cache_creation_5m']:,}/{b['output_tokens']:,}  "
              + ", ".join(f"{m} x{n}" for m, n in sorted(r["models"].items())))
    a, m, b = (rows[k]["usd"] for k in ("without policy", "lanes, no degrade", "with policy"))
    print(f"policy: {a:.4f} -> {b:.4f} USD ({100 * (b - a) / a:+.1f}%); of it, degrading past 80%: "
          f"{m:.4f} -> {b:.4f} ({100 * (b - m) / m:+.1f}%)" if a and m else "no priced calls")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
