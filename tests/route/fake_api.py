"""A fake Messages API with a prompt cache that behaves like the real one in time, and rate-limit headers.

The cache: a prefix (tools, system, messages up to a cache_control breakpoint; keyed by model and
effort, as the real cache is) becomes readable only once the first response that wrote it has
started streaming; a request arriving before that pays the write again. Each answer waits
`ttft_write_s` before its first byte when it wrote the shared prefix (tools + system), `ttft_read_s`
when it read it. Every response carries `anthropic-ratelimit-unified-*` headers from `ratelimit(n)`.
Not a model: `script(body, turn)` gives the content blocks.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "measure"))

from fake_usage import FakeAnthropic, FakeCachingAnthropic  # noqa: E402


def ramp(start: float, end: float, calls: int, reset: float, steps: list[float] | None = None):
    """Unified headers whose 5h utilization climbs linearly from `start` to `end` over `calls` answers
    (or answer n carries steps[n-1], the last one repeated)."""
    def headers(n: int) -> dict[str, str]:
        if steps:
            u = steps[min(n, len(steps)) - 1]
        else:
            u = start + (end - start) * min(n - 1, calls - 1) / max(calls - 1, 1)
        status = "allowed" if u < 0.8 else ("allowed_warning" if u < 1 else "rejected")
        return {"anthropic-ratelimit-unified-status": status,
                "anthropic-ratelimit-unified-5h-status": status,
                "anthropic-ratelimit-unified-5h-utilization": f"{u:.4f}",
                "anthropic-ratelimit-unified-5h-reset": str(int(reset)),
                "anthropic-ratelimit-unified-7d-utilization": f"{u / 4:.4f}",
                "anthropic-ratelimit-unified-7d-reset": str(int(reset + 5 * 86400))}
    return headers


class TimedCacheAPI:
    def __init__(self, script=None, ratelimit=None, ttft_write_s: float = 0.0, ttft_read_s: float = 0.0,
                 status=None):
        self.script = script or (lambda body, turn: [{"type": "text", "text": "ok"}])
        self.ratelimit = ratelimit or (lambda n: {})
        self.status = status or (lambda n: 200)
        self.ttft_write_s, self.ttft_read_s = ttft_write_s, ttft_read_s
        self.run = uuid.uuid4().hex[:8]
        self.cached: set[str] = set()
        self.requests: list[dict] = []
        self.log: list[dict] = []
        self.prefix_writes = 0
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_HEAD(self):
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_POST(self):
                t0 = time.monotonic()
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                body = json.loads(raw or b"{}")
                if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                    data = b'{"input_tokens": 10}'
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                n, msg, pending, wrote_prefix = fake.respond(body)
                status = fake.status(n)
                time.sleep(fake.ttft_write_s if wrote_prefix else fake.ttft_read_s)
                with fake.lock:
                    fake.cached |= pending           # the entry exists once this answer starts streaming
                    fake.log[n - 1]["ttfb_s"] = time.monotonic() - t0
                if status != 200:
                    data = json.dumps({"type": "error", "error": {"type": "rate_limit_error",
                                                                  "message": "rate limited"}}).encode()
                    self.send_response(status)
                    for k, v in fake.ratelimit(n).items():
                        self.send_header(k, v)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_response(200)
                for k, v in fake.ratelimit(n).items():
                    self.send_header(k, v)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                self.close_connection = True
                for event in FakeAnthropic.sse(msg):
                    self.wfile.write(event.encode())
                    self.wfile.flush()

        class Server(ThreadingHTTPServer):
            request_queue_size = 256     # a fan-out of 25 arrives at once (the default backlog is 5)
            daemon_threads = True

        self.server = Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def respond(self, body: dict):
        segs = FakeCachingAnthropic._segments(body)
        effort = (body.get("output_config") or {}).get("effort")
        h = hashlib.sha256(f"{body.get('model')}|{effort}".encode())
        sizes, digests, marks, total = [], [], [], 0
        n_prefix = len(body.get("tools") or []) + len(body.get("system") or []) if not isinstance(
            body.get("system"), str) else len(body.get("tools") or []) + 1
        for text, mark in segs:
            h.update(text.encode())
            total += len(text.encode())
            sizes.append(total)
            digests.append(h.hexdigest())
            marks.append(mark)
        tok = lambda nbytes: (nbytes + 3) // 4  # noqa: E731
        with self.lock:
            read = 0
            for i in range(len(segs)):
                if digests[i] in self.cached:
                    read = sizes[i]
            last_mark = max((i for i, m in enumerate(marks) if m), default=-1)
            upto = sizes[last_mark] if last_mark >= 0 else 0
            pending = {digests[i] for i, m in enumerate(marks) if m}
            prefix_end = sizes[n_prefix - 1] if 0 < n_prefix <= len(sizes) else 0
            wrote_prefix = bool(prefix_end) and read < prefix_end and upto >= prefix_end
            self.prefix_writes += wrote_prefix
            n = len(self.log) + 1
            turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
            blocks = self.script(body, turn)
            read_t, upto_t, total_t = tok(read), tok(max(upto, read)), tok(total)
            usage = {"input_tokens": total_t - upto_t, "cache_creation_input_tokens": upto_t - read_t,
                     "cache_read_input_tokens": read_t,
                     "cache_creation": {"ephemeral_5m_input_tokens": upto_t - read_t, "ephemeral_1h_input_tokens": 0},
                     "output_tokens": 20 + n}
            msg = {"id": f"msg_{self.run}{n:04d}", "type": "message", "role": "assistant",
                   "model": body.get("model"), "content": blocks,
                   "stop_reason": "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn",
                   "stop_sequence": None, "usage": usage}
            self.requests.append(body)
            self.log.append({"id": msg["id"], "model": body.get("model"), "effort": effort, "usage": usage,
                             "wrote_prefix": wrote_prefix, "headers": self.ratelimit(n)})
            return n, msg, pending, wrote_prefix


def openai_ramp(steps: list[float], limit: int = 1_000_000):
    """OpenAI rate-limit headers (tokens window) whose utilization follows `steps`, plus the
    x-codex-primary-* headers Codex itself reads into its rollout's rate_limits."""
    def headers(n: int) -> dict[str, str]:
        u = steps[min(n, len(steps)) - 1]
        return {"x-ratelimit-limit-tokens": str(limit), "x-ratelimit-remaining-tokens": str(int(limit * (1 - u))),
                "x-ratelimit-reset-tokens": "6m0s", "x-ratelimit-limit-requests": "10000",
                "x-ratelimit-remaining-requests": str(10000 - n), "x-ratelimit-reset-requests": "1s",
                "x-codex-primary-used-percent": f"{100 * u:.1f}", "x-codex-primary-window-minutes": "300",
                "x-codex-primary-reset-at": "2000000000"}
    return headers


class ResponsesCacheAPI:
    """A fake Responses API: the prompt cache reads the longest earlier prefix of (model, effort,
    instructions, tools, input items), ~4 bytes a token; every answer carries `ratelimit(n)`."""

    def __init__(self, script, ratelimit=None):
        self.script, self.ratelimit = script, ratelimit or (lambda n: {})
        self.run = uuid.uuid4().hex[:8]
        self.cached: set[str] = set()
        self.requests: list[dict] = []
        self.log: list[dict] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                self.send_response(404)
                self.end_headers()

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                n, rid, items, usage = fake.respond(body)
                self.send_response(200)
                for k, v in fake.ratelimit(n).items():
                    self.send_header(k, v)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()

                def ev(data):
                    self.wfile.write(f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode())

                ev({"type": "response.created", "response": {"id": rid}})
                for i, item in enumerate(items):
                    ev({"type": "response.output_item.added", "output_index": i, "item": item})
                    ev({"type": "response.output_item.done", "output_index": i, "item": item})
                ev({"type": "response.completed", "response": {"id": rid, "model": body.get("model"), "usage": usage}})

        class Server(ThreadingHTTPServer):
            daemon_threads = True

        self.server = Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def respond(self, body: dict):
        effort = (body.get("reasoning") or {}).get("effort")
        h = hashlib.sha256(f"{body.get('model')}|{effort}".encode())
        segs = [json.dumps(body.get("instructions"), sort_keys=True), json.dumps(body.get("tools"), sort_keys=True)]
        segs += [json.dumps(i, sort_keys=True) for i in body.get("input") or []]
        with self.lock:
            read, total, digests = 0, 0, []
            for s in segs:
                h.update(s.encode())
                total += len(s.encode())
                d = h.hexdigest()
                digests.append(d)
                if d in self.cached:
                    read = total
            self.cached.update(digests)
            n = len(self.log) + 1
            done = sum(1 for i in body.get("input", []) if i.get("type") == "function_call_output")
            items = self.script(body, done)
            inp, cached = (total + 3) // 4, (read + 3) // 4
            usage = {"input_tokens": inp, "input_tokens_details": {"cached_tokens": cached},
                     "output_tokens": 20 + n, "output_tokens_details": {"reasoning_tokens": 5},
                     "total_tokens": inp + 20 + n}
            rid = f"resp_{self.run}{n:04d}"
            self.requests.append(body)
            self.log.append({"id": rid, "model": body.get("model"), "effort": effort, "usage": usage,
                             "headers": self.ratelimit(n)})
            return n, rid, items, usage

    def provider_config(self) -> str:
        return "\n".join([
            'model_provider = "fake"', "check_for_update_on_startup = false", "",
            "[model_providers.fake]", 'name = "fake"', f'base_url = "{self.base_url}"',
            'env_key = "OPENAI_API_KEY"', 'wire_api = "responses"', "supports_websockets = false",
            "request_max_retries = 0", "stream_max_retries = 0", ""])
