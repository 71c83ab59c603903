"""The tantivy index: identifier splitting, .gitignore, incremental refresh, frecency, packer budget."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from capsule.ground.tokens import count
from capsule.retrieve import packer, workspace
from capsule.retrieve.index import WorkspaceIndex, query_terms, split_identifier


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "http_client.py").write_text("class HttpClient:\n    def send_request(self):\n        pass\n")
    (root / "src" / "cache.py").write_text("def getUserName(uid):\n    return lookup(uid)\n")
    (root / "src" / "notes.txt").write_text("nothing relevant here\n")
    (root / "build").mkdir()
    (root / "build" / "out.py").write_text("def getUserName(): pass\n")
    (root / "src" / "gen.log").write_text("getUserName in a log\n")
    (root / ".gitignore").write_text("build/\n*.log\n!keep.log\n")
    (root / "src" / "keep.log").write_text("kept log\n")
    return root


def test_split_identifier():
    assert split_identifier("getHTTPResponse_code") == ["get", "http", "response", "code"]
    assert query_terms("parseJSON") == ["parsejson", "parse", "json"]


def test_walker_honours_gitignore_with_negation(ws):
    files = workspace.list_files(ws)
    assert "build/out.py" not in files and "src/gen.log" not in files
    assert "src/keep.log" in files and "src/cache.py" in files


def test_git_checkout_uses_git_ignore_rules(ws):
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    files = workspace.list_files(ws)
    assert "build/out.py" not in files and "src/keep.log" in files


def test_camel_and_snake_queries_find_their_files(ws, state_dir):
    ix = WorkspaceIndex(ws)
    ix.refresh()
    assert ix.search("user name")[0].path == "src/cache.py"
    assert ix.search("getUserName")[0].path == "src/cache.py"
    assert ix.search("send request")[0].path == "src/http_client.py"
    assert ix.search("http client")[0].path == "src/http_client.py"   # path field
    assert all(h.path != "build/out.py" for h in ix.search("getUserName", 20))


def test_refresh_is_incremental(ws, state_dir):
    ix = WorkspaceIndex(ws)
    first = ix.refresh()
    assert first.indexed == 5
    again = ix.refresh()
    assert again.indexed == 0 and again.unchanged == 5
    os.utime(ws / "src" / "notes.txt", ns=(1, 1))         # touched, same bytes: hash says unchanged
    assert ix.refresh().indexed == 0
    (ws / "src" / "notes.txt").write_text("now mentions frobnicate\n")
    (ws / "src" / "cache.py").unlink()
    r = ix.refresh()
    assert r.indexed == 1 and r.removed == 1
    assert ix.search("frobnicate")[0].path == "src/notes.txt"
    assert not ix.search("getUserName")
    assert ix.stale() == 0


def test_index_reopens_warm_from_disk(ws, state_dir):
    WorkspaceIndex(ws).refresh()
    ix = WorkspaceIndex(ws)
    assert ix.num_docs() == 5 and ix.search("send_request")[0].path == "src/http_client.py"


def test_frecency_boosts_recently_read_files(tmp_path, state_dir):
    root = tmp_path / "w"
    root.mkdir()
    (root / "a.py").write_text("widget = 1\n")
    (root / "b.py").write_text("widget = 2\n")
    ix = WorkspaceIndex(root)
    ix.refresh()
    before = [h.path for h in ix.search("widget")]
    loser = before[-1]
    for _ in range(5):
        ix.meta.touch(loser)
    assert ix.search("widget")[0].path == loser


def test_packer_lines_and_budget(ws, state_dir):
    ix = WorkspaceIndex(ws)
    ix.refresh()
    out = packer.pack(ws, ix.search("send request", 5), "send request", budget=800)
    assert out.splitlines()[0] == "src/http_client.py:2:def send_request(self):"
    many = ix.search("def class pass return", 10)
    tight = packer.pack(ws, many * 10, "def", budget=60)
    assert count(tight) <= 60 and "more files matched" in tight
    assert packer.pack(ws, [], "zzz") == "no matches for 'zzz'"


def test_index_cli_build_and_status(ws, capsule):
    built = capsule("index", "build", str(ws))
    assert built.returncode == 0, built.stderr
    assert b"indexed 5 file(s)" in built.stdout and b"files/s" in built.stdout
    assert b"indexing [##############################] 5/5" in built.stderr      # the progress display
    status = capsule("index", "status", str(ws), "--json")
    assert b'"documents": 5' in status.stdout and b'"stale_files": 0' in status.stdout
    text = capsule("index", "status", str(ws)).stdout.decode()
    assert re.search(r"^last_build: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d", text, re.M), text   # a date, not an epoch


def test_second_handle_sees_the_other_writers_commit_on_refresh(ws, state_dir):
    a = WorkspaceIndex(ws)
    a.refresh()
    b = WorkspaceIndex(ws)                       # e.g. a second agent's server on the same workspace
    (ws / "src" / "late.py").write_text("def zanzibar_route(): pass\n")
    a.refresh()
    assert not b.search("zanzibar")             # b's searcher predates the commit
    b.refresh()                                 # nothing left to index, but b reloads
    assert b.search("zanzibar")[0].path == "src/late.py"


def test_symlinks_out_of_the_workspace_are_never_indexed_or_read(ws, tmp_path, state_dir):
    secret = tmp_path / "secret.txt"
    secret.write_text("platypus password\n")
    (ws / "src" / "link.txt").symlink_to(secret)
    for git in (False, True):
        if git:
            subprocess.run(["git", "init", "-q", str(ws)], check=True)
        assert "src/link.txt" not in workspace.list_files(ws)
    ix = WorkspaceIndex(ws)
    ix.refresh()
    assert not ix.search("platypus")
    from capsule.retrieve.index import Hit
    assert "platypus" not in packer.pack(ws, [Hit("src/link.txt", 1.0)], "platypus")
