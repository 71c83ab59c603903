"""The proxy tests' upstreams: the shared fakes (tests/fakes) answering scripted tool calls with four
distinct usage buckets, so a row that mixes them up cannot pass."""

from __future__ import annotations

from tests.fakes.anthropic import ToolCalls
from tests.fakes.http import Canned  # noqa: F401 - the proxy tests' fixed-bytes upstream
from tests.fakes.openai import FunctionCalls

ANTHROPIC_USAGE = {"input_tokens": 1234, "cache_creation_input_tokens": 567, "cache_read_input_tokens": 8910,
                   "output_tokens": 42}
OPENAI_USAGE = {"input_tokens": 5000, "input_tokens_details": {"cached_tokens": 3072}, "output_tokens": 77,
                "output_tokens_details": {"reasoning_tokens": 11}, "total_tokens": 5077}
FINAL = "All done: FINAL-ANSWER-7"


def ScriptedMessages(calls: list[tuple[str, dict]], final: str = FINAL) -> ToolCalls:  # noqa: N802
    """Messages API: the scripted (tool, input) calls in order while the client offers each tool; then `final`."""
    return ToolCalls(calls, final, side="ok", id_format="toolu_{:02d}", usage=ANTHROPIC_USAGE)


def ScriptedResponses(calls: list[tuple[str, dict]], final: str = FINAL) -> FunctionCalls:  # noqa: N802
    """Responses API: the scripted (tool, arguments) function calls, then `final`."""
    return FunctionCalls(calls, final, call_id="call_{:02d}", usage=OPENAI_USAGE)
