"""Proxy-door benchmark: added latency per request, and tokens saved on a Claude Code session of native Reads.

    .venv/bin/python benchmarks/bench_proxy.py [--requests N] [--skip-session] [--json FILE]

1. Latency: a local upstream (a separate process) answers canned Messages API responses; the same
   client sends each request directly and through `capsule proxy serve` (another process),
   interleaved, and the table shows median / p95 of both and the median added by the proxy.
   Cases: a small request, a streamed (SSE) answer, 40- and 200-turn conversations whose tool
   results the proxy has seen before (memo hits: parse + lookup + re-serialize), and tool results it
   sees for the first time (engine time included). Target (issue 14): <= 5 ms added plus engine time.
2. Tokens: the real Claude Code reads files with its native Read tool in a scripted session (a fake
   model on 127.0.0.1), once directly and once through the proxy; the table shows the tool-result
   tokens (cl100k) the model received per file, plain vs proxied, the input tokens of the whole
   session (every request re-sends the conversation), and how many must-keep lines survived.
Every figure is measured in this run; nothing is a constant.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "proxy"))

sys.path.insert(0, str(REPO / "benchmarks"))
from corpora import SHIPPED, shared_corpus  # noqa: E402

# (corpus case or repo file, file name in the workspace): logs, data, docs and source, as an agent reads them
_SHARED = os.environ.get("CAPSULE_CORPUS") or shared_corpus()
if _SHARED:
    CORPUS = Path(_SHARED)
    SESSION_FILES = [("log_worker_buried_error", "worker.log"), ("csv_cat_invoices", "invoices_2024.csv"),
                     ("markdown_component_reference", "COMPONENTS.md"), ("json_npm_view", "jest.json"),
                     ("log_retry_wait_for_db", "wait-for-db.log"), ("repo:capsule/engine.py", "engine.py"),
                     ("repo:capsule/supervisor/core.py", "core.py")]
else:   # a plain clone: the same kinds of file from the corpus shipped in the repo
    CORPUS = SHIPPED["dev"]
    # every file under the 256 KB Claude Code's Read tool accepts
    SESSION_FILES = [("pytest_many_jinja2", "pytest-run.log"), ("json_npm_view_dev", "express.json"),
                     ("repo:README.md", "README.md"), ("git_log_stat_own", "recent-changes.txt"),
                     ("ruff_full_toolz", "lint-report.txt"), ("repo:capsule/engine.py", "engine.py"),
                     ("repo:capsule/supervisor/core.py", "core.py")]

UPSTREAM = r'''
import json, socket, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
USAGE = {"input_tokens": 12, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 3}
MSG = json.dumps({"id": "msg_b", "type": "message", "role": "assistant", "model": "m", "content": [
    {"type": "text", "text": "ok"}], "stop_reason": "end_turn", "stop_sequence": None, "usage": USAGE}).encode()
def sse():
    ev = lambda n, d: f"event: {n}\ndata: {json.dumps(d)}\n\n"
    out = [ev("message_start", {"type": "message_start", "message": {**json.loads(MSG), "content": []}}),
           ev("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})]
    out += [ev("content_block_delta", {"type": "content_block_delta", "index": 0,
                                       "delta": {"type": "text_delta", "text": f"word{i} "}}) for i in range(30)]
    out += [ev("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 30}}),
            ev("message_stop", {"type": "message_stop"})]
    return "".join(out).encode()
SSE = sse()
class H(BaseHTTPRequestHandler):
    # One write per response and TCP_NODELAY, as a real API front end: no Nagle / delayed-ACK stall
    # (http.server's separate header and body writes cost ~40 ms per request on loopback otherwise).
    protocol_version = "HTTP/1.1"
    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    def log_message(self, *a): pass
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        stream = b'"stream":true' in body
        data = SSE if stream else MSG
        kind = "text/event-stream" if stream else "application/json"
        head = f"HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {len(data)}\r\n\r\n".encode()
        self.wfile.write(head + data)
s = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
'''


def _log(n: int, seed: int) -> str:
    lines = [f"2026-04-0{seed % 9 + 1} 11:{i // 60:02d}:{i % 60:02d} INFO job {seed}-{i} finished in {i % 97} ms"
             for i in range(n)]
    lines[n // 2] = f"2026-04-01 11:30:00 ERROR job {seed} failed: quota exceeded"
    return "\n".join(lines)


def _conversation(turns: int, seed: int, stream: bool = False) -> bytes:
    msgs = [{"role": "user", "content": "look at the jobs"}]
    for t in range(turns):
        msgs.append({"role": "assistant", "content": [{"type": "text", "text": f"Reading batch {t}."},
                                                      {"type": "tool_use", "id": f"toolu_{seed}_{t}", "name": "Read",
                                                       "input": {"file_path": f"/w/jobs{t}.log"}}]})
        msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{seed}_{t}",
                                                  "content": _log(60, seed * 1000 + t)}]})
    return json.dumps({"model": "m", "max_tokens": 100, "stream": stream, "messages": msgs,
                       "metadata": {"user_id": json.dumps({"session_id": f"bench-{seed}"})}}).encode()


def _small(stream: bool) -> bytes:
    return json.dumps({"model": "m", "max_tokens": 100, "stream": stream,
                       "messages": [{"role": "user", "content": "hello"}]}).encode()


def latency(n: int, state: Path) -> list[dict]:
    import httpx2  # noqa: PLC0415

    up = subprocess.Popen([sys.executable, "-c", UPSTREAM], stdout=subprocess.PIPE, text=True)
    port = int(up.stdout.readline())
    upstream = f"http://127.0.0.1:{port}"
    env = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state), "JACKIN_CTX_MODE": "standard"}
    proxy = subprocess.Popen([sys.executable, "-m", "capsule", "proxy", "serve", "--port", "0",
                              "--anthropic-upstream", upstream], stderr=subprocess.PIPE, text=True, env=env)
    line = proxy.stderr.readline()
    via = line.split()[3]
    rows = []
    try:
        with httpx2.Client(timeout=60) as client:
            headers = {"x-api-key": "bench", "content-type": "application/json", "anthropic-version": "2023-06-01"}

            def timed(url, body):
                t = time.perf_counter()
                r = client.post(url + "/v1/messages", content=body, headers=headers)
                r.read()
                assert r.status_code == 200, r.status_code
                return (time.perf_counter() - t) * 1000

            seen = _conversation(40, 1)
            long = _conversation(200, 2)
            cases = [("small request, JSON answer", lambda i: _small(False)),
                     ("small request, streamed answer (SSE)", lambda i: _small(True)),
                     (f"40 tool results seen before ({len(seen) // 1024} KB body)", lambda i: seen),
                     (f"200 tool results seen before ({len(long) // 1024} KB body)", lambda i: long),
                     ("4 tool results seen for the first time", lambda i: _conversation(4, 100 + i))]
            timed(via, seen), timed(via, long)     # warm: the engine loads, the memo fills
            for _ in range(5):
                timed(upstream, _small(False)), timed(via, _small(False))
            for name, make in cases:
                direct, proxied = [], []
                for i in range(n):
                    body = make(i)
                    direct.append(timed(upstream, body))
                    proxied.append(timed(via, body))
                rows.append({"case": name, "n": n, "direct_ms": statistics.median(direct),
                             "proxy_ms": statistics.median(proxied),
                             "added_ms": statistics.median(p - d for p, d in zip(proxied, direct)),
                             "proxy_p95_ms": sorted(proxied)[int(0.95 * (n - 1))]})
    finally:
        proxy.terminate()
        up.terminate()
        proxy.wait(10)
        up.wait(10)
    return rows


def cpu(state: Path) -> list[dict]:
    """CPU time of the proxy's request path on memo hits (parse, walk, lookups, re-serialize), in this
    process: wall latency on a shared machine swings with its load, CPU time much less."""
    from capsule.proxy import rewrite  # noqa: PLC0415
    from capsule.proxy.app import Proxy, Settings  # noqa: PLC0415

    proxy = Proxy(Settings(state_dir=state, mode="standard"))
    rows = []
    for turns in (40, 200, 600):
        body = _conversation(turns, 7)
        proxy._rewrite_sync("anthropic", rewrite.parse(body), "cpu")       # first sight: fills the memo
        times = []
        for _ in range(30):
            t = time.process_time()
            proxy._rewrite_sync("anthropic", rewrite.parse(body), "cpu")
            times.append((time.process_time() - t) * 1000)
        rows.append({"turns": turns, "kb": len(body) // 1024, "cpu_ms": statistics.median(times)})
    proxy.close()
    return rows


def _results(body: dict) -> dict[str, str]:
    out = {}
    for m in body.get("messages", []):
        for b in m["content"] if isinstance(m.get("content"), list) else []:
            if b.get("type") == "tool_result":
                c = b["content"]
                out[b["tool_use_id"]] = c if isinstance(c, str) else "\n".join(i.get("text", "") for i in c)
    return out


def session(tmp: Path) -> dict:
    from capsule.ground.tokens import count  # noqa: PLC0415
    from capsule.proxy.app import Settings  # noqa: PLC0415
    from capsule.proxy.proxy_server import ProxyServer  # noqa: PLC0415
    from recording import ScriptedMessages  # noqa: PLC0415

    claude = shutil.which("claude")
    if not claude:
        raise SystemExit("claude is not installed; run scripts/setup-clients.sh")
    ws = tmp / "ws"
    ws.mkdir()
    must: dict[str, list[str]] = {}
    for source, name in SESSION_FILES:
        if source.startswith("repo:"):
            (ws / name).write_bytes((REPO / source[5:]).read_bytes())
            must[name] = []
        else:
            (ws / name).write_bytes((CORPUS / source / "output.txt").read_bytes())
            keep = CORPUS / source / "must_keep.txt"
            must[name] = [ln for ln in keep.read_text().splitlines() if ln.strip()] if keep.exists() else []
    calls = [("Read", {"file_path": str(ws / name)}) for _, name in SESSION_FILES]
    out = {}
    for label in ("plain", "proxy"):
        state = tmp / f"state-{label}"
        state.mkdir()
        fake = ScriptedMessages(calls)
        server = None
        url = fake.url
        if label == "proxy":
            server = ProxyServer(Settings(state_dir=state, anthropic_upstream=fake.url, mode="standard")).start()
            url = server.url
        env = {**os.environ, "CLAUDE_CONFIG_DIR": str(tmp / f"cc-{label}"), "HOME": str(tmp),
               "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "bench", "JACKIN_CTX_STATE_DIR": str(state),
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "IS_SANDBOX": "1"}
        t = time.perf_counter()
        proc = subprocess.run([claude, "-p", "read the files", "--allowedTools", "Read", "--output-format", "json"],
                              cwd=ws, env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        wall = time.perf_counter() - t
        if server:
            server.stop()
        fake.close()
        if proc.returncode != 0:
            raise SystemExit(f"claude failed ({label}): {proc.stderr[-1500:]}")
        bodies = [json.loads(b) for b in fake.conversation()]
        results = _results(bodies[-1])
        per_file = {}
        for i, (_, name) in enumerate(SESSION_FILES):
            text = results.get(f"toolu_{i:02d}", "")
            kept = sum(1 for m in must[name] if m.strip() in text)
            per_file[name] = {"tokens": count(text), "kept": kept, "must": len(must[name])}
        session_in = sum(count(json.dumps(b["messages"])) for b in bodies)
        out[label] = {"files": per_file, "session_input_tokens": session_in, "requests": len(bodies),
                      "wall_s": wall, "answer": json.loads(proc.stdout).get("result")}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=200, help="requests per latency case and path (default 200)")
    ap.add_argument("--skip-session", action="store_true", help="latency only (no Claude Code run)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    report: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-proxy-") as tmp:
        tmp = Path(tmp)
        (tmp / "lat-state").mkdir()
        report["latency"] = latency(args.requests, tmp / "lat-state")
        print(f"\nAdded latency per request ({args.requests} requests per case, interleaved; same machine, same run)")
        print(f"{'case':<44} {'direct ms':>10} {'proxy ms':>10} {'added ms':>10} {'proxy p95':>10}")
        for r in report["latency"]:
            print(f"{r['case']:<44} {r['direct_ms']:>10.2f} {r['proxy_ms']:>10.2f} {r['added_ms']:>10.2f} "
                  f"{r['proxy_p95_ms']:>10.2f}")
        (tmp / "cpu-state").mkdir()
        report["cpu"] = cpu(tmp / "cpu-state")
        print("\nProxy CPU per request on memo hits (parse + memo lookups + re-serialize), median of 30")
        print(f"{'conversation':<44} {'body KB':>10} {'CPU ms':>10}")
        for r in report["cpu"]:
            print(f"{str(r['turns']) + ' tool results seen before':<44} {r['kb']:>10} {r['cpu_ms']:>10.2f}")
        if not args.skip_session:
            s = report["session"] = session(tmp)
            print("\nClaude Code session, native Read of each file (tool-result tokens the model received, cl100k)")
            print(f"{'file':<22} {'plain':>8} {'proxy':>8} {'ratio':>7} {'must-keep kept':>16}")
            tp = tx = 0
            for name in s["plain"]["files"]:
                p, x = s["plain"]["files"][name], s["proxy"]["files"][name]
                tp, tx = tp + p["tokens"], tx + x["tokens"]
                keep = f"{x['kept']}/{x['must']}" if x["must"] else "-"
                print(f"{name:<22} {p['tokens']:>8} {x['tokens']:>8} {x['tokens'] / max(p['tokens'], 1):>7.2f} {keep:>16}")
            print(f"{'all tool results':<22} {tp:>8} {tx:>8} {tx / max(tp, 1):>7.2f}")
            sp, sx = s["plain"]["session_input_tokens"], s["proxy"]["session_input_tokens"]
            print(f"{'session input (all ' + str(s['proxy']['requests']) + ' requests)':<22} {sp:>8} {sx:>8} "
                  f"{sx / max(sp, 1):>7.2f}")
            print(f"final answer identical: {s['plain']['answer'] == s['proxy']['answer']}; "
                  f"wall plain {s['plain']['wall_s']:.1f} s, proxy {s['proxy']['wall_s']:.1f} s")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
