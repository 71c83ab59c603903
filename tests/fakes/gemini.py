"""A fake Gemini API (what Gemini CLI speaks): `:streamGenerateContent?alt=sse` for the agent loop,
`:generateContent` for the client's JSON side calls (the model router, next-speaker checks),
`:countTokens`; scripted parts, recorded requests, settable usage.

Not a model: `answer(body)` (by default `script(body, done)`, done = functionResponse parts in the
request) gives the model's parts. Streaming follows the real API: `data: <GenerateContentResponse>`
events, usageMetadata on the last one. A side call (no tools offered) gets `side` as its text.
"""

from __future__ import annotations

import json

from tests.fakes.http import FakeServer, Quiet

FIXED_USAGE = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
DEFAULT_MODEL = "gemini-2.5-pro"
# The model router's side call: Gemini CLI 0.61 asks for a choice and, from its numerical
# classifier, a complexity score; one answer that satisfies both schemas.
ROUTER_ANSWER = json.dumps({"reasoning": "scripted", "model_choice": "pro",
                            "complexity_reasoning": "scripted", "complexity_score": 50})


def function_responses_in(body: dict) -> list[dict]:
    """The functionResponse parts of a request, in order."""
    return [p["functionResponse"] for c in body.get("contents", []) for p in c.get("parts") or []
            if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict)]


def response_text(fr: dict) -> str:
    """What the model reads of one tool result: `response.output` (Gemini CLI's shell tool), else
    the whole response object."""
    resp = fr.get("response")
    if isinstance(resp, dict) and isinstance(resp.get("output"), str) and len(resp) == 1:
        return resp["output"]
    if isinstance(resp, dict) and isinstance(resp.get("output"), str):
        return resp["output"]
    return json.dumps(resp, ensure_ascii=False)


def offered(body: dict) -> set[str]:
    return {d.get("name") for t in body.get("tools") or [] for d in t.get("functionDeclarations") or []}


class GenerateContentAPI(FakeServer):
    """`requests`: bodies of the agent-loop calls (streamGenerateContent); `side`: bodies of
    generateContent calls; `log`: one entry per answered stream call (model, usage, parts)."""

    def __init__(self, script=None, *, usage: dict | None = None, side_text: str = ROUTER_ANSWER):
        self.script = script or (lambda body, done: [{"text": "done"}])
        self.fixed_usage = dict(usage or FIXED_USAGE)
        self.side_text = side_text
        self.side: list[dict] = []
        self._recording()
        fake = self

        class Handler(Quiet):
            protocol_version = "HTTP/1.0"

            def do_GET(self):
                self.send_json({"models": [{"name": f"models/{DEFAULT_MODEL}"}]})

            def do_POST(self):
                raw = self.read_body()
                body = json.loads(raw or b"{}")
                path = self.path.split("?", 1)[0]
                model = path.rsplit("/", 1)[-1].split(":", 1)[0]
                if path.endswith(":countTokens"):
                    return self.send_json({"totalTokens": 10})
                if path.endswith(":generateContent"):
                    with fake.lock:
                        fake.side.append(body)
                    return self.send_json(fake.envelope([{"text": fake.side_text}], model, dict(fake.fixed_usage),
                                                        f"side-{len(fake.side)}"))
                if not path.endswith(":streamGenerateContent"):
                    return self.send_json({"error": {"code": 404, "message": f"no {path}"}}, 404)
                msg = fake.respond(body, raw, self.path, dict(self.headers), model)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                for event in fake.sse(msg):
                    self.wfile.write(event)
                    self.wfile.flush()

        self._start(Handler)

    # ---- what a subclass may change -------------------------------------------------------------
    def answer(self, body: dict) -> list[dict]:
        return self.script(body, len(function_responses_in(body)))

    def usage(self, body: dict, n: int) -> dict:
        return dict(self.fixed_usage)

    # ---- the answer -----------------------------------------------------------------------------
    @staticmethod
    def envelope(parts: list[dict], model: str, usage: dict | None, rid: str) -> dict:
        out = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
               "modelVersion": model, "responseId": rid}
        if usage is not None:
            out["usageMetadata"] = usage
        return out

    def respond(self, body: dict, raw: bytes, path: str, headers: dict, model: str) -> dict:
        with self.lock:
            self.raw.append((path, headers, raw))
            self.requests.append(body)
            n = len(self.requests)
            parts = self.answer(body)
            usage = self.usage(body, n)
            rid = f"resp_{self.run}{n:04d}"
            self.log.append({"id": rid, "model": model, "usage": usage, "parts": parts})
            return self.envelope(parts, model, usage, rid)

    @staticmethod
    def sse(msg: dict):
        """Each part its own event (as the real stream sends them), usage on the last."""
        cand = msg["candidates"][0]
        parts = cand["content"]["parts"]
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            event = {"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0,
                                     **({"finishReason": cand["finishReason"]} if last else {})}],
                     "modelVersion": msg["modelVersion"], "responseId": msg["responseId"]}
            if last and "usageMetadata" in msg:
                event["usageMetadata"] = msg["usageMetadata"]
            yield f"data: {json.dumps(event)}\r\n\r\n".encode()

    # ---- what the test reads back ---------------------------------------------------------------
    def tool_results(self) -> list[str]:
        """The tool results of the longest conversation seen, in order, as the model reads them."""
        longest = max((function_responses_in(b) for b in self.requests), key=len, default=[])
        return [response_text(fr) for fr in longest]

    def totals(self) -> dict:
        t = {"calls": 0, "prompt": 0, "cached": 0, "output": 0, "thoughts": 0}
        for e in self.log:
            u = e["usage"]
            t["calls"] += 1
            t["prompt"] += u.get("promptTokenCount", 0)
            t["cached"] += u.get("cachedContentTokenCount", 0)
            t["output"] += u.get("candidatesTokenCount", 0)
            t["thoughts"] += u.get("thoughtsTokenCount", 0)
        return t


class ShellCalls(GenerateContentAPI):
    """While fewer functionResponses than scripted commands came back and the request offers the
    shell tool, the next `run_shell_command`; then `final`."""

    TOOL = "run_shell_command"

    def __init__(self, commands: list[str], final: str = "done", **kw):
        super().__init__(**kw)
        self.commands, self.final = commands, final

    def answer(self, body: dict) -> list[dict]:
        done = len(function_responses_in(body))
        if done < len(self.commands) and self.TOOL in offered(body):
            return [{"functionCall": {"name": self.TOOL, "args": {"command": self.commands[done],
                                                                  "description": f"step {done}"}}}]
        return [{"text": self.final}]
