"""A local fake of the OpenAI Responses API (what Codex speaks) that scripts MCP tool calls.

Not a model: while fewer function_call_output items than scripted calls are in the input, it answers
the next scripted `function_call` in the `mcp__<server>` namespace; then a short text message.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _event(data: dict) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


class FakeResponses:
    def __init__(self, namespace: str, calls: list[tuple[str, dict]]):
        self.namespace, self.calls = namespace, calls
        self.requests: list[dict] = []
        self.raw: list[tuple[str, dict[str, str], bytes]] = []   # (path, headers, body) as received
        self.usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                      "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                self.send_response(404)
                self.end_headers()

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                body = json.loads(raw or b"{}")
                fake.requests.append(body)
                fake.raw.append((self.path, dict(self.headers), raw))
                item = fake.answer(body)
                rid = f"resp_{len(fake.requests)}"
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                usage = dict(fake.usage)
                for data in ({"type": "response.created", "response": {"id": rid}},
                             {"type": "response.output_item.added", "output_index": 0, "item": item},
                             {"type": "response.output_item.done", "output_index": 0, "item": item},
                             {"type": "response.completed", "response": {"id": rid, "usage": usage}}):
                    self.wfile.write(_event(data))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()

    @staticmethod
    def _outputs(body: dict) -> list[dict]:
        return [i for i in body.get("input", []) if i.get("type") == "function_call_output"]

    def answer(self, body: dict) -> dict:
        done = len(self._outputs(body))
        if done < len(self.calls):
            name, args = self.calls[done]
            return {"type": "function_call", "id": f"fc_{done}", "call_id": f"call_{done}", "name": name,
                    "namespace": self.namespace, "arguments": json.dumps(args), "status": "completed"}
        return {"type": "message", "role": "assistant", "id": "msg_done",
                "content": [{"type": "output_text", "text": "done", "annotations": []}]}

    def outputs(self) -> list[dict]:
        return max((self._outputs(b) for b in self.requests), key=len, default=[])

    def provider_config(self) -> str:
        return "\n".join([
            'model = "gpt-5"', 'model_provider = "fake"', "check_for_update_on_startup = false", "",
            "[model_providers.fake]", 'name = "fake"', f'base_url = "{self.base_url}"', 'env_key = "OPENAI_API_KEY"',
            'wire_api = "responses"', "supports_websockets = false", "request_max_retries = 0",
            "stream_max_retries = 0", ""])
