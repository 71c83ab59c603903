"""Spawn stagger: N simultaneous same-prefix subagent requests through the proxy, stagger off vs on.

A fake Messages API models the prompt cache in time (tests/fakes/cache.py, TimedCacheMessages): a
prefix is readable only once the first answer that wrote it has started streaming; writing the
shared prefix delays the first byte by --ttft-write seconds, reading it by --ttft-read. Counts the
prefix writes the fake saw and each request's time to its last byte. Prints one table.

    python benchmarks/bench_stagger.py [--n 5 25] [--ttft-write 0.8] [--ttft-read 0.15]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "route"))

from tests.fakes.cache import TimedCacheMessages as TimedCacheAPI  # noqa: E402
from test_stagger import fan_out  # noqa: E402

from capsule.proxy.app import Settings  # noqa: E402
from capsule.proxy.proxy_server import ProxyServer  # noqa: E402
from capsule.route.stagger import Settings as StaggerSettings  # noqa: E402


def one(n: int, on: bool, ttft_write: float, ttft_read: float) -> dict:
    fake = TimedCacheAPI(ttft_write_s=ttft_write, ttft_read_s=ttft_read)
    with tempfile.TemporaryDirectory() as d:
        server = ProxyServer(Settings(state_dir=Path(d), anthropic_upstream=fake.url,
                                      stagger=StaggerSettings(enabled=on))).start()
        try:
            times = sorted(fan_out(server.url, n))
            writes = fake.prefix_writes
            written = sum(e["usage"]["cache_creation_input_tokens"] for e in fake.log)
            read = sum(e["usage"]["cache_read_input_tokens"] for e in fake.log)
        finally:
            server.stop()
            fake.close()
    return {"n": n, "stagger": "on" if on else "off", "prefix_writes": writes, "write_tokens": written,
            "read_tokens": read, "first_s": times[0], "median_s": statistics.median(times), "last_s": times[-1]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[5, 25])
    ap.add_argument("--ttft-write", type=float, default=0.8)
    ap.add_argument("--ttft-read", type=float, default=0.15)
    a = ap.parse_args()
    rows = [one(n, on, a.ttft_write, a.ttft_read) for n in a.n for on in (False, True)]
    print(f"fake API: prefix write -> first byte after {a.ttft_write:.2f} s, read -> {a.ttft_read:.2f} s")
    print(f"{'N':>3} {'stagger':<8} {'prefix writes':>13} {'write tok':>10} {'read tok':>10} "
          f"{'first s':>8} {'median s':>9} {'last s':>7}")
    for r in rows:
        print(f"{r['n']:>3} {r['stagger']:<8} {r['prefix_writes']:>13} {r['write_tokens']:>10,} {r['read_tokens']:>10,} "
              f"{r['first_s']:>8.2f} {r['median_s']:>9.2f} {r['last_s']:>7.2f}")
    for n in a.n:
        off, on = [r for r in rows if r["n"] == n]
        print(f"N={n}: prefix writes {off['prefix_writes']} -> {on['prefix_writes']}; followers' median latency "
              f"{off['median_s']:.2f} -> {on['median_s']:.2f} s (added {on['median_s'] - off['median_s']:+.2f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
