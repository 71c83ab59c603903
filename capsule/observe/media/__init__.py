"""MEDIA: images and PDFs as the model should receive them — one pure transform per blob.

Responsible for choosing what a blob becomes under a media policy: an image sized to its family's
cap, a screenshot of a workspace file as a pointer to that file, a born-digital PDF as text with
page markers (textless pages as sized images). Not responsible for archiving, the ledger or any
door's wire format (capsule/engine_media.py and the doors). Invariants: deterministic (same bytes,
family, policy and workspace -> same parts); `parts is None` means "send the original bytes";
failures raise MediaError and the caller sends the original.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from capsule.ground import tokens as tok
from capsule.ground.types import Part
from capsule.observe.media import caps, image, ocr, pdf, screenshot
from capsule.observe.media.image import MediaError
from capsule.policy.media_policy import MediaPolicy

__all__ = ["MediaError", "Part", "Result", "transform", "kind_of", "family_for"]

IMAGE_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif")
PDF_TYPE = "application/pdf"


@dataclass
class Result:
    kind: str                    # "image" | "pdf"
    action: str                  # unchanged | resized | pointer | text | pages
    parts: list[Part] | None     # None: the original bytes go as they came
    tokens_before: int
    tokens_after: int
    family: caps.Family
    details: dict = field(default_factory=dict)


def kind_of(media_type: str | None, data: bytes = b"") -> str | None:
    mt = (media_type or "").lower()
    if mt in IMAGE_TYPES:
        return "image"
    if mt == PDF_TYPE or data[:5] == b"%PDF-":
        return "pdf"
    if data[:8] == b"\x89PNG\r\n\x1a\n" or data[:3] == b"\xff\xd8\xff" or data[:6] in (b"GIF87a", b"GIF89a") \
            or (data[:4] == b"RIFF" and data[8:12] == b"WEBP"):
        return "image"
    return None


def family_for(model: str | None, api: str, policy: MediaPolicy) -> caps.Family:
    return caps.family_for(model, api).with_cap(policy.image_long_edge, policy.image_max_pixels)


def transform(data: bytes, media_type: str | None, fam: caps.Family, policy: MediaPolicy, *,
              workspace: Path | str | None = None, path: str | None = None, pages: list[int] | None = None) -> Result:
    """`pages`: a PDF read as a page range (only those pages are converted)."""
    kind = kind_of(media_type, data)
    if kind == "image":
        result = _image(data, fam, policy, workspace, path)
    elif kind == "pdf":
        result = _pdf(data, fam, policy, path, pages)
    else:
        raise MediaError(f"media type {media_type!r} is not handled")
    if result.parts is not None and result.tokens_after > result.tokens_before:
        # Never worse (INV-3): a scan whose sized pages and markers cost more than the block as it came.
        result.details["worse"] = {"action": result.action, "tokens": result.tokens_after}
        result.action, result.parts, result.tokens_after = "unchanged", None, result.tokens_before
    return result


def _image(data: bytes, fam: caps.Family, policy: MediaPolicy, workspace, path) -> Result:
    sized = image.fit(data, fam)
    details = {"before": list(sized.before), "after": list(sized.after), "media_type": sized.media_type,
               "bytes_before": len(data), "bytes_after": len(sized.data)}
    if policy.screenshots == "pointer" and workspace is not None:
        found = ocr.words(sized.data)
        if found is not None:
            share = screenshot.text_share(found, sized.after[0], sized.after[1], policy.screenshot_rules,
                                          content=image.content_area(sized.data))
            details.update(ocr_words=share.words, text_area=share.area, mostly_text=share.mostly_text)
            if share.mostly_text:
                src = screenshot.find_source(found, screenshot.workspace_files(workspace, policy.screenshot_rules),
                                             policy.screenshot_rules)
                if src is not None:
                    text = pointer_text(src, share, path)
                    details.update(source=src.path, recall=src.recall)
                    return Result("image", "pointer", [Part("text", text)], sized.tokens_before,
                                  tok.count(text), fam, details)
    if not sized.changed:
        return Result("image", "unchanged", None, sized.tokens_before, sized.tokens_after, fam, details)
    return Result("image", "resized", [Part("image", data=sized.data, media_type=sized.media_type)],
                  sized.tokens_before, sized.tokens_after, fam, details)


def pointer_text(src: screenshot.Source, share: screenshot.TextShare, path: str | None) -> str:
    shown = f" {path}" if path else ""
    return (f"[image{shown}: a screenshot of text ({share.words} words read by OCR); {src.recall:.0%} of its "
            f"words are in the workspace file {src.path} (lines {src.first_line}-{src.last_line}). "
            f"Read that file for the exact text.]")


def _pdf(data: bytes, fam: caps.Family, policy: MediaPolicy, path, pages=None) -> Result:
    if policy.pdf == "keep":
        sizes = pdf.page_sizes(data)
        texts = pdf.pages_text(data)
        cost = pdf.document_cost(fam, sizes, texts)
        return Result("pdf", "unchanged", None, cost, cost, fam, {"pages": len(sizes)})
    min_chars = int(screenshot.rules()["pdf"]["min_text_chars"])
    conv = pdf.convert(data, fam, min_chars, pages)
    shown = f" {path}" if path else ""
    which = f" (pages {_ranges(pages)} read)" if pages is not None else ""
    head = (f"[PDF{shown}: {conv.pages} pages{which}; {conv.text_pages} as their text below"
            + (f", {conv.image_pages} without a text layer as page images" if conv.image_pages else "") + "]\n")
    parts = list(conv.parts)
    if parts and parts[0].kind == "text":
        parts[0] = Part("text", head + parts[0].text)
    else:
        parts.insert(0, Part("text", head))
    after = conv.tokens_after + tok.count(head)
    action = "text" if conv.image_pages == 0 else ("pages" if conv.text_pages == 0 else "text+pages")
    return Result("pdf", action, parts, conv.tokens_before, after, fam,
                  {"pages": conv.pages, "text_pages": conv.text_pages, "image_pages": conv.image_pages,
                   "tool": conv.tool, "bytes_before": len(data)})


def _ranges(pages: list[int]) -> str:
    out, start, prev = [], None, None
    for p in sorted(set(pages)) + [None]:
        if start is None:
            start = prev = p
        elif p is not None and p == prev + 1:
            prev = p
        else:
            out.append(str(start) if start == prev else f"{start}-{prev}")
            start = prev = p
    return ",".join(out)
