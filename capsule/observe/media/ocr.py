"""OCR with Tesseract (Debian's tesseract-ocr, run as a subprocess): words, their boxes, confidences.

Responsible for running the engine within a time budget and parsing its TSV. Not responsible for
deciding what a screenshot is (screenshot.py). Invariant: never raises for a missing or failing
engine — `words()` returns None and the caller treats the image as "not known to be text".
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache
import io

from capsule.store import memo

TIMEOUT_S = 30.0
# Tesseract reads glyphs best at about 300 dpi (20-30 px letters); a screenshot sized to a model's cap
# has ~10 px letters. An image with a shorter long edge is enlarged by a whole factor before OCR, so
# every image is read at a comparable scale (the original 4K one as it is).
READ_LONG_EDGE = 2800
MAX_UPSCALE = 4


@dataclass(frozen=True)
class Word:
    text: str
    conf: float
    left: int
    top: int
    width: int
    height: int
    line: tuple[int, int, int]      # (block, paragraph, line): words of one text line share it


@lru_cache(maxsize=1)
def engine() -> str | None:
    """'tesseract 5.3.0', or None when it is not installed."""
    exe = shutil.which("tesseract")
    if not exe:
        return None
    def ask() -> str | None:
        try:
            out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        first = (out.stdout or out.stderr).splitlines()
        return first[0].strip() if first else "tesseract"

    return memo.of_program(exe, ["--version"], ask)


def words(png: bytes, timeout: float = TIMEOUT_S, psm: int = 3) -> list[Word] | None:
    """Tesseract's words for an encoded image (PNG/JPEG bytes on stdin), or None if it cannot run.
    Boxes are in the coordinates of the image as given."""
    exe = shutil.which("tesseract")
    if not exe:
        return None
    factor = 1
    try:
        png, factor = _readable(png)
    except Exception:  # noqa: BLE001 - an image Pillow cannot read goes to Tesseract as it is
        factor = 1
    try:
        proc = subprocess.run([exe, "stdin", "stdout", "--psm", str(psm), "-l", "eng", "tsv"], input=png,
                              capture_output=True, timeout=timeout,
                              env={"OMP_THREAD_LIMIT": "1", "PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    found = parse_tsv(proc.stdout.decode("utf-8", "replace"))
    if factor == 1:
        return found
    return [Word(w.text, w.conf, w.left // factor, w.top // factor, w.width // factor, w.height // factor, w.line)
            for w in found]


def _readable(data: bytes) -> tuple[bytes, int]:
    from PIL import Image  # noqa: PLC0415 - bench_startup "capsule ctx doctor"

    img = Image.open(io.BytesIO(data))
    long_edge = max(img.size)
    factor = min(MAX_UPSCALE, max(1, round(READ_LONG_EDGE / long_edge)))
    if factor == 1:
        return data, 1
    img = img.convert("RGB").resize((img.size[0] * factor, img.size[1] * factor), Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    img.save(buf, "PNG", compress_level=1)
    return buf.getvalue(), factor


def parse_tsv(tsv: str) -> list[Word]:
    out = []
    for row in tsv.splitlines()[1:]:
        cols = row.split("\t")
        if len(cols) < 12 or cols[0] != "5":      # level 5: a word
            continue
        text = cols[11].strip()
        if not text:
            continue
        try:
            out.append(Word(text, float(cols[10]), int(cols[6]), int(cols[7]), int(cols[8]), int(cols[9]),
                            (int(cols[2]), int(cols[3]), int(cols[4]))))
        except ValueError:
            continue
    return out


def confident(found: list[Word], min_conf: float) -> list[Word]:
    return [w for w in found if w.conf >= min_conf and any(c.isalnum() for c in w.text)]
