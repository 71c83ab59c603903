"""Fixtures for the proxy door: scripted recording fake upstreams and a running proxy in front of them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from recording import ScriptedMessages  # noqa: E402

from capsule.proxy.app import Settings  # noqa: E402
from capsule.proxy.proxy_server import ProxyServer  # noqa: E402

@pytest.fixture
def scripted():
    fakes = []

    def make(calls, **kw):
        fake = ScriptedMessages(calls, **kw)
        fakes.append(fake)
        return fake

    yield make
    for f in fakes:
        f.close()


@pytest.fixture
def proxy_for(state_dir):
    servers = []

    def start(anthropic: str = "http://127.0.0.1:9", openai: str = "http://127.0.0.1:9/v1", **kw):
        server = ProxyServer(Settings(state_dir=state_dir, anthropic_upstream=anthropic, openai_upstream=openai,
                                      **kw)).start()
        servers.append(server)
        return server

    yield start
    for s in servers:
        s.stop()


@pytest.fixture(scope="session")
def code_png_small_pdf():
    """A 4K screenshot of code (Pillow) and a 3-page born-digital PDF (reportlab), made once."""
    from tests.observe.media import fixtures as fx

    return fx.screenshot(fx.code_lines()), fx.born_digital_pdf(3)
