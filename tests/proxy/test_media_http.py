"""The proxy door's media path over real HTTP: a pasted image in a user message, an image and a PDF
from a tool call, all sized or turned into text once, byte-identical on the next call, the original
archived and one ledger row each with tokens before/after by formula."""

from __future__ import annotations

import base64
import io
import json

import httpx2
from PIL import Image

from capsule.measure.ledger import Ledger
from capsule.observe.media import caps
from capsule.store.archive import Archive
from recording import Canned
from tests.observe.media import fixtures as fx

OK = [b'{"type":"message","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":1,"output_tokens":1}}']


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _body(shot: bytes, pdf: bytes, session="media-1", model="claude-sonnet-4-5") -> dict:
    return {"model": model, "metadata": {"user_id": json.dumps({"session_id": session})}, "messages": [
        {"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": _b64(shot)}},
            {"type": "text", "text": "what is wrong in this screenshot? and read the spec"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_p", "name": "Read",
                                           "input": {"file_path": "/w/spec.pdf"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_p", "content": "PDF file read: /w/spec.pdf"},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": _b64(pdf)}}]}]}


def _post(url, body):
    return httpx2.post(url + "/v1/messages", content=json.dumps(body).encode(),
                       headers={"x-api-key": "k", "content-type": "application/json"}, timeout=120)


def test_pasted_image_and_pdf_document_reach_the_model_within_the_cap_and_stay_identical(
        state_dir, proxy_for, code_png_small_pdf):
    shot, pdf = code_png_small_pdf
    up = Canned(200, [("content-type", "application/json")], OK)
    proxy = proxy_for(anthropic=up.url)
    assert _post(proxy.url, _body(shot, pdf)).status_code == 200
    assert _post(proxy.url, _body(shot, pdf)).status_code == 200
    first, second = up.seen[0][3], up.seen[1][3]
    assert first == second                                      # the same bytes on the next call
    sent = json.loads(first)
    image = sent["messages"][0]["content"][0]
    assert image["type"] == "image"
    img = Image.open(io.BytesIO(base64.b64decode(image["source"]["data"])))
    fam = caps.family("anthropic")
    assert max(img.size) <= 1568 and img.size[0] * img.size[1] <= 1_150_000
    assert sent["messages"][0]["content"][1]["text"].startswith("what is wrong")   # the rest untouched
    tail = sent["messages"][2]["content"]
    assert tail[0]["type"] == "tool_result" and tail[0]["content"] == "PDF file read: /w/spec.pdf"
    assert [b["type"] for b in tail[1:]] == ["text"]
    text = tail[1]["text"]
    assert text.startswith("[PDF /w/spec.pdf: 3 pages; 3 as their text below]")
    assert "--- page 3 of 3 ---" in text and "<<ccr:" in text
    rows = [r for r in Ledger(state_dir / "ledger.db").rows() if r["family"] == "media"]
    assert sorted(r["transform"] for r in rows) == ["media:image:resized", "media:pdf:text"]   # once each
    by = {r["stream"]: r for r in rows}
    assert by["image"]["raw_tokens"] == caps.tokens(fam, 3840, 2160)
    assert by["image"]["emitted_tokens"] == caps.tokens(fam, *img.size)
    assert by["pdf"]["emitted_tokens"] < 0.35 * by["pdf"]["raw_tokens"]
    assert by["image"]["token_label"].startswith("formula:anthropic@")
    archive = Archive(state_dir / "archive.db", readonly=True)
    assert archive.get(by["image"]["handle"]) == shot and archive.get(by["pdf"]["handle"]) == pdf
    up.close() if hasattr(up, "close") else None


def test_measure_mode_sends_the_original_and_records_what_it_would_save(state_dir, proxy_for, code_png_small_pdf):
    shot, pdf = code_png_small_pdf
    up = Canned(200, [("content-type", "application/json")], OK)
    proxy = proxy_for(anthropic=up.url, mode="measure")
    body = _body(shot, pdf, session="media-2")
    _post(proxy.url, body)
    assert json.loads(up.seen[0][3]) == body
    rows = [r for r in Ledger(state_dir / "ledger.db").rows() if r["family"] == "media"]
    assert {r["transform"] for r in rows} == {"media:image:resized", "media:pdf:text"}
    assert all(not r["applied"] and r["would_emit_tokens"] < r["raw_tokens"] for r in rows)


def test_a_broken_image_is_forwarded_as_it_came(state_dir, proxy_for):
    up = Canned(200, [("content-type", "application/json")], OK)
    proxy = proxy_for(anthropic=up.url)
    junk = _b64(b"\x89PNG\r\n\x1a\n" + b"garbage" * 40)
    body = {"model": "claude-x", "messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": junk}}]}]}
    _post(proxy.url, body)
    assert json.loads(up.seen[0][3]) == body


def test_openai_input_image_is_sized_to_the_tile_cap(state_dir, proxy_for, code_png_small_pdf):
    shot, _ = code_png_small_pdf
    up = Canned(200, [("content-type", "application/json")], [b'{"output":[]}'])
    proxy = proxy_for(openai=up.url)
    body = {"model": "gpt-5.5", "input": [{"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "look"},
        {"type": "input_image", "image_url": "data:image/png;base64," + _b64(shot), "detail": "high"}]}]}
    httpx2.post(proxy.openai_url + "/responses", content=json.dumps(body).encode(),
                headers={"authorization": "Bearer k", "content-type": "application/json"}, timeout=120)
    sent = json.loads(up.seen[0][3])["input"][0]["content"][1]
    assert sent["type"] == "input_image" and sent["detail"] == "high"
    img = Image.open(io.BytesIO(base64.b64decode(sent["image_url"].split(",", 1)[1])))
    assert min(img.size) <= 768 and max(img.size) <= 2048


def _pages_body(path: str, pages: list[bytes], spec: str) -> dict:
    return {"model": "claude-sonnet-4-5", "messages": [
        {"role": "user", "content": "read it"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_r", "name": "Read",
                                           "input": {"file_path": path, "pages": spec}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_r",
             "content": f"PDF pages extracted: {len(pages)} page(s) from {path} (9.1KB)"},
            *({"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": _b64(p)}}
              for p in pages)]}]}


def _page_jpegs(n: int, size=(1275, 1650)) -> list[bytes]:
    from PIL import Image

    out = []
    for i in range(n):
        buf = io.BytesIO()
        Image.new("RGB", size, (250, 250, 250 - i)).save(buf, "JPEG")
        out.append(buf.getvalue())
    return out


def test_a_pdf_page_range_sent_as_page_images_becomes_the_pages_text(state_dir, proxy_for, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "spec.pdf").write_bytes(fx.born_digital_pdf(4))
    up = Canned(200, [("content-type", "application/json")], OK)
    proxy = proxy_for(anthropic=up.url, workspace=ws)
    _post(proxy.url, _pages_body(str(ws / "spec.pdf"), _page_jpegs(2), "2-3"))
    tail = json.loads(up.seen[0][3])["messages"][2]["content"]
    assert [b["type"] for b in tail] == ["tool_result", "text"]
    assert "(pages 2-3 read)" in tail[1]["text"] and "--- page 3 of 4 ---" in tail[1]["text"]
    assert "--- page 1 of 4 ---" not in tail[1]["text"]
    (row,) = [r for r in Ledger(state_dir / "ledger.db").rows() if r["family"] == "media"]
    assert row["raw_tokens"] == 2 * caps.tokens(caps.family("anthropic"), 1275, 1650)   # what was sent


def test_page_images_of_a_pdf_outside_the_workspace_pass_as_they_came(state_dir, proxy_for, tmp_path):
    ws, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    ws.mkdir()
    elsewhere.mkdir()
    (elsewhere / "spec.pdf").write_bytes(fx.born_digital_pdf(2))
    up = Canned(200, [("content-type", "application/json")], OK)
    proxy = proxy_for(anthropic=up.url, workspace=ws)
    pages = _page_jpegs(2, (800, 1000))      # under the cap: a plain image is sent byte-identical
    _post(proxy.url, _pages_body(str(elsewhere / "spec.pdf"), pages, "1-2"))
    tail = json.loads(up.seen[0][3])["messages"][2]["content"]
    assert [b["type"] for b in tail] == ["tool_result", "image", "image"]     # the client's own page images
    assert [base64.b64decode(b["source"]["data"]) for b in tail[1:]] == pages
