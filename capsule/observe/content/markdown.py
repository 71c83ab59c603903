"""Markdown section slicing, and HTML turned into markdown (scripts, styles, navigation gone).

Responsible for: `sections()` (the heading tree, fences respected), `section()` (one section
by heading), `slice_markdown` (every heading of level <= KEEP_LEVEL kept, the sections that
best match the intent kept whole, the rest elided as `{ … N lines }`), and `html_to_markdown`.
Not responsible for sentence-level prose shrinking (prose.py).
Invariant: kept lines are original lines, byte-exact and in order; a fenced block is never
cut in half.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from html.parser import HTMLParser

from capsule.observe.transform_types import Context, Removal, TransformResult

TRANSFORM_ID = "markdown"
KEEP_LEVEL = 2            # headings this deep or shallower always stay visible
MIN_LINES = 80            # shorter documents are left alone
SECTION_BUDGET = 0.25     # share of the document's lines the best sections may fill
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```+|~~~+)")
_WORD = re.compile(r"[A-Za-z0-9_]{2,}")
_STOP = frozenset("the and for with from this that what which how are was were you your "
                  "read find check show get see into about its it's can all any".split())


@dataclass
class Section:
    level: int
    title: str
    start: int        # row of the heading (0-based); preamble has start 0 and level 0
    end: int          # last row (inclusive) before the next heading of any level
    stop: int = 0     # last row of the section including its subsections


def sections(lines: list[str]) -> list[Section]:
    out: list[Section] = [Section(0, "", 0, -1)]
    fence = None
    for i, ln in enumerate(lines):
        f = _FENCE.match(ln)
        if f:
            mark = f.group(1)[0]
            fence = None if fence == mark else (fence or mark)
            continue
        if fence:
            continue
        m = _HEADING.match(ln)
        if m:
            out[-1].end = i - 1
            out.append(Section(len(m.group(1)), m.group(2), i, -1))
    out[-1].end = len(lines) - 1
    for k, s in enumerate(out):
        s.stop = s.end
        for later in out[k + 1:]:
            if s.level and later.level <= s.level:
                break
            s.stop = later.end
        if not s.level:
            s.stop = s.end
    if out[0].end < 0:
        out.pop(0)
    return out


def section(text: str, heading: str) -> str | None:
    """The text of the first section whose heading contains `heading` (case-insensitive),
    subsections included; None when there is none."""
    lines = text.split("\n")
    want = heading.strip().lstrip("#").strip().lower()
    for s in sections(lines):
        if s.level and want in s.title.lower():
            return "\n".join(lines[s.start:s.stop + 1])
    return None


def _terms(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text) if w.lower() not in _STOP]


def bm25(query: list[str], docs: list[list[str]], k1: float = 1.2, b: float = 0.75) -> list[float]:
    n = len(docs)
    if not n or not query:
        return [0.0] * n
    avg = sum(len(d) for d in docs) / n or 1.0
    df: dict[str, int] = {}
    for d in docs:
        for t in set(d):
            df[t] = df.get(t, 0) + 1
    scores = []
    for d in docs:
        tf: dict[str, int] = {}
        for t in d:
            tf[t] = tf.get(t, 0) + 1
        s = 0.0
        for q in set(query):
            if q in tf:
                idf = math.log(1 + (n - df[q] + 0.5) / (df[q] + 0.5))
                s += idf * tf[q] * (k1 + 1) / (tf[q] + k1 * (1 - b + b * len(d) / avg))
        scores.append(s)
    return scores


def slice_markdown(text: str, ctx: Context) -> TransformResult:
    """Transform entry point for markdown."""
    lines = text.split("\n")
    trailing = bool(lines) and lines[-1] == ""
    if trailing:
        lines = lines[:-1]
    if len(lines) < MIN_LINES:
        return TransformResult(text, TRANSFORM_ID, lossless=True, notes=["short document"])
    secs = sections(lines)
    if len(secs) < 2:
        return TransformResult(text, TRANSFORM_ID, notes=["no headings to slice by"])
    keep = [False] * len(lines)
    for s in secs:
        if s.level <= KEEP_LEVEL:
            keep[s.start] = True
    # the preamble (or first section) shows what the document is
    first = secs[0]
    for r in range(first.start, min(first.end, first.start + 12) + 1):
        keep[r] = True
    query = _terms(ctx.intent or "")
    chosen: list[Section] = []
    if query:
        # leaf-level scoring: each heading's own body plus its title (title counts double)
        docs = [_terms(s.title) * 2 + _terms("\n".join(lines[s.start:s.end + 1])) for s in secs]
        scores = bm25(query, docs)
        budget = max(40, int(len(lines) * SECTION_BUDGET))
        used = 0
        for score, s in sorted(zip(scores, secs), key=lambda p: (-p[0], p[1].start)):
            if score <= 0:
                break
            size = s.stop - s.start + 1
            if size > budget or (used + size > budget and chosen):
                continue
            chosen.append(s)
            used += size
            if used >= budget:
                break
    for s in chosen:
        for r in range(s.start, s.stop + 1):
            keep[r] = True
    out: list[str] = []
    removals: list[Removal] = []
    run: list[int] = []
    for i in range(len(lines) + 1):
        if i < len(lines) and not keep[i]:
            run.append(i)
            continue
        if run:
            removals.append(Removal("section body not matching the intent", len(run),
                                    run[0] + 1, run[-1] + 1, lines[run[0]].strip()[:120]))
            if out:
                n = len(run)
                out[-1] += f" {{ … {n} line{'s' if n != 1 else ''} }}"
            run = []
        if i < len(lines):
            out.append(lines[i])
    note = f"{len(chosen)} sections kept for the intent" if chosen else "heading outline"
    return TransformResult("\n".join(out) + ("\n" if trailing else ""), TRANSFORM_ID,
                           removals=removals, notes=[note])


# ---------------------------------------------------------------- HTML -> markdown

_DROP = {"script", "style", "nav", "noscript", "svg", "template", "iframe", "form", "button",
         "select", "canvas", "object", "embed", "head", "aside", "footer"}
_BLOCK = {"p", "div", "section", "article", "main", "header", "ul", "ol", "table", "tr",
          "blockquote", "figure", "figcaption", "dl", "dt", "dd", "hr", "body", "html"}
_VOID = {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source",
         "track", "wbr", "param"}


class _ToMarkdown(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.drop = 0
        self.pre = 0
        self.list_stack: list[list] = []
        self.href: list[str | None] = []
        self.cells: list[str] | None = None
        self.row_count = 0

    def _emit(self, s: str) -> None:
        if self.cells is not None and not self.pre:
            self.cells[-1] += s if self.cells else ""
            return
        self.out.append(s)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if self.drop or tag in _DROP or a.get("role") in ("navigation", "banner", "contentinfo") \
                or a.get("aria-hidden") == "true" or "hidden" in a:
            if tag not in _VOID:
                self.drop += 1
            return
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self._emit("\n\n" + "#" * int(tag[1]) + " ")
        elif tag == "pre":
            self.pre += 1
            self._emit("\n\n```\n")
        elif tag == "code" and not self.pre:
            self._emit("`")
        elif tag in ("strong", "b"):
            self._emit("**")
        elif tag in ("em", "i"):
            self._emit("*")
        elif tag == "a":
            self.href.append(a.get("href"))
            self._emit("[")
        elif tag == "img":
            self._emit(f"![{a.get('alt') or ''}]({a.get('src') or ''})")
        elif tag == "br":
            self._emit("\n")
        elif tag in ("ul", "ol"):
            self.list_stack.append([tag, 0])
            self._emit("\n")
        elif tag == "li":
            depth = max(0, len(self.list_stack) - 1)
            kind = self.list_stack[-1] if self.list_stack else ["ul", 0]
            kind[1] += 1
            bullet = f"{kind[1]}." if kind[0] == "ol" else "-"
            self._emit("\n" + "  " * depth + bullet + " ")
        elif tag == "tr":
            self.cells = []
        elif tag in ("td", "th") and self.cells is not None:
            self.cells.append("")
        elif tag == "blockquote":
            self._emit("\n\n> ")
        elif tag == "hr":
            self._emit("\n\n---\n\n")
        elif tag in _BLOCK:
            self._emit("\n\n")

    def handle_endtag(self, tag):
        if self.drop:
            if tag in _DROP or tag not in _VOID:
                self.drop -= 1
            return
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self._emit("\n\n")
        elif tag == "pre":
            self.pre = max(0, self.pre - 1)
            self._emit("\n```\n\n")
        elif tag == "code" and not self.pre:
            self._emit("`")
        elif tag in ("strong", "b"):
            self._emit("**")
        elif tag in ("em", "i"):
            self._emit("*")
        elif tag == "a":
            href = self.href.pop() if self.href else None
            self._emit(f"]({href})" if href and not href.startswith("javascript:") else "]")
        elif tag in ("ul", "ol"):
            if self.list_stack:
                self.list_stack.pop()
            self._emit("\n\n")
        elif tag == "tr" and self.cells is not None:
            cells = [" ".join(c.split()) for c in self.cells]
            self.cells = None
            self.out.append("\n| " + " | ".join(cells) + " |")
            if self.row_count == 0:
                self.out.append("\n|" + "---|" * len(cells))
            self.row_count += 1
        elif tag == "table":
            self.row_count = 0
            self._emit("\n\n")
        elif tag in _BLOCK:
            self._emit("\n\n")

    def handle_data(self, data):
        if self.drop:
            return
        if self.pre:
            self._emit(data)
        else:
            self._emit(re.sub(r"\s+", " ", data))


def html_to_markdown(html: str) -> str:
    parser = _ToMarkdown()
    parser.feed(html)
    parser.close()
    text = "".join(parser.out)
    lines = [ln.rstrip() for ln in text.split("\n")]
    out: list[str] = []
    for ln in lines:
        if not ln.strip() and out and not out[-1].strip():
            continue
        out.append(ln if ln.startswith(("  ", "\t")) else ln.lstrip(" ") if not ln.startswith(" -") else ln)
    return "\n".join(out).strip() + "\n"


def html(text: str, ctx: Context) -> TransformResult:
    """Transform entry point for HTML: markdown first, then sliced like any markdown."""
    md = html_to_markdown(text)
    sliced = slice_markdown(md, ctx)
    total = text.count("\n") + 1
    removals = [Removal("HTML markup, scripts, styles and navigation", max(0, total - md.count("\n")))]
    removals += sliced.removals
    return TransformResult(sliced.text, TRANSFORM_ID, removals=removals,
                           notes=["HTML converted to markdown"] + sliced.notes)
