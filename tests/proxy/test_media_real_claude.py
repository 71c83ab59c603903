"""The media path with the real Claude Code through capsule's proxy, against a recording fake Messages
API: a Read of a 3840x2160 PNG screenshot of code, of a photo and of a 20-page born-digital PDF reach
the model within the family's cap (tokens by the formula), with identical bytes on the next calls of
the conversation; the PDF as text. Claude Code 2.1.197 reads a PDF over 10 pages only with `pages`, and
then sends one JPEG per page beside the tool_result; a short PDF goes as a document block: both become
the pages' text. scripts/setup-clients.sh installs the client (never a skip)."""

from __future__ import annotations

import base64
import io
import json

from PIL import Image

from capsule.measure.ledger import Ledger
from capsule.observe.media import caps
from recording import ScriptedMessages
from test_proxy_real_clients import _run_claude
from tests.observe.media import fixtures as fx


def _media_blocks(body: dict) -> list[tuple[int, dict]]:
    """(message index, block) of every image/document block and tool_result image, in order."""
    out = []
    for i, m in enumerate(body["messages"]):
        for b in m["content"] if isinstance(m.get("content"), list) else []:
            if b.get("type") in ("image", "document"):
                out.append((i, b))
            if b.get("type") == "tool_result" and isinstance(b.get("content"), list):
                out += [(i, c) for c in b["content"] if c.get("type") in ("image", "document")]
    return out


def _texts(body: dict) -> str:
    out = []
    for m in body["messages"]:
        for b in m["content"] if isinstance(m.get("content"), list) else []:
            if b.get("type") == "text":
                out.append(b["text"])
            if b.get("type") == "tool_result" and isinstance(b.get("content"), list):
                out += [c.get("text", "") for c in b["content"] if c.get("type") == "text"]
    return "\n".join(out)


def test_claude_code_reads_a_screenshot_a_photo_and_a_pdf_through_the_proxy(tmp_path, state_dir, proxy_for):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "screen.png").write_bytes(fx.screenshot(fx.code_lines()))
    (ws / "photo.jpg").write_bytes(fx.photo())
    (ws / "spec.pdf").write_bytes(fx.born_digital_pdf(20))
    (ws / "short.pdf").write_bytes(fx.born_digital_pdf(5))     # short enough to go as a document block
    fake = ScriptedMessages([("Read", {"file_path": str(ws / "screen.png")}),
                             ("Read", {"file_path": str(ws / "photo.jpg")}),
                             ("Read", {"file_path": str(ws / "spec.pdf"), "pages": "1-20"}),
                             ("Read", {"file_path": str(ws / "short.pdf")})])
    try:
        proxy = proxy_for(anthropic=fake.url, workspace=ws)
        out = _run_claude(ws, tmp_path, proxy.url, "look at these files", "--model", "claude-sonnet-4-5")
        assert out["result"] == fake.final
        bodies = [json.loads(b) for b in fake.conversation()]
        assert len(bodies) == 5
        fam = caps.family_for(bodies[-1]["model"])
        last = bodies[-1]
        images = [b for _, b in _media_blocks(last) if b["type"] == "image"]
        assert len(images) == 2, [b["type"] for _, b in _media_blocks(last)]
        for b in images:
            img = Image.open(io.BytesIO(base64.b64decode(b["source"]["data"])))
            assert caps.target(fam, *img.size) == img.size          # within the family's cap
            assert max(img.size) <= fam.cap["long_edge"] and img.size[0] * img.size[1] <= fam.cap["max_pixels"]
        assert not [b for _, b in _media_blocks(last) if b["type"] == "document"]   # the PDF went as text
        w, h = Image.open(io.BytesIO(base64.b64decode(images[0]["source"]["data"]))).size
        # Claude Code's note beside a resized image now names the size the model sees
        assert f"[Image: original 3840x2160, displayed at {w}x{h}. Multiply coordinates by {3840 / w:.2f}" \
            in _texts(last)
        assert "displayed at 2000x1125" not in _texts(last)
        text = _texts(last)
        assert "[PDF" in text and "--- page 20 of 20 ---" in text and "Section 20: proxy notes" in text
        assert f"[PDF {ws / 'short.pdf'}: 5 pages; 5 as their text below]" in text
        # Each media block is sent with the same bytes on every later call of the conversation.
        for n, body in enumerate(bodies[1:-1], 1):
            seen = [json.dumps(b, sort_keys=True) for _, b in _media_blocks(body)]
            later = [json.dumps(b, sort_keys=True) for _, b in _media_blocks(bodies[n + 1])]
            assert later[:len(seen)] == seen
        rows = [r for r in Ledger(state_dir / "ledger.db").rows() if r["family"] == "media"]
        kinds = sorted(r["transform"] for r in rows)
        assert kinds == ["media:image:resized", "media:image:resized", "media:pdf:text", "media:pdf:text"], kinds
        for pdf_row in (r for r in rows if r["stream"] == "pdf"):      # once each, both <= 35%
            assert pdf_row["emitted_tokens"] <= 0.35 * pdf_row["raw_tokens"], pdf_row
    finally:
        fake.close()
