"""The control socket's threads (supervisor/accept_pool.py) with a real server and real clients:
past MAX_WAITING silent connections the oldest are closed and the rest are still served; a request
that drips in gets one deadline for all of it; the threads that a burst started end after it."""

from __future__ import annotations

import socket
import threading
import time

from capsule.supervisor import accept_pool, control_server
from capsule.supervisor.control_server import request


def _silent(sock) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(str(sock))
    return s


def test_past_max_waiting_the_oldest_silent_connections_are_shed(tmp_path, monkeypatch, serving):
    monkeypatch.setattr(control_server, "MAX_WAITING", 4)
    sock = tmp_path / "e.sock"

    def body(server):
        held = []
        for _ in range(6):
            held.append(_silent(sock))
            time.sleep(0.1)          # accepted in this order: the first ones are the oldest
        ends = []
        for s in held:
            s.settimeout(0.3)
            try:
                ends.append(s.recv(10))   # b"": closed by the server, without a reply
            except TimeoutError:
                ends.append(None)         # still open, waiting for its request
        pong = request(sock, b"PING\n", 5)
        for s in held:
            s.close()
        return ends, pong, server.shed

    ends, pong, shed = serving(sock, body)
    assert ends == [b"", b"", None, None, None, None], ends   # the 5th and 6th each shed the oldest
    assert pong.startswith(b"PONG") and shed == 3       # and the PING one more: still answered


def test_a_request_that_drips_in_gets_one_deadline_for_all_of_it(tmp_path, monkeypatch, serving):
    monkeypatch.setattr(control_server, "READ_TIMEOUT_S", 1.0)
    sock = tmp_path / "e.sock"

    def body(server):
        s = _silent(sock)
        start = time.monotonic()
        reply = b""
        for byte in b"OBS1 0 1000 4 100 0 0\n":    # a byte every 0.2 s: each recv well inside 1 s
            try:
                s.sendall(bytes([byte]))
            except OSError:
                break
            s.settimeout(0.2)
            try:
                reply = s.recv(100)
                break
            except TimeoutError:
                continue
        took = time.monotonic() - start
        s.close()
        return reply, took, server.failed

    reply, took, failed = serving(sock, body)
    assert reply == b"RAW\n" and failed == 1
    assert 0.9 < took < 2.5, took                   # cut at the request's 1 s, not per byte


def test_the_threads_a_burst_started_end_after_it(tmp_path, serving):
    sock = tmp_path / "e.sock"

    def pool_threads() -> int:
        return sum(t.name == "capsule-door" for t in threading.enumerate())

    def body(server):
        time.sleep(0.2)
        before = pool_threads()
        held = [_silent(sock) for _ in range(12)]   # 12 connections being read at once
        time.sleep(0.5)
        during = pool_threads()
        for s in held:
            s.close()
        time.sleep(0.5)
        names = {t.ident for t in threading.enumerate() if t.name == "capsule-door"}
        pongs = [request(sock, b"PING\n", 5) for _ in range(20)]   # one after another: no new thread
        same = names == {t.ident for t in threading.enumerate() if t.name == "capsule-door"}
        return before, during, pool_threads(), pongs, same

    before, during, after, pongs, same = serving(sock, body)
    assert before == accept_pool.POOL                    # waiting in accept() before any load
    assert during >= 13                                  # one per connection, and one more in accept()
    assert after == accept_pool.POOL, after              # the burst's threads ended, the pool's live on
    assert all(p.startswith(b"PONG") for p in pongs) and same    # served by the same threads
