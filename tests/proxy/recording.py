"""Recording fake upstreams with scripted tool calls and four distinct usage buckets."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "mcp"))

from fake_anthropic import FakeMessages  # noqa: E402
from fake_openai import FakeResponses  # noqa: E402,F401

# Four distinct usage buckets, so a row that mixes them up cannot pass.
ANTHROPIC_USAGE = {"input_tokens": 1234, "cache_creation_input_tokens": 567, "cache_read_input_tokens": 8910,
                   "output_tokens": 42}
OPENAI_USAGE = {"input_tokens": 5000, "input_tokens_details": {"cached_tokens": 3072}, "output_tokens": 77,
                "output_tokens_details": {"reasoning_tokens": 11}, "total_tokens": 5077}


class ScriptedMessages(FakeMessages):
    """Answers the scripted (tool, input) calls in order while the client offers each tool; then `final`."""

    def __init__(self, calls: list[tuple[str, dict]], final: str = "All done: FINAL-ANSWER-7"):
        super().__init__("", [])
        self.calls, self.final = calls, final
        self.usage = dict(ANTHROPIC_USAGE)

    def answer(self, body: dict) -> list[dict]:
        offered = {t.get("name") for t in body.get("tools") or []}
        done = len(self._results_in(body))
        if done < len(self.calls) and self.calls[done][0] in offered:
            name, args = self.calls[done]
            return [{"type": "tool_use", "id": f"toolu_{done:02d}", "name": name, "input": args}]
        return [{"type": "text", "text": self.final if offered else "ok"}]

    def conversation(self) -> list[bytes]:
        """Raw bodies of the main conversation's requests (the ones offering tools), in order."""
        return [raw for _, _, raw in self.raw if json.loads(raw).get("tools")]




class Canned:
    """An upstream that answers every request with fixed bytes (status, headers, body chunks) and records
    each request as received: (method, path, headers, body)."""

    def __init__(self, status: int = 200, headers: list[tuple[str, str]] | None = None, chunks: list[bytes] = ()):
        import threading  # noqa: PLC0415
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer  # noqa: PLC0415

        self.status, self.headers, self.chunks = status, headers or [], list(chunks)
        self.seen: list[tuple[str, str, dict, bytes]] = []
        canned = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _any(self):
                n = int(self.headers.get("content-length", 0))
                canned.seen.append((self.command, self.path, dict(self.headers), self.rfile.read(n) if n else b""))
                self.send_response(canned.status)
                for k, v in canned.headers:
                    self.send_header(k, v)
                self.send_header("content-length", str(sum(map(len, canned.chunks))))
                self.end_headers()
                if self.command != "HEAD":
                    for c in canned.chunks:
                        self.wfile.write(c)
                        self.wfile.flush()

            do_GET = do_POST = do_HEAD = do_PUT = _any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


class ScriptedResponses(FakeResponses):
    """Responses API fake answering scripted (tool, arguments) function calls, then `final`."""

    def __init__(self, calls: list[tuple[str, dict]], final: str = "All done: FINAL-ANSWER-7"):
        super().__init__("", calls)
        self.final = final
        self.usage = dict(OPENAI_USAGE)

    def answer(self, body: dict) -> dict:
        done = len(self._outputs(body))
        if done < len(self.calls):
            name, args = self.calls[done]
            return {"type": "function_call", "id": f"fc_{done}", "call_id": f"call_{done:02d}", "name": name,
                    "arguments": json.dumps(args), "status": "completed"}
        return {"type": "message", "role": "assistant", "id": "msg_done",
                "content": [{"type": "output_text", "text": self.final, "annotations": []}]}

    def conversation(self) -> list[bytes]:
        return [raw for path, _, raw in self.raw if path.endswith("/responses")]
