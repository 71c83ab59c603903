"""Media fixtures made by real tools at test time: Pillow-drawn screenshots of code and logs, a
photo-like image (gradients and noise), a born-digital PDF written by reportlab and a scanned PDF
made of page images (Pillow's PDF writer). Shared by the media tests, the proxy and e2e tests and
benchmarks/bench_media.py; nothing here is a checked-in binary.
"""

from __future__ import annotations

import io
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
MONO = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
SANS = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def code_lines(limit: int = 60) -> list[str]:
    """Real source lines (capsule's own proxy rewrite module), tabs expanded, cut at 120 columns."""
    text = (ROOT / "capsule" / "proxy" / "rewrite.py").read_text()
    return [line.expandtabs(4)[:120] for line in text.splitlines()[:limit]]


def log_lines(n: int = 60) -> list[str]:
    rnd = random.Random(7)
    levels = ["INFO", "INFO", "INFO", "WARN", "ERROR", "DEBUG"]
    words = ["request", "served", "cache", "miss", "upstream", "timeout", "retry", "worker", "started",
             "connection", "reset", "database", "query", "slow", "session", "expired", "token", "refreshed"]
    out = []
    for i in range(n):
        msg = " ".join(rnd.choice(words) for _ in range(rnd.randint(4, 9)))
        out.append(f"2026-11-30 14:{i % 60:02d}:{rnd.randint(0, 59):02d}.{rnd.randint(0, 999):03d} "
                   f"{rnd.choice(levels):5} [svc-{rnd.randint(1, 9)}] {msg} id={rnd.randint(1000, 99999)}")
    return out


def screenshot(lines: list[str], size: tuple[int, int] = (3840, 2160), font_px: int = 28,
               dark: bool = False) -> bytes:
    """A screen of monospaced text, as a 4K screen at 200% scaling shows an editor or a terminal."""
    from PIL import Image, ImageDraw, ImageFont

    bg, fg = ((30, 30, 30), (220, 220, 220)) if dark else ((255, 255, 255), (25, 25, 25))
    img = Image.new("RGB", size, bg)
    draw = ImageDraw.Draw(img)
    font = ImageFont.truetype(MONO, font_px)
    draw.rectangle((0, 0, size[0], 48), fill=(60, 63, 65) if dark else (236, 236, 236))   # a title bar
    y = 64
    for line in lines:
        if y + font_px > size[1]:
            break
        draw.text((48, y), line, font=font, fill=fg)
        y += int(font_px * 1.4)
    return _png(img)


def photo(size: tuple[int, int] = (3840, 2160), seed: int = 3) -> bytes:
    """Photo-like: smooth colour gradients, soft blobs and sensor noise (no text)."""
    from PIL import Image, ImageDraw, ImageFilter

    w, h = size
    small = (w // 4, h // 4)     # shapes and blur at a quarter size, then enlarged: soft like optics
    red = Image.linear_gradient("L").rotate(90).resize(small)
    green = Image.linear_gradient("L").resize(small)
    img = Image.merge("RGB", (red, green, Image.new("L", small, 140)))
    rnd = random.Random(seed)
    draw = ImageDraw.Draw(img)
    for _ in range(40):
        cx, cy, r = rnd.randint(0, small[0]), rnd.randint(0, small[1]), rnd.randint(10, 100)
        draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=(rnd.randint(0, 255), rnd.randint(0, 255),
                                                               rnd.randint(0, 255)))
    img = img.filter(ImageFilter.GaussianBlur(3)).resize(size, Image.Resampling.BICUBIC)
    noise = Image.effect_noise(size, 24).convert("RGB")
    img = Image.blend(img, noise, 0.12)
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=90)
    return buf.getvalue()


def _png(img) -> bytes:
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def paragraphs(page: int) -> list[str]:
    rnd = random.Random(page)
    vocab = ("the proxy forwards each request to its upstream and rewrites tool results once per "
             "conversation so that the prompt cache keeps hitting while every original stays in the "
             "archive under its handle and the ledger records tokens before and after").split()
    return [" ".join(rnd.choice(vocab) for _ in range(rnd.randint(40, 70))).capitalize() + "."
            for _ in range(5)]


def born_digital_pdf(pages: int = 20) -> bytes:
    """A text PDF written by reportlab: a heading and five paragraphs a page."""
    from reportlab.lib.pagesizes import letter
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate

    buf = io.BytesIO()
    doc = SimpleDocTemplate(buf, pagesize=letter, title="capsule media fixture", author="tests",
                            invariant=1)
    styles = getSampleStyleSheet()
    story = []
    for p in range(1, pages + 1):
        story.append(Paragraph(f"Section {p}: proxy notes", styles["Heading2"]))
        story.extend(Paragraph(t, styles["BodyText"]) for t in paragraphs(p))
        if p < pages:
            story.append(PageBreak())
    doc.build(story)
    return buf.getvalue()


def scanned_pdf(pages: int = 3) -> bytes:
    """A scan: each page is only an image of text (no text layer), written by Pillow's PDF writer."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(SANS, 30)
    imgs = []
    for p in range(1, pages + 1):
        img = Image.new("L", (1700, 2200), 250)
        draw = ImageDraw.Draw(img)
        y = 150
        for para in paragraphs(p):
            words = para.split()
            while words and y < 2050:
                line = []
                while words and len(" ".join(line + [words[0]])) < 80:
                    line.append(words.pop(0))
                draw.text((150, y), " ".join(line), font=font, fill=20)
                y += 44
            y += 30
        imgs.append(img.convert("RGB"))
    buf = io.BytesIO()
    imgs[0].save(buf, "PDF", save_all=True, append_images=imgs[1:], resolution=200.0)
    return buf.getvalue()


def mixed_pdf() -> bytes:
    """Two text pages and a scanned page between them (pypdf joins the two writers' pages)."""
    import pypdf

    out = pypdf.PdfWriter()
    for part in (born_digital_pdf(1), scanned_pdf(1), born_digital_pdf(1)):
        for page in pypdf.PdfReader(io.BytesIO(part)).pages:
            out.add_page(page)
    buf = io.BytesIO()
    out.write(buf)
    return buf.getvalue()


NOTES_HTML = """<!doctype html><html><head><meta charset="utf-8"><title>Release notes</title>
<style>body{font-family:'DejaVu Sans',sans-serif;font-size:30px;margin:60px;line-height:1.5;color:#222}</style>
</head><body><h1>Release notes for the proxy door</h1>
<p>The proxy forwards every request to its configured upstream and rewrites each tool result once per
conversation, so the prompt cache keeps hitting.</p>
<p>Images are resized to the model family's cap before they are sent; a screenshot of text that exists
in the workspace becomes a pointer to that file.</p>
<p>Born-digital documents become their text with page markers; scanned documents stay pages sized to
the cap.</p>
<p>Every original is kept in the archive under its handle, and the ledger records the tokens before and
after by formula.</p></body></html>
"""


def browser_screenshot(html: Path, size: tuple[int, int] = (3840, 2160)) -> bytes:
    """A real browser's screenshot of a page (headless Chromium, as test-all installs it)."""
    import shutil
    import subprocess
    import tempfile

    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    assert exe, "chromium is missing: run scripts/test-all"
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "shot.png"
        subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--user-data-dir={d}/profile", f"--window-size={size[0]},{size[1]}",
                        f"--screenshot={out}", html.resolve().as_uri()],
                       capture_output=True, timeout=120, check=True)
        return out.read_bytes()
