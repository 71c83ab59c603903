"""A fake OpenAI Responses API (what Codex speaks): scripted output items, recorded requests,
settable usage and rate-limit headers, SSE streamed as Codex parses it.

Not a model: `answer(body)` (by default `script(body, done)`, done = function_call_output items in
the input) gives the output items; None fails the stream (response.failed), as a server error does.
GET answers 404 (Codex probes, then streams).
"""

from __future__ import annotations

import json

from tests.fakes.http import FakeServer, Quiet, sse

FIXED_USAGE = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
               "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}


def outputs_in(body: dict) -> list[dict]:
    return [i for i in body.get("input", []) if isinstance(i, dict) and i.get("type") == "function_call_output"]


def output_text(item: dict) -> str:
    o = item.get("output")
    return o if isinstance(o, str) else "\n".join(p.get("text", "") for p in o or [])


def message(text: str = "done") -> dict:
    return {"type": "message", "role": "assistant", "id": "msg_done",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def function_call(done: int, name: str, args: dict, namespace: str | None = None, call_id: str = "call_{}") -> dict:
    item = {"type": "function_call", "id": f"fc_{done}", "call_id": call_id.format(done), "name": name,
            "arguments": json.dumps(args), "status": "completed"}
    if namespace:
        item["namespace"] = namespace
    return item


class ResponsesAPI(FakeServer):
    """`requests`: bodies received; `raw`: (path, headers, bytes); `log`: id, model, usage, done, headers."""

    unique_ids = False      # True: response ids unique across fakes (resp_<run><n>)

    def __init__(self, script=None, *, usage: dict | None = None, ratelimit=None, model: str | None = "gpt-5"):
        self.script = script or (lambda body, done: [message()])
        self.fixed_usage = dict(usage or FIXED_USAGE)
        self.ratelimit = ratelimit or (lambda n: {})
        self.model = model
        self._recording()
        fake = self

        class Handler(Quiet):
            def do_GET(self):
                self.send_response(404)
                self.end_headers()

            def do_POST(self):
                raw = self.read_body()
                n, rid, items, usage, model = fake.respond(json.loads(raw or b"{}"), raw, self.path,
                                                           dict(self.headers))
                self.send_response(200)
                for k, v in fake.ratelimit(n).items():
                    self.send_header(k, v)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                if items is None:      # a scripted server failure: Codex ends the turn with an error
                    failed = {"type": "response.failed", "response": {"id": "resp_failed", "status": "failed",
                              "error": {"code": "server_error", "message": "scripted failure: the session ends here"}}}
                    self.wfile.write(sse(failed["type"], failed))
                    return
                self.wfile.write(sse("response.created", {"type": "response.created", "response": {"id": rid}}))
                for i, item in enumerate(items):
                    for kind in ("response.output_item.added", "response.output_item.done"):
                        self.wfile.write(sse(kind, {"type": kind, "output_index": i, "item": item}))
                done = {"id": rid, "usage": usage, **({"model": model} if model else {})}
                self.wfile.write(sse("response.completed", {"type": "response.completed", "response": done}))

        self._start(Handler)
        self.base_url = f"{self.url}/v1"

    # ---- what a subclass may change -------------------------------------------------------------
    def answer(self, body: dict) -> list[dict]:
        return self.script(body, len(outputs_in(body)))

    def usage(self, body: dict, n: int) -> dict:
        return dict(self.fixed_usage)

    def respond(self, body: dict, raw: bytes = b"", path: str = "/v1/responses", headers: dict | None = None):
        with self.lock:
            self.raw.append((path, headers or {}, raw))
            self.requests.append(body)
            n = len(self.requests)
            items = self.answer(body)
            usage = self.usage(body, n)
            rid = f"resp_{self.run}{n:04d}" if self.unique_ids else f"resp_{n}"
            self.log.append({"id": rid, "model": body.get("model"), "usage": usage, "done": len(outputs_in(body)),
                             "effort": (body.get("reasoning") or {}).get("effort"), "headers": self.ratelimit(n),
                             "compact": "CONTEXT CHECKPOINT COMPACTION" in json.dumps(body)})
            return n, rid, items, usage, body.get("model")

    # ---- what the test reads back ---------------------------------------------------------------
    def outputs(self) -> list[dict]:
        """The function_call_output items of the longest conversation seen, in order."""
        return max((outputs_in(b) for b in self.requests), key=len, default=[])

    def tool_results(self) -> list[str]:
        return [output_text(i) for i in self.outputs()]

    def conversation(self) -> list[bytes]:
        return [raw for path, _, raw in self.raw if path.endswith("/responses")]

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

    def provider_config(self, model: str | None = None) -> str:
        """Codex's config.toml lines that point it at this fake (no retries, no websockets)."""
        model = model or self.model
        return "\n".join(([f'model = "{model}"'] if model else []) + [
            'model_provider = "fake"', "check_for_update_on_startup = false", "",
            "[model_providers.fake]", 'name = "fake"', f'base_url = "{self.base_url}"',
            'env_key = "OPENAI_API_KEY"', 'wire_api = "responses"', "supports_websockets = false",
            "request_max_retries = 0", "stream_max_retries = 0", ""])


class FunctionCalls(ResponsesAPI):
    """While fewer function_call_output items than scripted (name, arguments) calls came back, the next
    call (in `namespace`, when given: an MCP server's tools); then a message with `final`."""

    def __init__(self, calls: list[tuple[str, dict]], final: str = "done", *, namespace: str | None = None,
                 call_id: str = "call_{}", **kw):
        super().__init__(**kw)
        self.calls, self.final, self.namespace, self.call_id = calls, final, namespace, call_id

    def answer(self, body: dict) -> list[dict]:
        done = len(outputs_in(body))
        if done < len(self.calls):
            name, args = self.calls[done]
            return [function_call(done, name, args, self.namespace, self.call_id)]
        return [message(self.final)]
