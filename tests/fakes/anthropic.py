"""A fake Anthropic Messages API: scripted content blocks, recorded requests, settable usage,
rate-limit headers and status, SSE streamed the way the real API streams it.

Not a model: `answer(body)` (by default `script(body, turn)`, turn = assistant messages already in
the request) gives the content blocks. Streaming follows the real API: usage in message_start with
output_tokens 1, the final output count in message_delta (clients that write mid-stream show the
real trap), tool input as input_json_delta, thinking with its signature. count_tokens and any other
path answer {"input_tokens": 10}; HEAD and GET answer 200.
"""

from __future__ import annotations

import json
import time

from tests.fakes.http import FakeServer, Quiet, sse

FIXED_USAGE = {"input_tokens": 10, "output_tokens": 5}


def text_answer(text: str = "done"):
    return lambda body, turn: [{"type": "text", "text": text}]


def tool_results_in(body: dict) -> list[dict]:
    """The tool_result blocks of a request, in order."""
    return [c for m in body.get("messages", []) if isinstance(m.get("content"), list)
            for c in m["content"] if isinstance(c, dict) and c.get("type") == "tool_result"]


TOOL_SEARCH = "ToolSearch"
SEARCH_ID = "toolu_search_"
DEFERRED = "deferred tools are now available via ToolSearch"


def deferred(body: dict, tool: str) -> bool:
    """The request lists `tool` among the client's deferred tools (loadable through ToolSearch)."""
    return any(DEFERRED in c["text"] and f"\n{tool}\n" in c["text"] + "\n"
               for m in body.get("messages") or [] if isinstance(m.get("content"), list)
               for c in m["content"] if isinstance(c, dict) and isinstance(c.get("text"), str))


def result_text(result: dict) -> str:
    content = result.get("content")
    return content if isinstance(content, str) else "\n".join(
        c.get("text", "") for c in content or [] if c.get("type", "text") == "text")


class MessagesAPI(FakeServer):
    """`requests`: the bodies of answered /v1/messages calls; `raw`: (path, headers, bytes) of each;
    `log`: one entry per answer (id, model, usage, turn, blocks, headers sent)."""

    unique_ids = False      # True: ids unique across fakes (msg_<run><n>), as the real API's are
    keep_alive = False      # True: HTTP/1.1 with content-length (a streamed answer still closes)

    def __init__(self, script=None, *, usage: dict | None = None, ratelimit=None, status=None,
                 model: str = "claude-sonnet-4-5", delay=None):
        self.script = script or text_answer()
        self.fixed_usage = dict(usage or FIXED_USAGE)
        self.ratelimit = ratelimit or (lambda n: {})
        self.status = status or (lambda n: 200)
        self.delay = delay                      # delay(n, body) -> seconds before the first byte
        self.model = model
        self._recording()
        fake = self

        class Handler(Quiet):
            protocol_version = "HTTP/1.1" if fake.keep_alive else "HTTP/1.0"

            def do_HEAD(self):
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_GET(self):
                self.send_json({})

            def do_POST(self):
                t0 = time.monotonic()
                raw = self.read_body()
                body = json.loads(raw or b"{}")
                if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                    return self.send_json({"input_tokens": 10})
                n, msg = fake.respond(body, raw, self.path, dict(self.headers))
                status = fake.status(n)
                fake.before_first_byte(n, body, t0)
                headers = fake.ratelimit(n)
                if status != 200:
                    return self.send_json({"type": "error", "error": {"type": "rate_limit_error",
                                                                      "message": "rate limited"}}, status, headers)
                if not body.get("stream"):
                    return self.send_json(msg, 200, headers)
                self.send_response(200)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("content-type", "text/event-stream")
                if fake.keep_alive:
                    self.send_header("connection", "close")
                    self.close_connection = True
                self.end_headers()
                for event in fake.sse(msg):
                    self.wfile.write(event)
                    self.wfile.flush()

        self._start(Handler)

    # ---- what a subclass may change -------------------------------------------------------------
    def answer(self, body: dict) -> list[dict]:
        turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        return self.script(body, turn)

    def usage(self, body: dict, n: int) -> dict:
        return dict(self.fixed_usage)

    def before_first_byte(self, n: int, body: dict, t0: float) -> None:
        if self.delay is not None:
            time.sleep(self.delay(n, body))

    # ---- the answer -----------------------------------------------------------------------------
    def respond(self, body: dict, raw: bytes = b"", path: str = "/v1/messages", headers: dict | None = None):
        with self.lock:
            self.raw.append((path, headers or {}, raw))
            self.requests.append(body)
            n = len(self.requests)
            turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
            blocks = self.answer(body)
            usage = self.usage(body, n)
            mid = f"msg_{self.run}{n:04d}" if self.unique_ids else f"msg_{n}"
            msg = {"id": mid, "type": "message", "role": "assistant", "model": body.get("model") or self.model,
                   "content": blocks,
                   "stop_reason": "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn",
                   "stop_sequence": None, "usage": usage}
            self.log.append({"id": mid, "model": msg["model"], "usage": usage, "turn": turn,
                             "blocks": [b["type"] for b in blocks], "headers": self.ratelimit(n)})
            return n, msg

    @staticmethod
    def sse(msg: dict):
        usage = msg["usage"]
        head = {**msg, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
        yield sse("message_start", {"type": "message_start", "message": head})
        for i, b in enumerate(msg["content"]):
            if b["type"] == "tool_use":
                start = {**b, "input": {}}
                deltas = [{"type": "input_json_delta", "partial_json": json.dumps(b["input"])}]
            elif b["type"] == "thinking":
                start = {"type": "thinking", "thinking": "", "signature": ""}
                deltas = [{"type": "thinking_delta", "thinking": b["thinking"]},
                          {"type": "signature_delta", "signature": "c2lnbmF0dXJl"}]
            else:
                start = {"type": "text", "text": ""}
                deltas = [{"type": "text_delta", "text": b["text"]}]
            yield sse("content_block_start", {"type": "content_block_start", "index": i, "content_block": start})
            for d in deltas:
                yield sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d})
            yield sse("content_block_stop", {"type": "content_block_stop", "index": i})
        yield sse("message_delta", {"type": "message_delta",
                                    "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
                                    "usage": {"output_tokens": usage["output_tokens"]}})
        yield sse("message_stop", {"type": "message_stop"})

    # ---- what the test reads back ---------------------------------------------------------------
    @property
    def raw_bodies(self) -> list[bytes]:
        return [raw for _, _, raw in self.raw]

    def tool_results(self) -> list[dict]:
        """The tool results of the longest conversation seen, in order (a ToolSearch that loaded a
        deferred tool for ToolCalls is the client's step, not a result of the script)."""
        longest = max((tool_results_in(b) for b in self.requests), key=len, default=[])
        return [r for r in longest if not str(r.get("tool_use_id", "")).startswith(SEARCH_ID)]

    def totals(self) -> dict:
        t = {"calls": 0, "input_tokens": 0, "cache_read_input_tokens": 0, "cache_creation_5m": 0,
             "cache_creation_1h": 0, "output_tokens": 0}
        for e in self.log:
            u = e["usage"]
            cc = u.get("cache_creation") or {}
            t["calls"] += 1
            t["input_tokens"] += u["input_tokens"]
            t["cache_read_input_tokens"] += u.get("cache_read_input_tokens", 0)
            t["cache_creation_5m"] += cc.get("ephemeral_5m_input_tokens", 0)
            t["cache_creation_1h"] += cc.get("ephemeral_1h_input_tokens", 0)
            t["output_tokens"] += u["output_tokens"]
        return t


class ToolCalls(MessagesAPI):
    """While fewer tool results than scripted (tool, input) calls came back and the request offers
    the call's tool, the next call as a tool_use block; then `final` (`side` to a request that
    offers no tool at all: the client's own side calls, titles and the like)."""

    def __init__(self, calls: list[tuple[str, dict]], final: str = "done", *, side: str | None = None,
                 id_format: str = "toolu_{}", **kw):
        super().__init__(**kw)
        self.calls, self.final, self.id_format = calls, final, id_format
        self.side = final if side is None else side

    def answer(self, body: dict) -> list[dict]:
        offered = {t.get("name") for t in body.get("tools") or []}
        results = tool_results_in(body)
        searched = {r.get("tool_use_id") for r in results if str(r.get("tool_use_id", "")).startswith(SEARCH_ID)}
        done = len(results) - len(searched)
        if done < len(self.calls) and self.calls[done][0] in offered:
            name, args = self.calls[done]
            return [{"type": "tool_use", "id": self.id_format.format(done), "name": name, "input": args}]
        if (done < len(self.calls) and TOOL_SEARCH in offered and f"{SEARCH_ID}{done}" not in searched
                and deferred(body, self.calls[done][0])):
            # what a model does with a deferred tool (Claude Code 2.1.332 defers MCP tools): load it
            # by name through ToolSearch, then call it once the client offers its definition
            return [{"type": "tool_use", "id": f"{SEARCH_ID}{done}", "name": TOOL_SEARCH,
                     "input": {"query": f"select:{self.calls[done][0]}", "max_results": 1}}]
        return [{"type": "text", "text": self.final if offered else self.side}]

    def conversation(self) -> list[bytes]:
        """Raw bodies of the main conversation's requests (the ones offering tools), in order."""
        return [raw for _, _, raw in self.raw if json.loads(raw).get("tools")]

    def offered_tools(self) -> list[dict]:
        """The MCP tool definitions the client sent, one per name (2.1.332 sends only those loaded)."""
        seen: dict[str, dict] = {}
        for b in self.requests:
            for t in b.get("tools") or []:
                if t.get("name", "").startswith("mcp__"):
                    seen.setdefault(t["name"], t)
        return list(seen.values())

    def offered_names(self, prefix: str = "mcp__") -> set[str]:
        """The tools the client offered the model: sent as definitions or listed as deferred."""
        names = {t["name"] for t in self.offered_tools() if t["name"].startswith(prefix)}
        for b in self.requests:
            for m in b.get("messages") or []:
                for c in m.get("content") if isinstance(m.get("content"), list) else []:
                    if isinstance(c, dict) and DEFERRED in str(c.get("text", "")):
                        names |= {ln.strip() for ln in c["text"].splitlines() if ln.strip().startswith(prefix)}
        return names
