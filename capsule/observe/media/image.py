"""Images sized to a model family's cap: Pillow resize, deterministic re-encode.

Responsible for pixels only: decode, orientation, downscale, encode. Not responsible for policy,
OCR or archiving. Invariants: an image already within the cap comes back as the same bytes; a
resized one is a pure function of (bytes, family) — same input, same bytes in every process;
anything Pillow cannot read (or an animation, or a decompression bomb) raises MediaError and the
caller passes the original; so does one whose decode would not fit the process's media budget
(budget.py: decoded bytes, not file size, reserved before Pillow allocates them; a JPEG over it is
decoded at a DCT scale that fits).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
import warnings

from capsule.observe.media import media_budget, caps
from capsule.observe.media.media_errors import MediaError

__all__ = ["MediaError", "Sized", "fit", "probe", "decode_cost", "content_area", "render_png"]

MAX_INPUT_PIXELS = 80_000_000      # past this, decoding alone could take GBs: the original passes
FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp", "GIF": "image/gif"}
# Re-encoding: PNG stays PNG (lossless, text stays crisp), JPEG and WebP stay lossy at a fixed
# quality, a GIF frame becomes PNG. Fixed settings, no metadata: the bytes depend on the pixels only.
JPEG_QUALITY = 85
# Lanczos alone: measured on 4K code screenshots, an unsharp mask after it did not raise Tesseract's
# word recall (tests/observe/media/test_legibility.py holds the recall rule).


@dataclass(frozen=True)
class Sized:
    data: bytes
    media_type: str
    before: tuple[int, int]
    after: tuple[int, int]
    tokens_before: int
    tokens_after: int
    changed: bool


def _open(data: bytes):
    from PIL import Image  # noqa: PLC0415 - bench_startup "capsule ctx doctor"

    try:
        with warnings.catch_warnings():     # Pillow's bomb warning is an answer here, not a log line
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data))
        w, h = img.size
    except (Image.DecompressionBombWarning, Image.DecompressionBombError):
        raise MediaError(f"image is over {MAX_INPUT_PIXELS} px (a decompression bomb?)") from None
    except Exception as exc:  # noqa: BLE001 - any decoder fault means "not for us"
        raise MediaError(f"not a readable image ({type(exc).__name__})") from None
    if img.format not in FORMATS:
        raise MediaError(f"image format {img.format} is not sized")
    if w * h > MAX_INPUT_PIXELS:
        raise MediaError(f"image of {w}x{h} px is over {MAX_INPUT_PIXELS} px")
    if getattr(img, "n_frames", 1) > 1:
        raise MediaError("animated image: sent as it is")
    return img


def probe(data: bytes) -> tuple[str, int, int]:
    """(media type, width, height) from the header alone."""
    img = _open(data)
    return FORMATS[img.format], img.size[0], img.size[1]


def _bytes_per_pixel(mode: str) -> int:
    """What Pillow holds per pixel in memory: one byte for 1/L/P, two for I;16, else a 32-bit word."""
    return 1 if mode in ("1", "L", "P") else (2 if mode.startswith("I;16") else 4)


def decode_cost(img, tw: int, th: int) -> int:
    """Bytes a resize of `img` to (tw, th) holds at its peak: the decoded image, a mode conversion's
    copy, an EXIF rotation's copy, and the resampler's intermediate (target width x source height)."""
    w, h = img.size
    cost = w * h * _bytes_per_pixel(img.mode)
    if img.mode not in ("RGB", "RGBA", "L"):
        cost += w * h * 4
    try:
        # A PNG's getexif() decodes the whole image to look past IDAT: only EXIF seen at open counts
        turned = (img.format != "PNG" or "exif" in img.info) and img.getexif().get(0x0112, 1) not in (None, 1)
    except Exception:  # noqa: BLE001 - unreadable EXIF: exif_transpose leaves it alone too
        turned = False
    if turned:
        cost += w * h * 4
    return cost + max(tw, th) * max(w, h) * 4


def fit(data: bytes, fam: caps.Family) -> Sized:
    """The image within the family's cap (unchanged bytes when it already is)."""
    img = _open(data)
    media_type = FORMATS[img.format]
    w, h = img.size
    before = caps.tokens(fam, w, h)
    tw, th = caps.target(fam, w, h)
    if (tw, th) == (w, h):
        return Sized(data, media_type, (w, h), (w, h), before, before, False)
    if img.format == "JPEG" and decode_cost(img, tw, th) > media_budget.capacity():
        img.draft("RGB", (tw, th))      # decoded at 1/2..1/8 scale, never below the target
    media_budget.check(f"image of {w}x{h} px")
    with media_budget.decoding(decode_cost(img, tw, th), f"image of {w}x{h} px"):
        return _resized(img, fam, media_type, (w, h), (tw, th), before)


def _resized(img, fam: caps.Family, media_type: str, size: tuple[int, int], target: tuple[int, int],
             before: int) -> Sized:
    from PIL import Image, ImageOps  # noqa: PLC0415 - bench_startup "capsule ctx doctor"

    (w, h), (tw, th) = size, target
    try:
        img.load()
        ImageOps.exif_transpose(img, in_place=True)    # a copy would double the decoded image (issue 31)
        if (img.size[0] > img.size[1]) != (w > h) and w != h:   # rotated by its EXIF: the cap turns too
            tw, th = th, tw
        img = _normal_mode(img)
        out = img.resize((tw, th), Image.Resampling.LANCZOS, reducing_gap=3.0)
        encoded, media_type = _encode(out, media_type)
    except MediaError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise MediaError(f"resize failed ({type(exc).__name__}: {exc})") from None
    after = caps.tokens(fam, tw, th)
    return Sized(encoded, media_type, (w, h), (tw, th), before, after, True)


def _normal_mode(img):
    if img.mode in ("RGB", "RGBA", "L"):
        return img
    if img.mode in ("LA", "PA") or (img.mode == "P" and "transparency" in img.info):
        return img.convert("RGBA")
    return img.convert("RGB")


def _encode(img, media_type: str) -> tuple[bytes, str]:
    img.info = {}
    buf = io.BytesIO()
    if media_type == "image/jpeg":
        if img.mode not in ("RGB", "L"):
            img = img.convert("RGB")
        img.save(buf, "JPEG", quality=JPEG_QUALITY, optimize=False, progressive=False, subsampling=2)
        return buf.getvalue(), "image/jpeg"
    if media_type == "image/webp":
        img.save(buf, "WEBP", quality=JPEG_QUALITY, method=4, exact=False)
        return buf.getvalue(), "image/webp"
    img.save(buf, "PNG", compress_level=6, optimize=False)
    return buf.getvalue(), "image/png"


def content_area(data: bytes) -> int:
    """Pixels of the box that holds everything differing from the background (the top-left pixel's
    colour): a short web page's text fills its box even when it fills little of the screen."""
    from PIL import Image, ImageChops  # noqa: PLC0415 - bench_startup "capsule ctx doctor"

    img = Image.open(io.BytesIO(data)).convert("RGB")
    bg = Image.new("RGB", img.size, img.getpixel((0, 0)))
    box = ImageChops.difference(img, bg).convert("L").point(lambda v: 255 if v > 24 else 0).getbbox()
    if not box:
        return img.size[0] * img.size[1]
    return max(1, (box[2] - box[0]) * (box[3] - box[1]))


def render_png(img) -> bytes:
    """A Pillow image (a rendered PDF page) as deterministic PNG bytes."""
    return _encode(_normal_mode(img), "image/png")[0]
