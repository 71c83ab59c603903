"""Screenshots of text: is an image mostly text (Tesseract decides), and which workspace file holds it.

Responsible for the "mostly text" rule on OCR words and for matching them against the workspace's
text files (bounded walk: file count, size and time). Not responsible for OCR itself (ocr.py) or
for what the agent is sent. Invariant: a pointer is only offered when a real file holds at least
min_source_recall of the screenshot's distinct words; anything uncertain answers None.
"""

from __future__ import annotations

import os
import re
import time
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Iterable

from capsule.observe.media.ocr import Word, confident

_TOKEN = re.compile(r"[A-Za-z0-9_]+")


@lru_cache(maxsize=1)
def rules() -> dict:
    return tomllib.loads(resources.files("capsule.observe.media").joinpath("data/rules.toml").read_text())


def _rule(name: str, overrides: dict | None):
    return (overrides or {}).get(name, rules()["screenshot"][name])


@dataclass(frozen=True)
class TextShare:
    words: int            # confident words
    area: float           # share of the image their boxes cover
    mostly_text: bool


def text_share(found: list[Word], width: int, height: int, overrides: dict | None = None,
               content: int | None = None) -> TextShare:
    """`content`: the pixels of the image's content box (image.content_area); the share is of that."""
    good = confident(found, float(_rule("min_conf", overrides)))
    good = [w for w in good if sum(c.isalnum() for c in w.text) >= 2]
    area = sum(w.width * w.height for w in good) / max(1, min(content or width * height, width * height))
    mostly = len(good) >= int(_rule("min_words", overrides)) and area >= float(_rule("min_text_area", overrides))
    return TextShare(len(good), round(area, 4), mostly)


@dataclass(frozen=True)
class Source:
    path: str             # workspace-relative
    recall: float         # share of the screenshot's distinct words the file holds
    first_line: int       # the lines the screenshot shows (1-based), as far as they match
    last_line: int
    words: int


def tokens_of(text: str, min_chars: int) -> set[str]:
    return {t.lower() for t in _TOKEN.findall(text) if len(t) >= min_chars}


def find_source(found: list[Word], files: Iterable[tuple[str, str]], overrides: dict | None = None) -> Source | None:
    """The file (rel path, text) that holds the screenshot's words, or None."""
    min_chars = int(_rule("min_token_chars", overrides))
    good = confident(found, float(_rule("min_conf", overrides)))
    wanted = tokens_of(" ".join(w.text for w in good), min_chars)
    if len(wanted) < int(_rule("min_words", overrides)) // 2:
        return None
    best: tuple[float, str, str] | None = None
    for rel, text in files:
        have = tokens_of(text, min_chars)
        recall = len(wanted & have) / len(wanted)
        if best is None or recall > best[0] or (recall == best[0] and rel < best[1]):
            best = (recall, rel, text)
    if best is None or best[0] < float(_rule("min_source_recall", overrides)):
        return None
    first, last = _lines(good, best[2], min_chars)
    return Source(best[1], round(best[0], 3), first, last, len(wanted))


def _lines(good: list[Word], text: str, min_chars: int) -> tuple[int, int]:
    """The file's lines that hold a whole OCR line's words: the shown range."""
    by_line: dict[tuple[int, int, int], list[str]] = {}
    for w in good:
        by_line.setdefault(w.line, []).append(w.text)
    file_lines = [tokens_of(line, min_chars) for line in text.split("\n")]
    hits = []
    for words in by_line.values():
        need = tokens_of(" ".join(words), min_chars)
        if len(need) < 2:
            continue
        for n, have in enumerate(file_lines, 1):
            if need <= have:
                hits.append(n)
                break
    if not hits:
        return 1, len(file_lines)
    return min(hits), max(hits)


def workspace_files(root: Path | str, overrides: dict | None = None) -> Iterable[tuple[str, str]]:
    """(relative path, text) of the workspace's text files: bounded by count, size and time, in a
    fixed order (so the same workspace gives the same answer)."""
    root = Path(root)
    exts = {e.lower() for e in _rule("source_extensions", overrides)}
    skip = set(_rule("skip_dirs", overrides))
    max_files, max_bytes = int(_rule("max_files", overrides)), int(_rule("max_file_bytes", overrides))
    deadline = time.monotonic() + float(_rule("budget_s", overrides))
    seen = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in skip and not d.startswith("."))
        for name in sorted(filenames):
            if name.rsplit(".", 1)[-1].lower() not in exts or "." not in name:
                continue
            if seen >= max_files or time.monotonic() > deadline:
                return
            path = Path(dirpath) / name
            try:
                if path.is_symlink() or path.stat().st_size > max_bytes:
                    continue
                data = path.read_bytes()
            except OSError:
                continue
            seen += 1
            if b"\0" in data[:4096]:
                continue
            yield str(path.relative_to(root)), data.decode("utf-8", "replace")
