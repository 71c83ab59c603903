"""Hostile workspaces against ctx_read: links swapped in after the check, FIFOs, devices.

Issue 11, Security: the read door must never return bytes from outside the workspace and never
hang on a file that is not a regular file.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from capsule.retrieve import packer, workspace
from capsule.retrieve.index import Hit
from capsule.retrieve.reader import Reader, ReadError

SECRET = "root:x:0:0:secret-outside-the-workspace\n"


@pytest.fixture
def layout(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "race.txt").write_text(SECRET)
    (ws / "race.txt").write_text("inside\n")
    (ws / "sub").mkdir()
    (ws / "sub" / "race.txt").write_text("inside sub\n")
    return ws, outside


def _swap_after_resolve(monkeypatch, swap):
    """Run `swap()` in the window between the path check and the open: the race, made certain."""
    real_resolve = workspace.resolve

    def resolve_then_swap(root, path):
        real = real_resolve(root, path)
        swap()
        return real

    monkeypatch.setattr(workspace, "resolve", resolve_then_swap)


def test_a_file_swapped_for_a_link_after_the_check_is_not_followed(layout, monkeypatch):
    ws, outside = layout

    def swap():
        os.unlink(ws / "race.txt")
        os.symlink(outside / "race.txt", ws / "race.txt")

    _swap_after_resolve(monkeypatch, swap)
    with pytest.raises(ReadError) as err:
        Reader(ws).read("race.txt", "full", fresh=True)
    assert "secret" not in str(err.value)


def test_a_directory_swapped_for_a_link_after_the_check_is_not_followed(layout, monkeypatch):
    ws, outside = layout

    def swap():
        os.rename(ws / "sub", ws / "sub.old")
        os.symlink(outside, ws / "sub")

    _swap_after_resolve(monkeypatch, swap)
    with pytest.raises(ReadError):
        Reader(ws).read("sub/race.txt", "full", fresh=True)


def test_search_snippets_never_read_through_a_swapped_link(layout, monkeypatch):
    ws, outside = layout

    def swap():
        os.unlink(ws / "race.txt")
        os.symlink(outside / "race.txt", ws / "race.txt")

    _swap_after_resolve(monkeypatch, swap)
    out = packer.pack(ws, [Hit("race.txt", 1.0)], "root secret")
    assert "secret" not in out


def test_a_flipping_link_never_leaks_in_a_bounded_loop(layout):
    """The probe as filed: a thread flips the name between a file and a link while reads run."""
    ws, outside = layout
    stop = threading.Event()

    def flip():
        while not stop.is_set():
            tmp = ws / "flip.tmp"
            try:
                os.symlink(outside / "race.txt", tmp)
                os.replace(tmp, ws / "race.txt")
                (ws / "plain.tmp").write_text("inside\n")
                os.replace(ws / "plain.tmp", ws / "race.txt")
            except OSError:
                pass

    t = threading.Thread(target=flip, daemon=True)
    t.start()
    reader = Reader(ws)
    leaked = reads = 0
    deadline = time.monotonic() + 1.5
    try:
        while time.monotonic() < deadline:
            try:
                text = reader.read("race.txt", "full", fresh=True)
            except ReadError:
                continue
            reads += 1
            leaked += "secret" in text
    finally:
        stop.set()
        t.join(5)
    assert leaked == 0, f"{leaked} of {reads} reads returned a file outside the workspace"
    assert reads > 0


def _read_in_thread(fn):
    box: dict = {}

    def run():
        try:
            box["value"] = fn()
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(5)
    return t, box


def test_a_fifo_is_refused_at_once(layout):
    ws, _ = layout
    os.mkfifo(ws / "p")
    t, box = _read_in_thread(lambda: Reader(ws).read("p", "full"))
    if t.is_alive():  # unblock the old behaviour so the test run itself does not hang
        with open(ws / "p", "wb"):
            pass
        t.join(5)
        pytest.fail("ctx_read on a FIFO did not answer within 5 s")
    assert isinstance(box.get("error"), ReadError)
    assert "not a regular file" in str(box["error"])


def test_a_link_to_a_device_inside_the_workspace_is_refused(layout):
    ws, _ = layout
    os.symlink("/dev/zero", ws / "zero")
    t, box = _read_in_thread(lambda: Reader(ws).read("zero", "full"))
    assert not t.is_alive()
    assert isinstance(box.get("error"), ReadError)   # outside the workspace, never opened


def test_the_index_build_never_follows_a_swapped_link_nor_waits_on_a_fifo(layout, state_dir, monkeypatch):
    """Between listing and reading, a file becomes a link out of the workspace, another a FIFO."""
    from capsule.retrieve.index import WorkspaceIndex

    ws, outside = layout
    (ws / "later_fifo.txt").write_text("plain for now\n")
    real_list = workspace.list_files

    def list_then_swap(root):
        files = real_list(root)
        os.unlink(ws / "race.txt")
        os.symlink(outside / "race.txt", ws / "race.txt")
        os.unlink(ws / "later_fifo.txt")
        os.mkfifo(ws / "later_fifo.txt")
        return files

    monkeypatch.setattr(workspace, "list_files", list_then_swap)
    index = WorkspaceIndex(ws)
    t, box = _read_in_thread(index.refresh)
    if t.is_alive():
        with open(ws / "later_fifo.txt", "wb"):
            pass
        t.join(5)
        pytest.fail("the index build waited on a FIFO")
    assert "error" not in box, box
    assert [h.path for h in index.search("secret outside", 10)] == []


def test_the_real_mcp_door_answers_a_fifo_read_with_an_error_at_once(layout, state_dir):
    """Through `capsule mcp serve` and the official SDK client: an isError answer, then the
    server still serves the next read."""
    import asyncio

    from tests.mcp.conftest import Session, text_of

    ws, _ = layout
    os.mkfifo(ws / "p")
    session = Session(ws, state_dir)

    async def bounded():
        return await asyncio.wait_for(session._run([("ctx_read", {"path": "p", "mode": "full"}),
                                                    ("ctx_read", {"path": "race.txt", "mode": "full"})]), 60)

    try:
        fifo, plain = asyncio.run(bounded())
    except (asyncio.TimeoutError, TimeoutError):
        pytest.fail("ctx_read on a FIFO did not answer")
    assert fifo.is_error and "not a regular file" in text_of(fifo)
    assert not plain.is_error and text_of(plain) == "inside\n"
