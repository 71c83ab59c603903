"""PDFs as what they cost to read: born-digital pages as text with page markers, pages without a text
layer as page images sized to the family's cap.

Responsible for text extraction (poppler's pdftotext; pypdf where poppler is missing), page rendering
(poppler's pdftoppm), the page count (poppler's pdfinfo reads the page tree root's /Count in
milliseconds, where pypdf parses every object first: 0.6-1.5 s for 10,000 pages) and the document
block's price by formula. Not responsible for policy or
archiving. Invariants: a page never becomes empty text — a page without a text layer is an image,
and a PDF that cannot be rendered where it must be raises MediaError (the original passes); the
output is a pure function of the bytes (same PDF, same parts). One PDF has one time budget for all
its pages ([decode] pdf_budget_s, within the door's own deadline: budget.py); poppler runs with the
time left and is killed at it, so an abandoned or slow conversion stops instead of rendering on.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache

from capsule.ground import tokens as tok
from capsule.ground.types import Part
from capsule.observe.media import caps, image
from capsule.observe.media.image import MediaError
from capsule.observe.media import media_budget
from capsule.store import memo

TIMEOUT_S = 60.0
MIN_TEXT_CHARS = 16        # a page with fewer non-space characters has no usable text layer
MAX_PAGES = 600            # the API's own page limit; longer PDFs pass as they came
MAX_RENDERED_PAGES = 40    # textless pages rendered at most; a longer scan passes as it came


@dataclass
class Converted:
    parts: list[Part]
    pages: int
    text_pages: int
    image_pages: int
    tokens_before: int        # the document block, by formula
    tokens_after: int
    tool: str
    page_sizes: list[tuple[float, float]] = field(default_factory=list)


@lru_cache(maxsize=1)
def tool() -> str | None:
    """The text extractor in use: 'pdftotext (poppler X)', 'pypdf X (poppler missing)', or None."""
    exe = shutil.which("pdftotext")
    if exe:
        def ask() -> str | None:
            try:
                out = subprocess.run([exe, "-v"], capture_output=True, text=True, timeout=10)
                version = (out.stderr or out.stdout).split("\n")[0].split()[-1]
                return f"pdftotext (poppler {version})"
            except (OSError, subprocess.SubprocessError, IndexError):
                return None

        found = memo.of_program(exe, ["-v"], ask)
        if found is not None:
            return found
    try:
        import pypdf  # noqa: PLC0415 - bench_startup "capsule ctx doctor"
    except ImportError:
        return None
    return f"pypdf {pypdf.__version__} (poppler's pdftotext missing)"


def renderer() -> str | None:
    return "pdftoppm" if shutil.which("pdftoppm") else None


def _reader(data: bytes):
    import pypdf  # noqa: PLC0415 - bench_startup "capsule ctx doctor"

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise MediaError("encrypted PDF")
        return reader
    except MediaError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise MediaError(f"not a readable PDF ({type(exc).__name__})") from None


def declared_pages(data: bytes) -> int | None:
    """The page count pdfinfo reads from the page tree's root, within [decode] pdf_probe_s (killed at
    it: MediaError); None without pdfinfo or when it names none (an encrypted PDF: pypdf says why)."""
    exe = shutil.which("pdfinfo")
    if not exe:
        return None
    with media_budget.deadline(float(media_budget.settings()["pdf_probe_s"])), _tmp_pdf(data) as path:
        proc = _run([exe, path], "pdfinfo")
    found = re.search(rb"^Pages:\s+(\d{1,12})\s*$", proc.stdout, re.M)
    return int(found.group(1)) if found else None


def page_sizes(data: bytes) -> list[tuple[float, float]]:
    """Each page's shown size in points (rotation applied). Over MAX_PAGES (pdfinfo's count, or the
    page tree's, read before any page is) or a page tree pypdf cannot walk (a cycle): MediaError,
    with that reason."""
    declared = declared_pages(data)
    if declared is not None and declared > MAX_PAGES:
        raise MediaError(f"PDF of {declared} pages is over the {MAX_PAGES}-page limit")
    reader = _reader(data)
    try:
        # The tree's own /Count and the root's /Kids first: pypdf walks every page to count them
        # (10 s for 10,000), and either says enough to refuse.
        root = reader.trailer["/Root"]["/Pages"]
        declared = max(int(root.get("/Count", 0) or 0), len(root.get("/Kids", ()) or ()))
        n = declared if declared > MAX_PAGES else len(reader.pages)
        if n > MAX_PAGES:
            raise MediaError(f"PDF of {n} pages is over the {MAX_PAGES}-page limit")
        out = []
        for page in reader.pages:
            box = page.mediabox
            w, h = float(box.width), float(box.height)
            if int(page.get("/Rotate", 0) or 0) % 180:
                w, h = h, w
            out.append((w, h))
    except MediaError:
        raise
    except Exception as exc:  # noqa: BLE001 - a damaged or hostile page tree
        raise MediaError(f"not a readable PDF ({type(exc).__name__}: {str(exc)[:120]})") from None
    return out


def _time_left(what: str) -> float:
    """The subprocess timeout: what is left of this PDF's (and the door's) budget, TIMEOUT_S at most."""
    media_budget.check(what)
    return max(0.05, min(TIMEOUT_S, media_budget.remaining(TIMEOUT_S)))


def _run(argv: list[str], what: str) -> subprocess.CompletedProcess:
    """poppler with the time left; subprocess.run kills it when that passes."""
    try:
        return subprocess.run(argv, capture_output=True, timeout=_time_left(what))
    except subprocess.TimeoutExpired:
        raise MediaError(f"{what}: over the PDF's time budget") from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise MediaError(f"{what} failed ({type(exc).__name__})") from None


def pages_text(data: bytes) -> list[str]:
    """The text layer of each page (pdftotext, one form feed per page; pypdf without poppler)."""
    exe = shutil.which("pdftotext")
    if exe:
        with _tmp_pdf(data) as path:
            proc = _run([exe, "-enc", "UTF-8", "-eol", "unix", path, "-"], "pdftotext")
        if proc.returncode != 0:
            raise MediaError(f"pdftotext exit {proc.returncode}")
        pages = proc.stdout.decode("utf-8", "replace").split("\f")
        if pages and not pages[-1].strip():
            pages.pop()
        return pages
    reader = _reader(data)
    out = []
    for page in reader.pages:
        try:
            out.append(page.extract_text() or "")
        except Exception:  # noqa: BLE001 - one unreadable page: treated as a page without text
            out.append("")
    return out


def render_page(data: bytes, number: int, long_edge: int) -> bytes:
    """Page `number` (1-based) as PNG with its long edge at `long_edge` px (pdftoppm)."""
    exe = shutil.which("pdftoppm")
    if not exe:
        raise MediaError("a page without text needs pdftoppm (poppler-utils) to be sent as an image")
    with _tmp_pdf(data) as path:
        proc = _run([exe, "-f", str(number), "-l", str(number), "-png", "-scale-to", str(long_edge),
                     "-singlefile", path], f"pdftoppm (page {number})")
    if proc.returncode != 0 or not proc.stdout:
        raise MediaError(f"pdftoppm exit {proc.returncode}")
    return proc.stdout


class _tmp_pdf:
    """The PDF in an owner-only temp file (poppler reads paths); removed on exit."""

    def __init__(self, data: bytes):
        self.data = data

    def __enter__(self) -> str:
        fd, self.path = tempfile.mkstemp(prefix="capsule-pdf-", suffix=".pdf")
        with os.fdopen(fd, "wb") as f:
            f.write(self.data)
        return self.path

    def __exit__(self, *exc) -> None:
        try:
            os.unlink(self.path)
        except OSError:
            pass


def page_image_size(fam: caps.Family, w_pt: float, h_pt: float, long_edge: int) -> tuple[int, int]:
    s = long_edge / max(w_pt, h_pt)
    return caps.api_size(fam, max(1, int(w_pt * s)), max(1, int(h_pt * s)))


def document_cost(fam: caps.Family, sizes: list[tuple[float, float]], texts: list[str]) -> int:
    """A document block's tokens: per page, the page's image at the API's cap plus its text."""
    long_edge = int(caps.data()["pdf"]["render_long_edge"])
    total = 0
    for i, (w, h) in enumerate(sizes):
        pw, ph = page_image_size(fam, w, h, long_edge)
        total += caps.tokens(fam, pw, ph) + (tok.count(texts[i]) if i < len(texts) else 0)
    return total


def has_text(page: str, min_chars: int = MIN_TEXT_CHARS) -> bool:
    return sum(1 for c in page if not c.isspace()) >= min_chars


def convert(data: bytes, fam: caps.Family, min_chars: int = MIN_TEXT_CHARS,
            pages: list[int] | None = None) -> Converted:
    """Text with page markers for pages with a text layer; the others as images sized to the cap.
    `pages` (1-based): only those pages (a client that read a page range). All of it within one
    budget ([decode] pdf_budget_s, within any deadline the door set)."""
    with media_budget.deadline(float(media_budget.settings()["pdf_budget_s"])):
        return _convert(data, fam, min_chars, pages)


def _convert(data: bytes, fam: caps.Family, min_chars: int, pages: list[int] | None) -> Converted:
    sizes = page_sizes(data)
    n = len(sizes)
    if n == 0 or n > MAX_PAGES:
        raise MediaError(f"PDF of {n} pages is sent as it came" if n == 0 else
                         f"PDF of {n} pages is over the {MAX_PAGES}-page limit")
    if pages is not None and (not pages or min(pages) < 1 or max(pages) > n):
        raise MediaError(f"pages {pages[:3]}... are not pages of a {n}-page PDF")
    texts = pages_text(data)
    texts = (texts + [""] * n)[:n]
    wanted = set(range(n)) if pages is None else {p - 1 for p in pages}
    textless = [i for i in range(n) if i in wanted and not has_text(texts[i], min_chars)]
    if len(textless) > MAX_RENDERED_PAGES:
        raise MediaError(f"{len(textless)} pages without text (over {MAX_RENDERED_PAGES} to render)")
    before = document_cost(fam, [sizes[i] for i in sorted(wanted)], [texts[i] for i in sorted(wanted)])
    parts: list[Part] = []
    run: list[str] = []
    after = 0
    for i in sorted(wanted):
        if i in textless:
            if run:
                parts.append(Part("text", "".join(run)))
                run = []
            png = render_page(data, i + 1, int(caps.data()["pdf"]["render_long_edge"]))   # checks the budget
            sized = image.fit(png, fam)
            parts.append(Part("text", f"--- page {i + 1} of {n} (no text layer: the page as an image) ---\n"))
            parts.append(Part("image", data=sized.data, media_type=sized.media_type))
            after += sized.tokens_after
        else:
            run.append(f"--- page {i + 1} of {n} ---\n{texts[i].strip()}\n")
    if run:
        parts.append(Part("text", "".join(run)))
    parts = _merge_text(parts)
    after += sum(tok.count(p.text) for p in parts if p.kind == "text")
    return Converted(parts, n, len(wanted) - len(textless), len(textless), before, after, tool() or "none", sizes)


def _merge_text(parts: list[Part]) -> list[Part]:
    out: list[Part] = []
    for p in parts:
        if p.kind == "text" and out and out[-1].kind == "text":
            out[-1] = Part("text", out[-1].text + p.text)
        else:
            out.append(p)
    return out
