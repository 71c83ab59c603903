"""Media benchmark: one command, one table of tokens before/after per kind of image and PDF.

    .venv/bin/python benchmarks/bench_media.py [--family anthropic] [--family anthropic-hires] ...

Every input is made here by real tools (Pillow screenshots of real source and of logs, a photo-like
image, reportlab PDFs, a scan made of page images; tests/observe/media/fixtures.py) and every figure
is computed on this machine by the media layer itself (capsule/observe/media): tokens by the family's
formula (data/caps.toml) for images and page images, by the token counter for text. "before" is what
the client sends without capsule, priced as the API charges it (after the API's own downscale).
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from capsule.observe import media  # noqa: E402
from capsule.observe.media import caps, image  # noqa: E402
from capsule.policy.media_policy import MediaPolicy  # noqa: E402
from tests.observe.media import fixtures as fx  # noqa: E402


def claude_code_view(png: bytes) -> bytes:
    """What Claude Code 2.1.197 itself hands the API for a Read of a large image: at most 2000 px on
    the long edge (CONTROL-PLANE.md; seen in the e2e test's requests)."""
    from PIL import Image

    img = Image.open(io.BytesIO(png))
    s = min(1.0, 2000 / max(img.size))
    if s == 1.0:
        return png
    out = img.convert("RGB").resize((int(img.size[0] * s), int(img.size[1] * s)), Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    out.save(buf, "PNG")
    return buf.getvalue()


def page_images(pdf_bytes: bytes) -> list[bytes]:
    """Claude Code's Read with `pages`: one JPEG per page (rendered here by pdftoppm at 150 dpi)."""
    import subprocess

    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "in.pdf"
        src.write_bytes(pdf_bytes)
        subprocess.run(["pdftoppm", "-jpeg", "-r", "150", str(src), str(Path(d) / "p")], check=True)
        return [p.read_bytes() for p in sorted(Path(d).glob("p-*.jpg"))]


def cases(workspace: Path):
    code, logs = fx.screenshot(fx.code_lines()), fx.screenshot(fx.log_lines())
    pdf20, scan = fx.born_digital_pdf(20), fx.scanned_pdf(3)
    yield "4K code screenshot (as sent by Claude Code, 2000 px)", claude_code_view(code), "image/png", None, {}
    yield "4K log screenshot (raw 3840x2160, pasted)", logs, "image/png", None, {}
    yield "4K photo (JPEG, pasted)", fx.photo(), "image/jpeg", None, {}
    yield "code screenshot, source in workspace", claude_code_view(code), "image/png", workspace, {}
    yield "20-page PDF as a document block", pdf20, "application/pdf", None, {}
    yield "20-page PDF as page images (Read pages)", pdf20, "application/pdf", None, {"pages": page_images(pdf20)}
    yield "3-page scanned PDF (document block)", scan, "application/pdf", None, {}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--family", action="append", help="caps.toml family (default: anthropic, anthropic-hires, "
                                                      "openai-tile)")
    args = ap.parse_args()
    families = args.family or ["anthropic", "anthropic-hires", "openai-tile"]
    with tempfile.TemporaryDirectory() as d:
        ws = Path(d)
        (ws / "capsule" / "proxy").mkdir(parents=True)
        (ws / "capsule" / "proxy" / "rewrite.py").write_text((REPO / "capsule/proxy/rewrite.py").read_text())
        inputs = list(cases(ws))
        print(f"{'kind':<52} {'family':<16} {'action':<11} {'tokens before':>13} {'after':>7} {'saved':>6} "
              f"{'bytes before':>12} {'after':>9} {'ms':>6}")
        for fam_name in families:
            for name, data, mt, workspace, extra in inputs:
                fam, pol = caps.family(fam_name), MediaPolicy()
                t0 = time.perf_counter()
                r = media.transform(data, mt, fam, pol, workspace=workspace,
                                    pages=list(range(1, len(extra["pages"]) + 1)) if extra.get("pages") else None)
                ms = (time.perf_counter() - t0) * 1000
                before = r.tokens_before
                sent_bytes = len(data)
                if extra.get("pages"):
                    before = sum(caps.tokens(fam, *image.probe(p)[1:]) for p in extra["pages"])
                    sent_bytes = sum(map(len, extra["pages"]))
                after_bytes = sent_bytes if r.parts is None else sum(
                    len(p.data) or len(p.text.encode()) for p in r.parts)
                saved = 100 * (1 - r.tokens_after / before) if before else 0.0
                print(f"{name:<52} {fam_name:<16} {r.action:<11} {before:>13,} {r.tokens_after:>7,} {saved:>5.0f}% "
                      f"{sent_bytes:>12,} {after_bytes:>9,} {ms:>6.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
