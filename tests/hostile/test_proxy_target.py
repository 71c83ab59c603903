"""The proxy forwards only to its configured upstream (issue 24): request targets that are not an
origin-form path (`@host:port/...`, `%40host`, `:PORT/...`, the same under /openai, absolute and
authority forms) get a 400 in the API's own error shape, and a second local server, the would-be
victim, receives nothing: no request, no API key."""

from __future__ import annotations

import json
import socket

import pytest

from capsule.proxy.app import Settings
from capsule.proxy.proxy_server import ProxyServer
from tests.fakes.http import Canned

KEY = "sk-ant-test-SECRET-0123456789"


def Recorder() -> Canned:  # noqa: N802
    """A local HTTP server that records every request it gets and answers 200 {}."""
    return Canned(200, [("content-type", "application/json")], [b"{}"])


@pytest.fixture
def servers(state_dir):
    upstream, victim = Recorder(), Recorder()
    # The upstream's URL has no port of its own for the `:PORT` trick: "http://localhost" -> port 80,
    # nothing listens there; a target that changes the port would reach the victim.
    proxy = ProxyServer(Settings(state_dir=state_dir, anthropic_upstream=upstream.url,
                                 openai_upstream=upstream.url + "/v1")).start()
    portless = ProxyServer(Settings(state_dir=state_dir, anthropic_upstream="http://127.0.0.1",
                                    openai_upstream="http://127.0.0.1")).start()
    yield proxy, portless, upstream, victim
    for p in (proxy, portless):
        p.stop()
    upstream.close()
    victim.close()


def _raw(port: int, target: str, body: bytes = b'{"model":"m","messages":[]}') -> tuple[int, bytes]:
    """Send one request with `target` verbatim on the request line; returns (status, body)."""
    head = (f"POST {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nx-api-key: {KEY}\r\n"
            f"authorization: Bearer {KEY}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", port), timeout=15) as s:
        s.sendall(head + body)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    status_line, _, rest = data.partition(b"\r\n")
    _, _, payload = rest.partition(b"\r\n\r\n")
    return int(status_line.split()[1]), payload


def _targets(victim_port: int) -> list[str]:
    v = f"127.0.0.1:{victim_port}"
    return [f"@{v}/v1/messages", f"%40{v}/v1/messages", f"/@{v}/v1/messages"[1:],
            f"//{v}/v1/messages", f"http://{v}/v1/messages", v,
            f"/openai@{v}/responses", f"/openai%40{v}/responses", f"/openai/../@{v}/responses",
            f":{victim_port}/v1/messages", f"/openai:{victim_port}/responses", "*", "v1/messages"]


def test_no_request_target_reaches_a_server_other_than_the_upstream(servers):
    proxy, portless, upstream, victim = servers
    statuses = {}
    for port in (proxy.port, portless.port):
        for target in _targets(victim.port):
            status, payload = _raw(port, target)
            statuses[(port, target)] = status
            if status == 400:
                err = json.loads(payload)
                assert "error" in err and "message" in err["error"], payload
                if "/openai" not in target:
                    assert err["type"] == "error" and err["error"]["type"] == "invalid_request_error"
    assert victim.seen == [], (victim.seen, statuses)
    for _, path, headers, _ in upstream.seen:      # whatever did go upstream went there as a path
        assert path.startswith("/"), path
    # The non-path forms are refused by the proxy itself, in the API's shape (not a 502 upstream error).
    for (port, target), status in statuses.items():
        if not target.startswith("/") or target.startswith("//"):
            assert status == 400, (target, status)


def test_an_origin_form_path_still_goes_upstream_with_its_query(servers):
    proxy, _, upstream, victim = servers
    status, _ = _raw(proxy.port, "/v1/messages?beta=true")
    assert status == 200
    status, _ = _raw(proxy.port, "/openai/responses")
    assert status == 200
    assert [p for _, p, _, _ in upstream.seen] == ["/v1/messages?beta=true", "/v1/responses"]
    assert victim.seen == []
