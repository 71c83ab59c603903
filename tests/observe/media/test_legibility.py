"""Legibility: Tesseract's word recall on the resized screenshot is at least 0.95 of its recall on
the original (same OCR procedure on both: ocr.words reads every image at a comparable scale)."""

import re

import pytest

from capsule.observe.media import caps, image, ocr
from tests.observe.media import fixtures as fx

WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


def recall(png: bytes, truth: set[str]) -> float:
    found = ocr.words(png)
    assert found is not None, "tesseract did not run"
    got = {t for w in found for t in WORD.findall(w.text)}
    return len(truth & got) / len(truth)


@pytest.mark.parametrize("kind", ["code", "log"])
def test_word_recall_after_resizing_is_at_least_95_percent_of_the_originals(kind, code_png, log_png):
    lines, png = (fx.code_lines(), code_png) if kind == "code" else (fx.log_lines(), log_png)
    truth = {t for line in lines for t in WORD.findall(line)}
    sized = image.fit(png, caps.family("anthropic"))
    assert sized.changed and max(sized.after) <= 1568
    before, after = recall(png, truth), recall(sized.data, truth)
    assert before > 0.6, f"the original itself reads badly ({before:.2f}): fixture problem"
    assert after >= 0.95 * before, f"{kind}: recall {after:.3f} resized vs {before:.3f} original"
