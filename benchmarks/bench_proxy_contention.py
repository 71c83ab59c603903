"""Proxy-door benchmark: does one conversation wait on another's engine work? (issue 24)

    .venv/bin/python benchmarks/bench_proxy_contention.py [--mib 8] [--small N] [--python PATH]

A local upstream answers every Messages request at once. Conversation B sends small requests, each
with a new ~3 KB tool result (the engine sees it for the first time), alone and then while
conversation A's request with one slow 8 MiB tool result (a log the engine has never seen) is in
the proxy. The table shows B's latency alone, B's latency during A (median, max), the latency B lost
to A, and how long A's own request took (the engine's per-request time budget bounds it).
Every figure is measured in this run. Run it under an older checkout's interpreter (--python) for the
figures before a change.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

MSG = json.dumps({"id": "msg_b", "type": "message", "role": "assistant", "model": "m",
                  "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "stop_sequence": None,
                  "usage": {"input_tokens": 12, "output_tokens": 3}}).encode()


class _Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(MSG)))
        self.end_headers()
        self.wfile.write(MSG)


def _log(n_bytes: int, seed: int) -> str:
    """A log no rule was written for: varied lines, ids and durations, one error in the middle."""
    lines, size, i = [], 0, 0
    while size < n_bytes:
        line = (f"2026-03-0{1 + i % 9}T{i % 24:02d}:{i % 60:02d}:{(i * 7) % 60:02d}.{(i * 13 + seed) % 1000:03d}Z "
                f"{['INFO', 'DEBUG', 'WARN'][i % 3]} svc-{(i * 31 + seed) % 97} req={(i * 2654435761 + seed) % 10**9:09d} "
                f"path=/api/v{i % 3}/items/{(i * 17) % 5000} took={(i * 37) % 900}ms user=u{(i * 11) % 313}")
        if i == 5000:
            line = f"2026-03-01T00:00:00Z ERROR svc-1 failed: disk full (seed {seed})"
        lines.append(line)
        size += len(line) + 1
        i += 1
    return "\n".join(lines) + "\n"


def _body(session: str, result: str, tool_id: str) -> bytes:
    return json.dumps({"model": "claude-x", "metadata": {"user_id": json.dumps({"session_id": session})},
                       "messages": [{"role": "user", "content": "check the log"},
                                    {"role": "assistant", "content": [
                                        {"type": "tool_use", "id": tool_id, "name": "Read",
                                         "input": {"file_path": "/w/app.log"}}]},
                                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id,
                                                                  "content": result}]}]}).encode()


def main() -> None:
    from interpreter import add_option, run_under

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=float, default=8.0, help="size of conversation A's slow tool result")
    ap.add_argument("--small", type=int, default=8, help="small requests of conversation B per phase")
    add_option(ap)
    args = ap.parse_args()
    run_under(ap, args.python, __file__)

    import httpx2

    from capsule.proxy.app import Settings
    from capsule.proxy.proxy_server import ProxyServer

    state = Path(tempfile.mkdtemp(prefix="bench-contention-"))
    os.environ["JACKIN_CTX_STATE_DIR"] = str(state)
    up = ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    threading.Thread(target=up.serve_forever, daemon=True).start()
    proxy = ProxyServer(Settings(state_dir=state, anthropic_upstream=f"http://127.0.0.1:{up.server_address[1]}",
                                 mode="standard")).start()
    client = httpx2.Client(timeout=900)
    n = 0

    def small() -> float:
        nonlocal n
        n += 1
        body = _body("conv-B", _log(3000, seed=n), f"toolu_b{n}")
        t0 = time.perf_counter()
        r = client.post(proxy.url + "/v1/messages", content=body, headers={"content-type": "application/json"})
        assert r.status_code == 200, r.text
        return (time.perf_counter() - t0) * 1000

    small()     # the engine's first use (imports, tokenizer) is not B's
    alone = [small() for _ in range(args.small)]
    big = _body("conv-A", _log(int(args.mib * (1 << 20)), seed=7), "toolu_a")
    a_time: list[float] = []

    def conversation_a() -> None:
        with httpx2.Client(timeout=900) as c:
            t0 = time.perf_counter()
            c.post(proxy.url + "/v1/messages", content=big, headers={"content-type": "application/json"})
            a_time.append(time.perf_counter() - t0)

    th = threading.Thread(target=conversation_a)
    th.start()
    time.sleep(1.0)             # A is parsed and in the engine
    during = []
    while th.is_alive() and len(during) < args.small:
        during.append(small())
    th.join()
    proxy.stop()
    up.shutdown()
    med_alone = statistics.median(alone)
    print(f"{'case':<28}{'B median ms':>13}{'B max ms':>11}{'A total s':>11}")
    print(f"{'B alone':<28}{med_alone:>13.1f}{max(alone):>11.1f}{'-':>11}")
    if during:
        print(f"{f'B during A ({args.mib:g} MiB)':<28}{statistics.median(during):>13.1f}{max(during):>11.1f}"
              f"{a_time[0] if a_time else float('nan'):>11.1f}")
        print(f"added latency for B's first request during A: {during[0] - med_alone:.1f} ms; "
              f"{len(during)} of B's requests finished while A was in the proxy")


if __name__ == "__main__":
    main()
