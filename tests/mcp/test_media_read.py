"""ctx_read of an image or a PDF through the real MCP server (official SDK client over stdio)."""

from __future__ import annotations

import base64
import io

from PIL import Image

from capsule.measure.ledger import Ledger
from tests.mcp.conftest import Session, text_of
from tests.observe.media import fixtures as fx


def _media_ws(workspace, with_source=False):
    (workspace / "shots").mkdir()
    (workspace / "shots" / "photo.jpg").write_bytes(fx.photo(size=(2400, 1600)))
    (workspace / "shots" / "small.png").write_bytes(fx.screenshot(fx.code_lines(5), size=(800, 400), font_px=14))
    (workspace / "docs").mkdir()
    (workspace / "docs" / "spec.pdf").write_bytes(fx.born_digital_pdf(4))
    return workspace


def test_ctx_read_sizes_an_image_and_turns_a_pdf_into_text(workspace, state_dir):
    ws = _media_ws(workspace)
    photo, small, spec = Session(ws, state_dir).run([
        ("ctx_read", {"path": "shots/photo.jpg"}), ("ctx_read", {"path": "shots/small.png"}),
        ("ctx_read", {"path": "docs/spec.pdf"})])
    assert not photo.is_error and [c.type for c in photo.content] == ["image"]
    img = Image.open(io.BytesIO(base64.b64decode(photo.content[0].data)))
    assert photo.content[0].mime_type == "image/jpeg" and max(img.size) <= 1568
    assert img.size[0] * img.size[1] <= 1_150_000
    assert base64.b64decode(small.content[0].data) == (ws / "shots" / "small.png").read_bytes()  # under the cap
    text = text_of(spec)
    assert text.startswith("[PDF docs/spec.pdf: 4 pages; 4 as their text below]")
    assert "--- page 4 of 4 ---" in text and "<<ccr:" in text
    rows = {r["transform"]: r for r in Ledger().rows() if r["family"] == "media"}
    assert set(rows) == {"media:image:resized", "media:image:unchanged", "media:pdf:text"}
    assert rows["media:pdf:text"]["emitted_tokens"] < 0.35 * rows["media:pdf:text"]["raw_tokens"]
    assert rows["media:pdf:text"]["command"] == "ctx_read:pdf docs/spec.pdf"


def test_measure_mode_sends_the_image_as_it_is_and_counts(workspace, state_dir):
    ws = _media_ws(workspace)
    (photo,) = Session(ws, state_dir, {"JACKIN_CTX_MODE": "measure"}).run([("ctx_read", {"path": "shots/photo.jpg"})])
    assert base64.b64decode(photo.content[0].data) == (ws / "shots" / "photo.jpg").read_bytes()
    (row,) = [r for r in Ledger().rows() if r["family"] == "media"]
    assert not row["applied"] and row["would_emit_tokens"] <= row["raw_tokens"]
