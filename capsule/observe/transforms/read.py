"""Reads are sacred: an agent's explicit view of a file passes whole; a whole-file read keeps
everything up to the read budget and beyond it shows the file's structure with line numbers.

Responsible for the "read_view" (sed -n a,bp, head -n, tail -n, nl | sed, an editor window)
and "read_file" (cat, nl, bat) transforms the rules table assigns. Not responsible for
classifying the command (observe/rules) nor for outlining (content/outline.py does it).
Invariant: a view within budgets.toml [reads] view_max_lines, and a file within the read
budget, come back unchanged (lossless); beyond, source is outlined with its line numbers and
any other content goes to the transform its sniffed type names.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import replace

from capsule.observe.guard import budgets
from capsule.observe.types import Context, Removal, TransformResult

# `nl -ba`/`cat -n` output (a right-aligned number and a tab before each line), or an agent's
# Read tool (`  12→code`)
_NUMBERED = re.compile(r"^ *(\d+)(?:\t|→)")
# Content that stays whole up to the budget: what an agent reads in order to edit it. Data
# (JSON, CSV, logs, binary) keeps the typed transform its sniffing names.
_EDITABLE = ("source:", "markdown", "prose", "toml", "yaml", "unknown")


def _lines(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def _whole(text: str, why: str) -> TransformResult:
    return TransformResult(text, "read", lossless=True, notes=[why])


def view(text: str, ctx: Context) -> TransformResult:
    """An explicitly bounded view: whole, unless it is larger than any reading window."""
    limit = budgets()["reads"]["view_max_lines"]
    if _lines(text) <= limit:
        return _whole(text, f"bounded view: passed whole (<= {limit} lines)")
    return read_file(text, ctx)


def read_file(text: str, ctx: Context) -> TransformResult:
    """A whole-file read: whole up to the read budget, then structure with line numbers."""
    from capsule.observe import registry
    from capsule.observe.content.sniff import sniff

    budget = budgets()["aggressive" if ctx.mode == "aggressive" else "budgets"]["read"]
    source = unnumbered(text)
    family, transform_id, _ = sniff((source if source is not None else text)[:1024]
                                    .encode("utf-8", "surrogateescape"))
    path = ctx.path or path_of(ctx.command)
    editable = family.startswith(_EDITABLE) or _source_path(path) or family == "read"
    if editable and _lines(text) <= budget:
        return _whole(text, f"file read: passed whole (<= {budget} lines)")
    if editable:
        body = text if source is None else source
        if not family.startswith("source:") and not _source_path(path):
            from capsule.observe.content.sniff import language_of

            lang = language_of(body[:8192])      # declarations further down than the first KiB
            family = f"source:{lang}" if lang else family
        outlined = _outline(body, ctx, path, family)
        if outlined is not None:
            return outlined
    if transform_id in ("outline", "read_file", "read_view"):
        transform_id = "default"      # no outline to give: the line budget
    return registry.get(transform_id)(text, replace(ctx, family=family))


def _source_path(path: str | None) -> bool:
    from capsule.observe.content.outline import language_for

    return bool(path) and language_for(path, "") is not None


def unnumbered(text: str) -> str | None:
    """The file behind a numbered read whose numbers run from 1 (so the outline's own line
    numbers are the same), else None."""
    lines = text.split("\n")
    numbered = [_NUMBERED.match(ln) for ln in lines if ln]
    if not numbered or not all(numbered):
        return None
    if [int(m.group(1)) for m in numbered] != list(range(1, len(numbered) + 1)):
        return None
    return "\n".join(_NUMBERED.sub("", ln, count=1) for ln in lines)


def _outline(source: str, ctx: Context, path: str | None, family: str) -> TransformResult | None:
    """The file's structure: every declaration header at every depth (nested functions and
    methods included), decorators, and the top-level imports and constants, each as
    `N: line`; None when no grammar reads it."""
    from capsule.observe.content import outline

    name = path or ""
    lang = outline.language_for(name, source)
    if lang is None and family.startswith("source:"):
        lang = family.split(":", 1)[1]
    if lang not in outline.KINDS:
        return None
    try:
        language = outline.load(lang, ctx.languages)
    except LookupError:
        return None
    import tree_sitter

    tree = tree_sitter.Parser(language).parse(source.encode("utf-8", "surrogateescape"))
    lines = source.split("\n")
    total = len(lines) - (1 if lines and lines[-1] == "" else 0)
    rows = _declaration_rows(tree.root_node, outline.KINDS[lang], lines)
    rows = sorted(r for r in rows if r < total)
    if not rows or len(rows) >= total:
        return None
    out = [f"{r + 1}: {lines[r]}" for r in rows]
    target = path or "FILE"
    out.append(f"[structure: {len(rows)} of {total} lines shown with their numbers; "
               f"read a range whole: sed -n 'A,Bp' {target}]")
    removals, run = [], []
    kept = set(rows)
    for r in list(range(total)) + [total]:
        if r < total and r not in kept:
            run.append(r)
            continue
        if run:
            removals.append(Removal("inside a body: a file read beyond the read budget shows its "
                                    "structure", len(run), run[0] + 1, run[-1] + 1,
                                    lines[run[0]].strip()[:120]))
            run = []
    return TransformResult("\n".join(out) + "\n", "outline", removals=removals,
                           notes=[f"{lang} structure, every depth"])


def _declaration_rows(root, kinds, lines: list[str]) -> set[int]:
    from capsule.observe.content.outline import _assigns, _body, _split

    rows: set[int] = set()
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        t = node.type
        if t in kinds.function or t in kinds.container or t in kinds.typedecl:
            start = node.start_point.row
            body = _body(node, kinds)
            head_end = start
            if body is not None and body.start_point.row > start:
                head_end = _split(node, body, lines)[0]
            rows.update(range(start, head_end + 1))
        elif t in kinds.wrapper:
            inner = [c for c in node.named_children if c.type in kinds.function or
                     c.type in kinds.container or c.type in kinds.typedecl]
            if inner:
                rows.update(range(node.start_point.row, inner[0].start_point.row))
        elif depth == 1 and t in kinds.line:
            if t == "expression_statement" and not _assigns(node):
                pass
            else:
                rows.add(node.start_point.row)
        stack.extend((c, depth + 1) for c in node.named_children)
    return rows


def path_of(command: str | None) -> str | None:
    """The file a simple read names (`cat -n src/a.py` -> src/a.py), else None."""
    if not command:
        return None
    try:
        words = shlex.split(command.split("|")[0])
    except ValueError:
        return None
    files = [w for w in words[1:] if not w.startswith("-")]
    return files[-1] if files else None
