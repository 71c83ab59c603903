"""The workspace index under kills and concurrent processes (issue 11, Clean failure).

A refresh killed between tantivy's commit and the signature update must not double documents;
an index another process builds must be seen by one that was opened before the build finished.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from capsule.retrieve import frecency
from capsule.retrieve.index import WorkspaceIndex

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"]
FILES = len(WORDS)
REFRESH = ("import sys\nfrom capsule.retrieve.index import WorkspaceIndex\n"
           "WorkspaceIndex(sys.argv[1]).refresh()\nprint('built', flush=True)\n")


@pytest.fixture
def ws(tmp_path, state_dir):
    root = tmp_path / "ws"
    root.mkdir()
    for i in range(FILES):
        (root / f"mod_{i}.py").write_text(f"def {WORDS[i]}(row):\n    return row['total']\n")
    return root


def _hits(index, word):
    return [h.path for h in index.search(word, 10)]


def _assert_each_file_once(index):
    assert index.num_docs() == FILES
    for i in range(FILES):
        assert _hits(index, WORDS[i]) == [f"mod_{i}.py"]


def test_a_refresh_killed_after_its_commit_doubles_nothing(ws, monkeypatch):
    def killed(self, put, delete):   # the process dies right after tantivy committed
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(frecency.Meta, "update_signatures", killed)
        with pytest.raises(KeyboardInterrupt):
            WorkspaceIndex(ws).refresh()
    index = WorkspaceIndex(ws)
    index.refresh()
    _assert_each_file_once(index)
    index.refresh()
    _assert_each_file_once(index)


def test_an_index_already_doubled_heals_on_open(ws):
    index = WorkspaceIndex(ws)
    index.refresh()
    writer = index.index.writer(15_000_000, 1)      # what a killed older build left behind
    import tantivy

    for i in range(FILES):
        writer.add_document(tantivy.Document(path=f"mod_{i}.py", path_t=f"mod {i} py", content=WORDS[i]))
    writer.commit()
    writer.wait_merging_threads()
    assert index.num_docs() == 2 * FILES
    healed = WorkspaceIndex(ws)
    healed.refresh()
    _assert_each_file_once(healed)


def test_short_lived_builders_killed_at_random_points_leave_a_clean_index(ws, state_dir):
    env = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir)}
    for delay in (0.3, 0.5, 0.7, 0.9, 1.2, 1.5):
        child = subprocess.Popen([sys.executable, "-c", REFRESH, str(ws)], env=env, stdout=subprocess.PIPE)
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
        child.wait()
        (ws / "mod_0.py").write_text(f"def alpha(row):\n    return {delay!r}\n")   # something to redo
    index = WorkspaceIndex(ws)
    index.refresh()
    _assert_each_file_once(index)


def test_an_open_index_sees_a_build_another_process_commits(ws, state_dir):
    """The flaky supervisor test, made certain: the agent opens the index before the
    supervisor's build commits, then must see the commit (no reopen, no rebuild of its own)."""
    early = WorkspaceIndex(ws)
    assert early.num_docs() == 0
    env = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir)}
    out = subprocess.run([sys.executable, "-c", REFRESH, str(ws)], env=env, capture_output=True, timeout=60)
    assert out.stdout.strip() == b"built", out.stderr.decode()[-1500:]
    assert early.num_docs() == FILES
    assert _hits(early, "delta") == ["mod_3.py"]


def test_opening_an_index_never_deletes_a_concurrent_build(ws, state_dir):
    """Openers arriving while another process's index is open leave its files alone."""
    builder = WorkspaceIndex(ws)
    builder.refresh()
    env = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir)}
    for _ in range(2):
        subprocess.run([sys.executable, "-c", "import sys\nfrom capsule.retrieve.index import WorkspaceIndex\n"
                        "WorkspaceIndex(sys.argv[1])\n", str(ws)], env=env, check=True, timeout=60)
    assert builder.num_docs() == FILES
    assert _hits(builder, "golf") == ["mod_6.py"]
