"""The proxy door hands the engine the task's cues it sees in the conversation (issue 29.3 item 2):
the user's last prompt and the edit calls before a tool result, and Claude Code's Grep as the rg
command it ran, context flags included (a search with context is a read of regions)."""

from __future__ import annotations

from capsule.proxy import rewrite


def test_a_grep_result_carries_the_prompt_the_edits_and_its_context_flags():
    body = {"messages": [
        {"role": "user", "content": "checkout double-bills: look at `apply_discount`"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Editing the cart first."},
            {"type": "tool_use", "id": "e1", "name": "Edit",
             "input": {"file_path": "/w/shop/cart.py", "old_string": "a", "new_string": "def cart_total():"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "e1", "content": "ok"}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "g1", "name": "Grep",
             "input": {"pattern": "charge\\(", "path": "shop", "-n": True, "-C": 4, "output_mode": "content"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "g1", "content": "x" * 400}]},
    ]}
    seen = []

    def shrink(call, text):
        seen.append(call)
        return text

    rewrite.rewrite("anthropic", body, shrink, shims_on=False)
    (call,) = [c for c in seen if c.tool == "Grep"]
    assert call.command == "rg -n -C 4 'charge\\(' shop"
    assert call.prompt == "checkout double-bills: look at `apply_discount`"
    assert call.edits == ("/w/shop/cart.py\ndef cart_total():",)
