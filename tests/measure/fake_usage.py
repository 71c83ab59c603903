"""Local fakes of the Anthropic Messages API and the OpenAI Responses API that answer every call with
known, distinct usage and keep their own log of it: the ground truth transcript ingestion must match.

Not a model: each conversation follows a script keyed by how many assistant turns it already holds.
The Anthropic fake streams like the real API (usage in message_start with output_tokens 1, the final
output count in message_delta), so clients that write entries mid-stream show the real trap.
"""

from __future__ import annotations

import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _serve(handler_cls) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_cls)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class FakeAnthropic:
    """script(body, turn) -> list of content blocks; turn = assistant messages already in the request."""

    def __init__(self, script, model: str = "claude-sonnet-4-5"):
        self.script, self.model = script, model
        self.run = uuid.uuid4().hex[:8]    # response ids are unique across fakes, as the real API's are
        self.requests: list[dict] = []
        self.raw_bodies: list[bytes] = []
        self.log: list[dict] = []          # one entry per answered call: id, model, usage
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_HEAD(self):
                self.send_response(200)
                self.end_headers()

            def do_GET(self):
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}")

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                body = json.loads(raw or b"{}")
                if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.end_headers()
                    self.wfile.write(b'{"input_tokens": 10}')
                    return
                msg = fake.respond(body, raw)
                if body.get("stream"):
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.end_headers()
                    for event in fake.sse(msg):
                        self.wfile.write(event.encode())
                        self.wfile.flush()
                else:
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.end_headers()
                    self.wfile.write(json.dumps(msg).encode())

        self.server = _serve(Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.server.shutdown()

    def respond(self, body: dict, raw: bytes) -> dict:
        with self.lock:
            n = len(self.log) + 1
            turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
            blocks = self.script(body, turn)
            usage = self.usage(body, n)
            msg = {"id": f"msg_{self.run}{n:04d}", "type": "message", "role": "assistant",
                   "model": body.get("model") or self.model, "content": blocks,
                   "stop_reason": "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn",
                   "stop_sequence": None, "usage": usage}
            self.requests.append(body)
            self.raw_bodies.append(raw)
            self.log.append({"id": msg["id"], "model": msg["model"], "usage": usage, "turn": turn,
                             "blocks": [b["type"] for b in blocks]})
            return msg

    def usage(self, body: dict, n: int) -> dict:
        """Distinct per call, every bucket non-zero and with a 5m/1h split, so a wrong sum shows."""
        c5, c1 = 200 + 11 * n, 30 + 3 * n
        return {"input_tokens": 7 + n, "cache_creation_input_tokens": c5 + c1,
                "cache_read_input_tokens": 1000 * n + 13,
                "cache_creation": {"ephemeral_5m_input_tokens": c5, "ephemeral_1h_input_tokens": c1},
                "output_tokens": 40 + 17 * n}

    @staticmethod
    def sse(msg: dict):
        def ev(name, data):
            return f"event: {name}\ndata: {json.dumps(data)}\n\n"

        usage = msg["usage"]
        head = {**msg, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
        yield ev("message_start", {"type": "message_start", "message": head})
        for i, b in enumerate(msg["content"]):
            if b["type"] == "tool_use":
                yield ev("content_block_start", {"type": "content_block_start", "index": i,
                                                 "content_block": {**b, "input": {}}})
                yield ev("content_block_delta", {"type": "content_block_delta", "index": i,
                                                 "delta": {"type": "input_json_delta",
                                                           "partial_json": json.dumps(b["input"])}})
            elif b["type"] == "thinking":
                yield ev("content_block_start", {"type": "content_block_start", "index": i,
                                                 "content_block": {"type": "thinking", "thinking": "",
                                                                   "signature": ""}})
                yield ev("content_block_delta", {"type": "content_block_delta", "index": i,
                                                 "delta": {"type": "thinking_delta", "thinking": b["thinking"]}})
                yield ev("content_block_delta", {"type": "content_block_delta", "index": i,
                                                 "delta": {"type": "signature_delta", "signature": "c2lnbmF0dXJl"}})
            else:
                yield ev("content_block_start", {"type": "content_block_start", "index": i,
                                                 "content_block": {"type": "text", "text": ""}})
                yield ev("content_block_delta", {"type": "content_block_delta", "index": i,
                                                 "delta": {"type": "text_delta", "text": b["text"]}})
            yield ev("content_block_stop", {"type": "content_block_stop", "index": i})
        yield ev("message_delta", {"type": "message_delta",
                                   "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
                                   "usage": {"output_tokens": usage["output_tokens"]}})
        yield ev("message_stop", {"type": "message_stop"})

    def totals(self) -> dict:
        t = {"calls": 0, "input_tokens": 0, "cache_read_input_tokens": 0, "cache_creation_5m": 0,
             "cache_creation_1h": 0, "output_tokens": 0}
        for e in self.log:
            u = e["usage"]
            t["calls"] += 1
            t["input_tokens"] += u["input_tokens"]
            t["cache_read_input_tokens"] += u["cache_read_input_tokens"]
            t["cache_creation_5m"] += u["cache_creation"]["ephemeral_5m_input_tokens"]
            t["cache_creation_1h"] += u["cache_creation"]["ephemeral_1h_input_tokens"]
            t["output_tokens"] += u["output_tokens"]
        return t


def _event(data: dict) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


class FakeResponses:
    """script(body, done) -> list of output items; done = function_call_output items in the input."""

    def __init__(self, script, big=None):
        self.script = script
        self.run = uuid.uuid4().hex[:8]
        self.big = big or (lambda body, done: False)   # True: report a context over the compact limit
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
                rid, items, usage = fake.respond(body)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                self.wfile.write(_event({"type": "response.created", "response": {"id": rid}}))
                for i, item in enumerate(items):
                    self.wfile.write(_event({"type": "response.output_item.added", "output_index": i, "item": item}))
                    self.wfile.write(_event({"type": "response.output_item.done", "output_index": i, "item": item}))
                self.wfile.write(_event({"type": "response.completed", "response": {"id": rid, "usage": usage}}))

        self.server = _serve(Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self):
        self.server.shutdown()

    def respond(self, body: dict):
        with self.lock:
            n = len(self.log) + 1
            done = sum(1 for i in body.get("input", []) if i.get("type") == "function_call_output")
            items = self.script(body, done)
            cached = 0 if n == 1 else 500 * n + 3
            inp = cached + 60 + 9 * n
            if self.big(body, done):
                cached, inp = 90_000 + n, 120_000 + 7 * n
            out, reasoning = 30 + 13 * n, 4 + n
            usage = {"input_tokens": inp, "input_tokens_details": {"cached_tokens": cached},
                     "output_tokens": out, "output_tokens_details": {"reasoning_tokens": reasoning},
                     "total_tokens": inp + out}
            rid = f"resp_{self.run}{n:04d}"
            self.requests.append(body)
            self.log.append({"id": rid, "model": body.get("model"), "usage": usage, "done": done,
                             "compact": "CONTEXT CHECKPOINT COMPACTION" in json.dumps(body)})
            return rid, items, usage

    def totals(self) -> dict:
        t = {"calls": 0, "input_tokens": 0, "cache_read_input_tokens": 0, "cache_creation_5m": 0,
             "cache_creation_1h": 0, "output_tokens": 0}
        for e in self.log:
            u = e["usage"]
            cached = u["input_tokens_details"]["cached_tokens"]
            t["calls"] += 1
            t["input_tokens"] += u["input_tokens"] - cached
            t["cache_read_input_tokens"] += cached
            t["output_tokens"] += u["output_tokens"]
        return t

    def provider_config(self, model: str = "gpt-5.5") -> str:
        return "\n".join([
            f'model = "{model}"', 'model_provider = "fake"', "check_for_update_on_startup = false", "",
            "[model_providers.fake]", 'name = "fake"', f'base_url = "{self.base_url}"',
            'env_key = "OPENAI_API_KEY"', 'wire_api = "responses"', "supports_websockets = false",
            "request_max_retries = 0", "stream_max_retries = 0", ""])


class FakeCachingAnthropic(FakeAnthropic):
    """Usage the way the prompt cache would really report it for the bytes received: the prompt is the
    tools, then the system blocks, then every message block (cache_control markers set aside), ~4 bytes a
    token; a request reads back the longest prefix ending at a breakpoint some earlier request wrote,
    writes up to its own last breakpoint, and pays the rest as fresh input. A changed byte anywhere in
    an earlier part of the prompt shows as a collapse of the read share (a bust)."""

    def __init__(self, script, model: str = "claude-sonnet-4-5"):
        super().__init__(script, model)
        self.cached: set[str] = set()

    @staticmethod
    def _segments(body: dict) -> list[tuple[str, bool]]:
        def strip(block):
            return {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else block

        def marked(block):
            return isinstance(block, dict) and "cache_control" in block

        segs = [(json.dumps(strip(t), sort_keys=True), marked(t)) for t in body.get("tools") or []]
        system = body.get("system") or []
        if isinstance(system, str):
            system = [{"type": "text", "text": system}]
        segs += [(json.dumps(strip(b), sort_keys=True), marked(b)) for b in system]
        for m in body.get("messages", []):
            content = m.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
            segs += [(m.get("role", "") + json.dumps(strip(b), sort_keys=True), marked(b)) for b in blocks]
        return segs

    def usage(self, body: dict, n: int) -> dict:
        import hashlib

        segs = self._segments(body)
        h = hashlib.sha256()
        sizes, digests, marks = [], [], []
        total = 0
        for text, mark in segs:
            h.update(text.encode())
            total += len(text.encode())
            sizes.append(total)
            digests.append(h.hexdigest())
            marks.append(mark)
        tok = lambda nbytes: (nbytes + 3) // 4  # noqa: E731
        read = 0
        for i in range(len(segs)):
            if digests[i] in self.cached:
                read = sizes[i]
        last_mark = max((i for i, m in enumerate(marks) if m), default=-1)
        upto = sizes[last_mark] if last_mark >= 0 else 0
        for i, m in enumerate(marks):
            if m:
                self.cached.add(digests[i])
        read_t, upto_t, total_t = tok(read), tok(max(upto, read)), tok(total)
        return {"input_tokens": total_t - upto_t, "cache_creation_input_tokens": upto_t - read_t,
                "cache_read_input_tokens": read_t,
                "cache_creation": {"ephemeral_5m_input_tokens": upto_t - read_t, "ephemeral_1h_input_tokens": 0},
                "output_tokens": 30 + n}
