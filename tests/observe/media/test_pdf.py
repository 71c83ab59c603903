"""PDFs: born-digital -> text with page markers (<= 35% of the document block's cost), textless
pages -> page images sized to the cap, a scan never becomes empty text."""

import io
import shutil

import pytest
from PIL import Image

from capsule.ground import tokens
from capsule.observe import media
from capsule.observe.media import caps, pdf
from capsule.policy.media_policy import MediaPolicy
from tests.observe.media import fixtures as fx

POLICY = MediaPolicy()
FAM = caps.family("anthropic")


def test_born_digital_pdf_becomes_text_with_a_marker_per_page_within_35_percent(pdf20):
    r = media.transform(pdf20, "application/pdf", FAM, POLICY)
    assert r.action == "text" and [p.kind for p in r.parts] == ["text"]
    text = r.parts[0].text
    for n in range(1, 21):
        assert f"--- page {n} of 20 ---" in text
    assert "Section 7: proxy notes" in text
    assert r.tokens_after == tokens.count(text)
    assert r.tokens_after <= 0.35 * r.tokens_before, (r.tokens_after, r.tokens_before)


def test_the_document_cost_is_page_images_plus_page_text(pdf20):
    sizes, texts = pdf.page_sizes(pdf20), pdf.pages_text(pdf20)
    assert len(sizes) == len(texts) == 20
    w, h = pdf.page_image_size(FAM, *sizes[0], 1568)
    per_page_image = caps.tokens(FAM, w, h)
    assert pdf.document_cost(FAM, sizes, texts) == 20 * per_page_image + sum(tokens.count(t) for t in texts)


def test_a_scan_is_pages_sized_to_the_cap_never_empty_text(scanned):
    r = media.transform(scanned, "application/pdf", FAM, POLICY)
    assert r.action == "pages"
    images = [p for p in r.parts if p.kind == "image"]
    assert len(images) == 2
    for p in images:
        img = Image.open(io.BytesIO(p.data))
        assert max(img.size) <= 1568 and img.size[0] * img.size[1] <= 1_150_000
    texts = [p.text for p in r.parts if p.kind == "text"]
    assert all("no text layer" in t or t.startswith("[PDF") for t in texts)


def test_a_mixed_pdf_keeps_text_pages_as_text_and_the_scanned_page_as_an_image():
    r = media.transform(fx.mixed_pdf(), "application/pdf", FAM, POLICY)
    kinds = [p.kind for p in r.parts]
    assert r.action == "text+pages" and kinds.count("image") == 1
    joined = "".join(p.text for p in r.parts if p.kind == "text")
    assert "--- page 1 of 3 ---" in joined and "--- page 3 of 3 ---" in joined
    assert "page 2 of 3 (no text layer" in joined


def test_same_pdf_same_parts(pdf20):
    a = media.transform(pdf20, "application/pdf", FAM, POLICY)
    b = media.transform(pdf20, "application/pdf", FAM, POLICY)
    assert a.parts == b.parts


def test_keep_rule_sends_the_pdf_as_it_came(pdf20):
    r = media.transform(pdf20, "application/pdf", FAM, MediaPolicy(pdf="keep"))
    assert r.parts is None and r.tokens_before == r.tokens_after


def test_pypdf_fallback_extracts_the_same_pages_when_poppler_is_missing(pdf20, monkeypatch):
    real_which = shutil.which
    monkeypatch.setattr(pdf.shutil, "which", lambda name: None if name.startswith("pdfto") else real_which(name))
    pdf.tool.cache_clear()
    try:
        assert pdf.tool().startswith("pypdf ")
        texts = pdf.pages_text(pdf20)
        assert len(texts) == 20 and "Section 20: proxy notes" in texts[19]
        r = media.transform(pdf20, "application/pdf", FAM, POLICY)
        assert r.action == "text"
        with pytest.raises(media.MediaError):     # a scan needs the renderer: the original passes
            media.transform(fx.scanned_pdf(1), "application/pdf", FAM, POLICY)
    finally:
        monkeypatch.undo()
        pdf.tool.cache_clear()
    assert pdf.tool().startswith("pdftotext (poppler ")


@pytest.mark.parametrize("data", [b"%PDF-1.7\n garbage", b"%PDF-"])
def test_broken_pdfs_raise_media_error(data):
    with pytest.raises(media.MediaError):
        media.transform(data, "application/pdf", FAM, POLICY)


def test_never_worse_a_scan_that_would_cost_more_as_pages_goes_as_it_came(scanned):
    fam = caps.family("openai-tile")      # tiles: the sized page images plus markers cost more here
    r = media.transform(scanned, "application/pdf", fam, POLICY)
    assert r.parts is None and r.action == "unchanged" and r.tokens_after == r.tokens_before
    assert r.details["worse"]["tokens"] > r.tokens_before
