"""Read-stub bookkeeping: scoped stubs, deltas, purge, hashes only, atomic writes."""

from __future__ import annotations

import json

from capsule.ground.tokens import count
from capsule.store.stubs import MAX_CHANGED_LINES, StubStore

TEXT = "".join(f"line {i} of the file with some words\n" for i in range(1, 201))


def test_first_read_is_full_second_is_stub_within_20_tokens(state_dir):
    s = StubStore()
    assert s.decide("conv:a", "src/app.py", "full", TEXT).kind == "full"
    d = s.decide("conv:a", "src/app.py", "full", TEXT)
    assert d.kind == "stub" and count(d.text) <= 20 and "src/app.py" in d.text


def test_long_path_stub_still_within_20_tokens(state_dir):
    s = StubStore()
    path = "very/deeply/nested/directory/structure/with/many/levels/and_long_names/module_file.py"
    s.decide("conv:a", path, "full", TEXT)
    d = s.decide("conv:a", path, "full", TEXT)
    assert d.kind == "stub" and count(d.text) <= 20


def test_peer_failure_1_no_stub_across_scopes(state_dir):
    s = StubStore()
    s.decide("conv:a", "src/app.py", "full", TEXT)
    other = s.decide("task:sub1", "src/app.py", "full", TEXT)
    assert other.kind == "full" and other.text == TEXT
    assert s.decide("conv:b", "src/app.py", "full", TEXT).kind == "full"


def test_peer_failure_2_no_stub_to_scope_that_never_got_content(state_dir):
    s = StubStore()
    # The scope read another mode (signatures) and another file: neither is the full content.
    s.decide("conv:a", "src/app.py", "signatures", "def f(): ...")
    s.decide("conv:a", "src/other.py", "full", TEXT)
    d = s.decide("conv:a", "src/app.py", "full", TEXT)
    assert d.kind == "full" and d.text == TEXT


def test_purge_forgets_a_scope_only(state_dir):
    s = StubStore()
    s.decide("conv:a", "f.txt", "full", TEXT)
    s.decide("task:t", "f.txt", "full", TEXT)
    assert s.purge("conv:a") == 1
    assert s.decide("conv:a", "f.txt", "full", TEXT).kind == "full"
    assert s.decide("task:t", "f.txt", "full", TEXT).kind == "stub"


def test_changed_file_gets_delta_against_what_the_scope_saw(state_dir):
    s = StubStore()
    s.decide("conv:a", "f.txt", "full", TEXT)
    changed = TEXT.replace("line 50 of", "LINE FIFTY of").replace("line 120 of the file with some words\n", "")
    d = s.decide("conv:a", "f.txt", "full", changed)
    assert d.kind == "delta"
    assert "50| LINE FIFTY of the file with some words" in d.text
    assert "old line 120 removed" in d.text
    assert "line 10 of" not in d.text
    # The scope now holds the changed version: the next read is a stub.
    assert s.decide("conv:a", "f.txt", "full", changed).kind == "stub"


def test_delta_is_against_each_scopes_own_version(state_dir):
    s = StubStore()
    v2 = TEXT.replace("line 3 of", "line three of")
    s.decide("conv:a", "f.txt", "full", TEXT)
    s.decide("task:t", "f.txt", "full", v2)
    v3 = v2.replace("line 7 of", "line seven of")
    a = s.decide("conv:a", "f.txt", "full", v3)
    t = s.decide("task:t", "f.txt", "full", v3)
    assert "3| line three" in a.text and "7| line seven" in a.text
    assert "3| line three" not in t.text and "7| line seven" in t.text


def test_past_120_changed_lines_full_text_again(state_dir):
    s = StubStore()
    s.decide("conv:a", "f.txt", "full", TEXT)
    rewritten = "".join(f"new {i}\n" for i in range(MAX_CHANGED_LINES + 30))
    d = s.decide("conv:a", "f.txt", "full", rewritten)
    assert d.kind == "full" and d.text == rewritten


def test_fresh_resends_full(state_dir):
    s = StubStore()
    s.decide("conv:a", "f.txt", "full", TEXT)
    assert s.decide("conv:a", "f.txt", "full", TEXT, fresh=True).kind == "full"


def test_bookkeeping_holds_hashes_not_content_and_is_valid_json(state_dir):
    s = StubStore()
    secret = "the secret sauce is 42\n" * 3
    s.decide("conv:a", "f.txt", "full", secret)
    raw = s.path.read_text()
    assert "secret sauce" not in raw
    json.loads(raw)
    assert not list(s.path.parent.glob(".stubs.json.*.tmp"))


def test_corrupt_bookkeeping_means_full_resend_not_a_stub(state_dir):
    s = StubStore()
    s.decide("conv:a", "f.txt", "full", TEXT)
    s.path.write_text("{not json")
    assert s.decide("conv:a", "f.txt", "full", TEXT).kind == "full"


def test_huge_file_keeps_no_line_hashes_and_changes_resend_full(state_dir, monkeypatch):
    from capsule.store import stubs

    monkeypatch.setattr(stubs, "MAX_HASHED_LINES", 100)
    s = StubStore()
    s.decide("conv:a", "big.txt", "full", TEXT)                    # 200 lines > 100
    assert s.decide("conv:a", "big.txt", "full", TEXT).kind == "stub"
    changed = TEXT.replace("line 5 of", "line five of")
    assert s.decide("conv:a", "big.txt", "full", changed).kind == "full"
