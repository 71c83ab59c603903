"""ctx_search through the real read door (official MCP SDK client): the user's last prompt, as Claude
Code's hook recorded it for the session, pulls the file it names ahead of the plain query's ranking
(issue 29.3), as it does for ctx_read."""

from __future__ import annotations

import json
import time

from capsule.agents import session as sessions
from tests.mcp.conftest import Session, text_of
from tests.retrieve.test_search_by_task import files, make_shop


def test_the_prompt_the_hook_kept_pulls_the_named_file_first(tmp_path, state_dir):
    ws = make_shop(tmp_path / "shop")
    d = sessions.intents_dir(state_dir)
    d.mkdir(parents=True)
    (d / "c-1.jsonl").write_text(json.dumps({"kind": "prompt", "t": time.time(),
                                             "prompt": "the total after `apply_discount` is off for 15%"}) + "\n")
    call = [("ctx_search", {"query": "discount total", "k": 3})]
    (plain,) = Session(ws, state_dir).run(call)
    (cued,) = Session(ws, state_dir, {"CLAUDE_CODE_SESSION_ID": "c-1"}).run(call)
    assert not cued.is_error and files(text_of(plain).split("\n"))[0].startswith("promo/")
    rows = text_of(cued).split("\n")
    assert files(rows)[0] == "shop/pricing.py" and "shop/pricing.py:8:def apply_discount(total, rate):" in rows
    assert "more files matched; ctx_search with a larger k" in rows[-1]
