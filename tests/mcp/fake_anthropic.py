"""A local fake of the Anthropic Messages API that scripts one MCP tool call and records requests.

Not a model: while fewer tool results than scripted calls have come back, a request that offers the
tool gets the next scripted `tool_use` block; otherwise it gets a short text answer.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeMessages:
    def __init__(self, tool: str, tool_inputs: list[dict]):
        self.tool, self.tool_inputs = tool, tool_inputs
        self.requests: list[dict] = []
        self.raw: list[tuple[str, dict[str, str], bytes]] = []   # (path, headers, body) as received
        self.usage = {"input_tokens": 10, "output_tokens": 5}   # what every answer reports
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
                if self.path.startswith("/v1/messages") and "count_tokens" not in self.path:
                    fake.raw.append((self.path, dict(self.headers), raw))
                if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.end_headers()
                    self.wfile.write(b'{"input_tokens": 10}')
                    return
                fake.requests.append(body)
                blocks = fake.answer(body)
                if body.get("stream"):
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.end_headers()
                    for event in fake.sse(blocks):
                        self.wfile.write(event.encode())
                        self.wfile.flush()
                else:
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.end_headers()
                    self.wfile.write(json.dumps(fake.message(blocks)).encode())

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()

    @staticmethod
    def _results_in(body: dict) -> list[dict]:
        out = []
        for msg in body.get("messages", []):
            content = msg.get("content")
            if isinstance(content, list):
                out.extend(c for c in content if c.get("type") == "tool_result")
        return out

    def answer(self, body: dict) -> list[dict]:
        offered = any(t.get("name") == self.tool for t in body.get("tools") or [])
        done = len(self._results_in(body))
        if offered and done < len(self.tool_inputs):
            return [{"type": "tool_use", "id": f"toolu_{done}", "name": self.tool, "input": self.tool_inputs[done]}]
        return [{"type": "text", "text": "done"}]

    def tool_results(self) -> list[dict]:
        """The tool results of the longest conversation seen, in order."""
        return max((self._results_in(b) for b in self.requests), key=len, default=[])

    def offered_tools(self) -> list[dict]:
        return [t for b in self.requests for t in (b.get("tools") or []) if t.get("name", "").startswith("mcp__")][:4]

    def message(self, blocks):
        stop = "tool_use" if blocks[0]["type"] == "tool_use" else "end_turn"
        return {"id": f"msg_{len(self.requests)}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": blocks, "stop_reason": stop, "stop_sequence": None,
                "usage": dict(self.usage)}

    def sse(self, blocks):
        msg = self.message(blocks)
        head = {**msg, "content": [], "stop_reason": None}

        def ev(name, data):
            return f"event: {name}\ndata: {json.dumps(data)}\n\n"

        yield ev("message_start", {"type": "message_start", "message": head})
        for i, b in enumerate(blocks):
            if b["type"] == "tool_use":
                yield ev("content_block_start", {"type": "content_block_start", "index": i,
                                                 "content_block": {**b, "input": {}}})
                yield ev("content_block_delta", {"type": "content_block_delta", "index": i,
                                                 "delta": {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}})
            else:
                yield ev("content_block_start", {"type": "content_block_start", "index": i,
                                                 "content_block": {"type": "text", "text": ""}})
                yield ev("content_block_delta", {"type": "content_block_delta", "index": i,
                                                 "delta": {"type": "text_delta", "text": b["text"]}})
            yield ev("content_block_stop", {"type": "content_block_stop", "index": i})
        yield ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": msg["stop_reason"],
                                                                      "stop_sequence": None},
                                   "usage": {"output_tokens": msg["usage"]["output_tokens"]}})
        yield ev("message_stop", {"type": "message_stop"})


class FakeWithSubagent(FakeMessages):
    """Main conversation: read, spawn a subagent (Agent tool), read again. Subagent: read twice."""

    MARK = "SUBAGENT-MARK"

    def __init__(self, read_input: dict):
        super().__init__("mcp__capsule__ctx_read", [])
        self.read_input = read_input

    def answer(self, body: dict) -> list[dict]:
        msgs = body.get("messages", [])
        first = json.dumps(msgs[0]) if msgs else ""
        done = len(self._results_in(body))
        offered = any(t.get("name") == self.tool for t in body.get("tools") or [])
        if not offered:
            return [{"type": "text", "text": "ok"}]
        read = {"type": "tool_use", "name": self.tool, "input": self.read_input}
        if self.MARK in first:
            if done < 2:
                return [{**read, "id": f"toolu_sub_{done}"}]
            return [{"type": "text", "text": "subagent done"}]
        if done == 0:
            return [{**read, "id": "toolu_main_0"}]
        if done == 1:
            return [{"type": "tool_use", "id": "toolu_main_1", "name": "Agent",
                     "input": {"description": "read the readme", "prompt": f"{self.MARK}: read the readme",
                               "subagent_type": "general-purpose"}}]
        if done == 2:
            return [{**read, "id": "toolu_main_2"}]
        return [{"type": "text", "text": "done"}]

    def results_by_id(self) -> dict[str, str]:
        out = {}
        for body in self.requests:
            for r in self._results_in(body):
                content = r.get("content")
                text = content if isinstance(content, str) else "\n".join(c.get("text", "") for c in content or [])
                out[r["tool_use_id"]] = text
        return out
