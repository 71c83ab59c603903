"""Extractive prose shrinking: sentences scored by BM25 against the intent, position and
salience; near-duplicates suppressed; the best sentences kept in their original order.

Not responsible for markdown structure (markdown.py slices sections first) nor for rewriting:
nothing is paraphrased. Fenced code blocks are kept whole.
Invariant: every kept sentence is an exact substring of the input, so fences, inline code,
URLs, paths, versions, numbers and identifiers pass byte-exact; sentences are never split
inside such a span.
"""

from __future__ import annotations

import re

from capsule.observe.content.markdown import bm25
from capsule.observe.transform_types import Context, Removal, TransformResult

TRANSFORM_ID = "prose"
MIN_SENTENCES = 12        # shorter texts are left alone
KEEP_SHARE = 0.35         # share of sentences kept (at least MIN_KEEP)
MIN_KEEP = 6
NEAR_DUP = 0.8            # word-set Jaccard above which a sentence repeats a kept one

# spans a sentence boundary may never fall inside
_PROTECTED = re.compile(
    r"`[^`\n]+`"                                   # inline code
    r"|\b[a-z][a-z0-9+.-]*://[^\s)>\]]+"           # URLs
    r"|(?:~|\.{1,2})?/[\w.@%+-]+(?:/[\w.@%+-]+)+"  # paths
    r"|\b[\w-]+(?:\.[\w-]+)+\.\w+"                 # dotted names, files, hosts
    r"|\bv?\d+(?:\.\d+)+(?:[-+.][\w.]+)?"          # versions and decimals
    r"|\b(?:e\.g|i\.e|etc|vs|cf|Dr|Mr|Mrs|Ms|No|Fig|approx)\."  # abbreviations
    r"|\b[A-Z]\."                                  # initials and list letters
)
_TABLE = re.compile(r"\S {2,}\S.* {2,}\S|\|.*\|")
_BOUNDARY = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]*[A-Z0-9`*_])")
_FENCE = re.compile(r"^\s*(```+|~~~+)")
_SALIENT = re.compile(r"`|\d|://|\b(?:must|never|always|only|note|warning|important|require[sd]?|"
                      r"default|deprecated|breaking|error|fail\w*)\b", re.I)
_WORD = re.compile(r"[A-Za-z0-9_]{2,}")


def split_sentences(paragraph: str) -> list[str]:
    """Split a paragraph into sentences, never inside a protected span."""
    protected = [(m.start(), m.end()) for m in _PROTECTED.finditer(paragraph)]
    cuts = []
    for m in _BOUNDARY.finditer(paragraph):
        at = m.start()
        if any(a <= at - 1 < b for a, b in protected):
            continue
        cuts.append((m.start(), m.end()))
    out, pos = [], 0
    for a, b in cuts:
        out.append(paragraph[pos:a])
        pos = b
    out.append(paragraph[pos:])
    return [s for s in out if s.strip()]


def _blocks(text: str) -> list[tuple[str, str]]:
    """(kind, text) blocks: "fence" (kept whole), "para" (prose), "blank"."""
    blocks: list[tuple[str, str]] = []
    buf: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        f = _FENCE.match(line)
        if fence is not None:
            buf.append(line)
            if f and f.group(1)[0] == fence:
                blocks.append(("fence", "\n".join(buf)))
                buf, fence = [], None
            continue
        if f:
            if buf:
                blocks.append(("para", "\n".join(buf)))
            buf, fence = [line], f.group(1)[0]
            continue
        if not line.strip():
            if buf:
                blocks.append(("para", "\n".join(buf)))
                buf = []
            blocks.append(("blank", line))
            continue
        buf.append(line)
    if buf:
        blocks.append(("fence" if fence else "para", "\n".join(buf)))
    return blocks


def _words(s: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(s)}


def shrink(text: str, ctx: Context) -> TransformResult:
    """Transform entry point."""
    blocks = _blocks(text)
    units: list[tuple[int, int, str]] = []     # (block, index in block, sentence)
    per_block: dict[int, list[str]] = {}
    for b, (kind, body) in enumerate(blocks):
        if kind == "para" and sum(1 for ln in body.split("\n") if _TABLE.search(ln)) * 2 \
                >= body.count("\n") + 1:
            blocks[b] = ("fence", body)     # a table or aligned listing: kept whole
        elif kind == "para":
            sents = split_sentences(body)
            per_block[b] = sents
            units.extend((b, k, s) for k, s in enumerate(sents))
    if len(units) < MIN_SENTENCES:
        return TransformResult(text, TRANSFORM_ID, lossless=True, notes=["short prose"])
    query = [w.lower() for w in _WORD.findall(ctx.intent or "")]
    rel = bm25(query, [[w.lower() for w in _WORD.findall(s)] for _, _, s in units])
    top = max(rel) or 1.0
    n_paras = max(1, len(per_block))
    scored = []
    for u, (b, k, s) in enumerate(units):
        para_rank = sorted(per_block).index(b)
        position = (1.0 if k == 0 else 0.3) * (1.0 if para_rank == 0 else 0.6) \
            + (0.3 if para_rank == n_paras - 1 else 0.0)
        salience = min(len(_SALIENT.findall(s)), 4) / 4.0
        scored.append((2.0 * rel[u] / top + position + salience, u))
    budget = max(MIN_KEEP, int(len(units) * KEEP_SHARE))
    kept: set[int] = set()
    kept_words: list[set[str]] = []
    dups = 0
    for score, u in sorted(scored, key=lambda p: (-p[0], p[1])):
        if len(kept) >= budget:
            break
        w = _words(units[u][2])
        if w and any(len(w & o) / len(w | o) > NEAR_DUP for o in kept_words):
            dups += 1
            continue
        kept.add(u)
        kept_words.append(w)
    keep_pairs = {(units[u][0], units[u][1]) for u in kept}
    out: list[str] = []
    removals: list[Removal] = []
    line_no = 1
    for b, (kind, body) in enumerate(blocks):
        lines_here = body.count("\n") + 1
        if kind != "para":
            out.append(body)
        else:
            sents = per_block[b]
            chosen = [s for k, s in enumerate(sents) if (b, k) in keep_pairs]
            dropped = [s for k, s in enumerate(sents) if (b, k) not in keep_pairs]
            if dropped:
                whole = not chosen
                removals.append(Removal(
                    "sentences below the relevance cut" if not whole else "paragraph below the relevance cut",
                    lines_here if whole else 0, line_no, line_no + lines_here - 1,
                    dropped[0].strip()[:120]))
            if chosen:
                out.append(" ".join(s.strip() for s in chosen))
        line_no += lines_here
    body = "\n".join(out)
    body = re.sub(r"\n{3,}", "\n\n", body)
    notes = [f"{len(kept)} of {len(units)} sentences kept"] + ([f"{dups} near-duplicates"] if dups else [])
    return TransformResult(body, TRANSFORM_ID, removals=removals, notes=notes)
