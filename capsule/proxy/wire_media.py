"""The proxy door's media walk: find image and PDF blocks in a model API request and splice in what
the media layer sends instead.

Not responsible for deciding (capsule/engine_media.py), memoizing or HTTP (app.py). Anthropic
Messages: `image` and `document` blocks with a base64 source, in user messages and inside
tool_result contents (Claude Code's Read of a PNG; its Read of a PDF sends a document block beside
the tool_result). OpenAI Responses: `input_image` / `input_file` data URLs in user messages and in
function call outputs. Invariant: only those blocks change; every other value keeps its JSON value.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any, Callable

from capsule import engine_media
from capsule.ground.types import Part
from capsule.proxy import rewrite as wire

MIN_B64_CHARS = 64          # smaller "images" are placeholders, not worth a decode


@dataclass(frozen=True)
class Blob:
    media_type: str | None
    b64: str                 # the block's base64 text as the client sent it (memo key)
    path: str | None         # the file a tool call read, when the block came from one
    api: str


@dataclass(frozen=True)
class PdfPages:
    """A PDF the client read as a page range and sent as one image per page (Claude Code's Read with
    `pages`): the file it names, the pages, and the page images as sent."""

    path: str
    pages: list[int]
    b64: list[str]


# fn(blob) -> the parts to send instead, or None (send the block as it came)
Transform = Callable[[Blob], "list[Part] | None"]
PagesTransform = Callable[[PdfPages], "list[Part] | None"]


def parse_pages(spec: object) -> list[int] | None:
    """'1-5', '3', '1-3,7' -> page numbers; None for anything else."""
    if isinstance(spec, int) and not isinstance(spec, bool):
        return [spec] if spec > 0 else None
    if not isinstance(spec, str) or not spec.strip() or len(spec) > 200:
        return None
    out: list[int] = []
    for part in spec.replace(" ", "").split(","):
        a, _, b = part.partition("-")
        if not a.isdigit() or (b and not b.isdigit()):
            return None
        lo, hi = int(a), int(b or a)
        if lo < 1 or hi < lo or hi - lo > 1000:
            return None
        out.extend(range(lo, hi + 1))
    return out


def decode(blob: Blob) -> bytes | None:
    try:
        return base64.b64decode(blob.b64, validate=True)
    except (binascii.Error, ValueError):
        return None


def rewrite(api: str, body: Any, fn: Transform, pages_fn: PagesTransform | None = None) -> bool:
    if not isinstance(body, dict):
        return False
    return _anthropic(body, fn, pages_fn) if api == "anthropic" else _openai(body, fn)


# ---- Anthropic Messages -----------------------------------------------------------------------------
def _anthropic(body: dict, fn: Transform, pages_fn: PagesTransform | None = None) -> bool:
    msgs = body.get("messages")
    if not isinstance(msgs, list):
        return False
    paths: dict[str, str] = {}
    page_args: dict[str, object] = {}
    changed = False
    for msg in msgs:
        if not isinstance(msg, dict) or not isinstance(msg.get("content"), list):
            continue
        if msg.get("role") == "assistant":
            for b in msg["content"]:
                if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("input"), dict):
                    p = b["input"].get("file_path") or b["input"].get("path")
                    if isinstance(p, str) and isinstance(b.get("id"), str):
                        paths[b["id"]] = p
                        page_args[b["id"]] = b["input"].get("pages")
            continue
        last_path = None
        new_content, msg_changed = [], False
        blocks = msg["content"]
        skip = 0
        shown: tuple[int, int] | None = None   # the size a resized tool_result image now has
        for k, b in enumerate(blocks):
            if skip:
                skip -= 1
                continue
            if shown and isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str):
                note = _image_note(b["text"], shown)
                shown = None
                if note is not None:
                    new_content.append({**b, "text": note})
                    msg_changed = True
                    continue
            if isinstance(b, dict) and b.get("type") == "tool_result":
                last_path = paths.get(str(b.get("tool_use_id")))
                read = _page_images(b, blocks[k + 1:], last_path, page_args.get(str(b.get("tool_use_id"))))
                if read is not None and pages_fn is not None:
                    parts = pages_fn(read)
                    if parts is not None:
                        new_content.append(b)
                        new_content.extend(_anthropic_part(p) for p in parts)
                        skip, msg_changed = len(read.b64), True
                        continue
                inner = b.get("content")
                # 2.1.332 sends the page images inside the tool_result, after its "PDF pages extracted" line
                read = _page_images({"content": inner[:1]}, inner[1:], last_path,
                                    page_args.get(str(b.get("tool_use_id")))) if isinstance(inner, list) else None
                parts = pages_fn(read) if read is not None and pages_fn is not None else None
                if parts is not None:
                    b["content"] = [inner[0], *(_anthropic_part(p) for p in parts), *inner[1 + len(read.b64):]]
                    new_content.append(b)
                    msg_changed = True
                    continue
                if isinstance(inner, list):
                    spliced, inner_changed = _splice_anthropic(inner, fn, last_path)
                    if inner_changed:
                        b["content"], msg_changed = spliced, True
                        shown = _single_image_size(inner, spliced)
                new_content.append(b)
                continue
            out = _anthropic_block(b, fn, last_path)
            if out is None:
                new_content.append(b)
            else:
                new_content.extend(out)
                msg_changed = True
        if msg_changed:
            msg["content"], changed = new_content, True
    return changed


def _page_images(result: dict, following: list, path: str | None, pages_arg: object) -> PdfPages | None:
    """The page images that follow a "PDF pages extracted" tool_result (or its first block, `result`
    then holding that one), when they are what it says."""
    content = result.get("content")
    text = content if isinstance(content, str) else (
        "".join(c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text")
        if isinstance(content, list) else "")
    m = re.match(wire.config()["anthropic"]["pdf_pages_result"], text or "")
    pages = parse_pages(pages_arg)
    if not m or not path or not path.lower().endswith(".pdf") or pages is None or m.group(2) != path:
        return None
    n = int(m.group(1))
    imgs = following[:n]
    if n != len(pages) or len(imgs) != n or not all(
            isinstance(i, dict) and i.get("type") == "image" and isinstance(i.get("source"), dict)
            and i["source"].get("type") == "base64" and isinstance(i["source"].get("data"), str) for i in imgs):
        return None
    return PdfPages(path, pages, [i["source"]["data"] for i in imgs])


def _single_image_size(before: list, after: list) -> tuple[int, int] | None:
    """The new size of a tool_result's one image, when it was resized (not replaced by text)."""
    was = [i for i in before if isinstance(i, dict) and i.get("type") == "image"]
    now = [i for i in after if isinstance(i, dict) and i.get("type") == "image"]
    if len(was) != 1 or len(now) != 1:
        return None
    try:
        data = base64.b64decode(now[0]["source"]["data"])
    except (ValueError, KeyError, TypeError):
        return None
    return engine_media.image_size(data)


def _image_note(text: str, shown: tuple[int, int]) -> str | None:
    m = re.match(wire.config()["anthropic"]["image_note"], text)
    if not m:
        return None
    ow, oh = int(m.group(1)), int(m.group(2))
    w, h = shown
    return (f"[Image: original {ow}x{oh}, displayed at {w}x{h}. Multiply coordinates by {ow / w:.2f} "
            f"to map to original image.]")


def _splice_anthropic(items: list, fn: Transform, path: str | None) -> tuple[list, bool]:
    out, changed = [], False
    for item in items:
        new = _anthropic_block(item, fn, path)
        if new is None:
            out.append(item)
        else:
            out.extend(new)
            changed = True
    return out, changed


def _anthropic_block(b: Any, fn: Transform, path: str | None) -> list[dict] | None:
    if not isinstance(b, dict) or b.get("type") not in ("image", "document"):
        return None
    src = b.get("source")
    if not isinstance(src, dict) or src.get("type") != "base64" or not isinstance(src.get("data"), str):
        return None
    if len(src["data"]) < MIN_B64_CHARS:
        return None
    mt = src.get("media_type") if isinstance(src.get("media_type"), str) else None
    if b["type"] == "document" and mt != "application/pdf":
        return None
    parts = fn(Blob(mt, src["data"], path, "anthropic"))
    if parts is None:
        return None
    extra = {k: b[k] for k in ("cache_control",) if k in b}   # a cache breakpoint stays where it was
    blocks = [_anthropic_part(p) for p in parts]
    if extra and blocks:
        blocks[-1].update(extra)
    return blocks


def _anthropic_part(p: Part) -> dict:
    if p.kind == "text":
        return {"type": "text", "text": p.text}
    return {"type": "image", "source": {"type": "base64", "media_type": p.media_type,
                                        "data": base64.b64encode(p.data).decode("ascii")}}


# ---- OpenAI Responses -------------------------------------------------------------------------------
def _openai(body: dict, fn: Transform) -> bool:
    items = body.get("input")
    if not isinstance(items, list):
        return False
    changed = False
    for item in items:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message" and item.get("role") == "user" and isinstance(item.get("content"), list):
            new, c = _splice_openai(item["content"], fn)
            if c:
                item["content"], changed = new, True
        elif item.get("type") in ("function_call_output", "custom_tool_call_output") \
                and isinstance(item.get("output"), list):
            new, c = _splice_openai(item["output"], fn)
            if c:
                item["output"], changed = new, True
    return changed


def _splice_openai(items: list, fn: Transform) -> tuple[list, bool]:
    out, changed = [], False
    for c in items:
        new = _openai_block(c, fn)
        if new is None:
            out.append(c)
        else:
            out.extend(new)
            changed = True
    return out, changed


def _data_url(url: Any) -> tuple[str, str] | None:
    if not isinstance(url, str) or not url.startswith("data:") or ";base64," not in url[:100]:
        return None
    head, b64 = url.split(",", 1)
    return head[5:].split(";", 1)[0], b64


def _openai_block(c: Any, fn: Transform) -> list[dict] | None:
    if not isinstance(c, dict):
        return None
    if c.get("type") == "input_image":
        found = _data_url(c.get("image_url"))
    elif c.get("type") == "input_file":
        found = _data_url(c.get("file_data"))
        if found and found[0] != "application/pdf":
            return None
    else:
        return None
    if not found or len(found[1]) < MIN_B64_CHARS:
        return None
    path = c.get("filename") if isinstance(c.get("filename"), str) else None
    parts = fn(Blob(found[0], found[1], path, "openai"))
    if parts is None:
        return None
    detail = c.get("detail") if c.get("type") == "input_image" else None
    out = []
    for p in parts:
        if p.kind == "text":
            out.append({"type": "input_text", "text": p.text})
        else:
            block = {"type": "input_image",
                     "image_url": f"data:{p.media_type};base64,{base64.b64encode(p.data).decode('ascii')}"}
            if detail:
                block["detail"] = detail
            out.append(block)
    return out
