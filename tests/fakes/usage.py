"""The fakes whose every answer reports known, distinct usage: the ground truth transcript
ingestion must match (tests/measure). Each bucket is non-zero and differs per call (with a 5m/1h
split on the Messages side), so a wrong sum or a mixed-up bucket shows.

Not responsible for the wire format (anthropic.py, openai.py). Invariant: `totals()` is what the
client was told, summed.
"""

from __future__ import annotations

from tests.fakes.anthropic import MessagesAPI
from tests.fakes.openai import ResponsesAPI


class DistinctMessages(MessagesAPI):
    """script(body, turn) -> list of content blocks; turn = assistant messages already in the request."""

    unique_ids = True

    def __init__(self, script, model: str = "claude-sonnet-4-5"):
        super().__init__(script, model=model)

    def usage(self, body: dict, n: int) -> dict:
        c5, c1 = 200 + 11 * n, 30 + 3 * n
        return {"input_tokens": 7 + n, "cache_creation_input_tokens": c5 + c1,
                "cache_read_input_tokens": 1000 * n + 13,
                "cache_creation": {"ephemeral_5m_input_tokens": c5, "ephemeral_1h_input_tokens": c1},
                "output_tokens": 40 + 17 * n}


class DistinctResponses(ResponsesAPI):
    """script(body, done) -> list of output items; big(body, done) True: report a context over the
    compact limit (Codex then compacts)."""

    unique_ids = True

    def __init__(self, script, big=None):
        super().__init__(script, model="gpt-5.5")
        self.big = big or (lambda body, done: False)

    def usage(self, body: dict, n: int) -> dict:
        done = sum(1 for i in body.get("input", []) if i.get("type") == "function_call_output")
        cached = 0 if n == 1 else 500 * n + 3
        inp = cached + 60 + 9 * n
        if self.big(body, done):
            cached, inp = 90_000 + n, 120_000 + 7 * n
        out, reasoning = 30 + 13 * n, 4 + n
        return {"input_tokens": inp, "input_tokens_details": {"cached_tokens": cached},
                "output_tokens": out, "output_tokens_details": {"reasoning_tokens": reasoning},
                "total_tokens": inp + out}


