"""Bounded media (issue 31): one memory and time budget per decode across the process. An image whose
decoded pixels (not its file size) would not fit the process's pool is refused before Pillow decodes
it (a JPEG is decoded at a DCT scale that fits); concurrent decodes share the pool; a worker past its
request's deadline stops waiting; one PDF has one overall time budget (poppler killed at it); a text
ctx_read beside a slow PDF is not held behind a door lock; refused PDFs say why."""

from __future__ import annotations

import io
import threading
import time

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from tests.hostile import hostile_media as hm

from capsule.observe.media import media_budget, caps, image
from capsule.observe.media.image import MediaError

FAM = caps.family_for("claude-sonnet-4-5", "anthropic")
MB = 1 << 20


@pytest.fixture
def pool(monkeypatch):
    """A small process pool (so small images stand for huge ones) and a short PDF budget."""
    monkeypatch.setattr(media_budget, "capacity", lambda: 40 * MB)
    monkeypatch.setitem(media_budget.settings(), "pdf_budget_s", 2.0)
    media_budget.reset_peak()
    return 40 * MB


def test_an_image_over_the_budget_is_refused_by_its_decoded_size(pool):
    small_file = hm.png(4000, 4000)               # ~60 KB on disk, 64 MB decoded
    assert len(small_file) < 200_000
    with pytest.raises(MediaError, match="media budget"):
        image.fit(small_file, FAM)
    assert media_budget.in_use() == (0, 0)              # nothing was reserved, so nothing was decoded


def test_a_big_jpeg_is_decoded_at_a_scale_that_fits(pool):
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (3600, 3600), (30, 120, 200)).save(buf, "JPEG", quality=80)
    assert image.decode_cost(Image.open(io.BytesIO(buf.getvalue())), 1568, 1568) > pool
    sized = image.fit(buf.getvalue(), FAM)
    assert sized.changed and max(sized.after) == max(caps.target(FAM, 3600, 3600))
    assert 0 < media_budget.in_use()[1] <= pool


def test_concurrent_decodes_share_one_pool(pool):
    images = [hm.png(1800, 1800, seed=i) for i in range(6)]     # ~24 MB each at their peak: one at a time
    errors, done = [], []

    def work(data):
        try:
            done.append(image.fit(data, FAM).after)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(d,)) for d in images]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and len(done) == 6, errors
    used, peak = media_budget.in_use()
    assert used == 0 and 0 < peak <= pool


def test_a_worker_past_its_deadline_stops_waiting(pool):
    data = hm.png(1800, 1800, seed=9)
    got = []

    def abandoned():
        with media_budget.deadline(0.3):
            t0 = time.monotonic()
            try:
                image.fit(data, FAM)
                got.append(("decoded", time.monotonic() - t0))
            except MediaError as exc:
                got.append((str(exc), time.monotonic() - t0))

    with media_budget.decoding(pool, "another request's image"):     # the pool is full
        t = threading.Thread(target=abandoned)
        t.start()
        t.join(10)
    (why, took), = got
    assert "deadline" in why and took < 5, got
    with media_budget.deadline(0.0), pytest.raises(MediaError, match="time budget"):
        image.fit(data, FAM)


@pytest.fixture
def door(tmp_path, state_dir, monkeypatch):
    from capsule.mcp.mcp_server import ReadDoor

    monkeypatch.delenv("JACKIN_CTX_ROLE", raising=False)
    root = tmp_path / "ws"
    root.mkdir()
    (root / "small.txt").write_text("one\ntwo\nthree\n")
    (root / "scan.pdf").write_bytes(hm.scan_bomb())
    (root / "long.pdf").write_bytes(hm.many_pages())
    (root / "cyclic.pdf").write_bytes(hm.cyclic_tree())
    (root / "locked.pdf").write_bytes(hm.encrypted())
    return ReadDoor(root, scope="t", role_mode="standard")


def test_one_pdf_has_one_time_budget_and_a_text_read_beside_it_is_not_held(door, pool):
    assert "three" in door.read("small.txt")       # warm: the first read pays for the index
    slow: list = []

    def read_scan():
        t0 = time.monotonic()
        try:
            door.read("scan.pdf")
            slow.append(("served", time.monotonic() - t0))
        except ToolError as exc:
            slow.append((str(exc), time.monotonic() - t0))

    t = threading.Thread(target=read_scan)
    t.start()
    time.sleep(0.5)                                  # the scan is rendering by now
    t0 = time.monotonic()
    assert "three" in door.read("small.txt", fresh=True)
    beside = time.monotonic() - t0
    t.join(60)
    (why, took), = slow
    assert beside < 1.0, f"a 3-line read waited {beside:.2f} s beside a slow PDF"
    assert "time budget" in why and took < 2.0 + 4.0, slow     # the 2 s budget, and a loaded machine's slack


@pytest.mark.parametrize("name,reason", [("long.pdf", "600-page"), ("cyclic.pdf", "cyclic"),
                                         ("locked.pdf", "encrypted")])
def test_a_refused_pdf_says_why(door, name, reason):
    with pytest.raises(ToolError) as err:
        door.read(name)
    assert reason in str(err.value) and "serves its text only when" not in str(err.value), str(err.value)


def test_the_proxys_abandoned_worker_stops_instead_of_decoding_later(pool, state_dir):
    """The engine budget abandons the wait; the worker's own deadline (the same budget) ends its wait
    for the pool, so it never decodes after the request was answered (the second wave's memory)."""
    import base64
    import json

    import httpx2

    from tests.fakes.http import Canned

    from capsule.proxy.app import Settings
    from capsule.proxy.proxy_server import ProxyServer

    up = Canned(200, [("content-type", "application/json")],
                [b'{"type":"message","content":[],"usage":{"input_tokens":1,"output_tokens":1}}'])
    server = ProxyServer(Settings(state_dir=state_dir, anthropic_upstream=up.url, engine_budget_ms=500)).start()
    png = hm.png(1800, 1800, seed=77)
    body = {"model": "claude-sonnet-4-5", "max_tokens": 5, "metadata": {"user_id": json.dumps({"session_id": "w"})},
            "messages": [{"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                             "data": base64.b64encode(png).decode()}},
                {"type": "text", "text": "look"}]}]}
    try:
        with media_budget.decoding(pool, "another request's image"):       # the pool is full
            t0 = time.monotonic()
            r = httpx2.post(server.url + "/v1/messages", content=json.dumps(body).encode(), timeout=60,
                            headers={"x-api-key": "k", "content-type": "application/json"})
            answered = time.monotonic() - t0
        media_budget.reset_peak()
        assert r.status_code == 200 and answered < 5, answered
        sent = json.loads(up.seen[0][3])["messages"][0]["content"][0]["source"]["data"]
        assert base64.b64decode(sent) == png                          # over budget: sent as it came
        time.sleep(1.0)                                               # room now: a live worker would decode
        assert media_budget.in_use() == (0, 0), media_budget.in_use()             # nobody reserved after the release
    finally:
        server.stop()
        up.close()
