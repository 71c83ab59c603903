"""Reads are sacred: an agent's explicit view of a file passes whole; a whole-file read keeps
everything up to the read budget and beyond it shows the file's structure with line numbers.

Responsible for the "read_view" (sed -n a,bp, head -n, tail -n, nl | sed, an editor window)
and "read_file" (cat, nl, bat) transforms the rules table assigns. Not responsible for
classifying the command (observe/rules) nor for outlining (content/outline.py does it).
Invariant: a view within budgets.toml [reads] view_max_lines, and a file within the read
budget (read_tokens, in tokens), come back unchanged (lossless); beyond, source is outlined with
its line numbers (every declaration line exact; import runs and long signatures folded into one
marked line; conflict regions, unparsable spans and the declarations the intent names kept whole),
or, when the session's cues point into it, cut by the task as every door's read is
(observe/read_focus.py), and any other content goes to the transform its sniffed type names.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import replace

import tree_sitter

from capsule.observe.guard import budgets
from capsule.observe.transform_types import Context, Removal, TransformResult
from capsule.ground import tokens
from capsule.observe import markers, read_focus, registry
from capsule.observe.content import outline
from capsule.observe.content.outline import has_assignment, body_of, split_rows
from capsule.observe.content.outline import language_for
from capsule.observe.content.sniff import language_of, sniff
from capsule.observe.cues import empty

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
    budget = budgets()["aggressive" if ctx.mode == "aggressive" else "budgets"]["read_tokens"]
    source = unnumbered(text)
    family, transform_id, _ = sniff((source if source is not None else text)[:1024]
                                    .encode("utf-8", "surrogateescape"))
    path = ctx.path or path_of(ctx.command)
    editable = family.startswith(_EDITABLE) or _source_path(path) or family == "read"
    if editable and tokens.at_least(text) <= budget and tokens.count(text) <= budget:
        return _whole(text, f"file read: passed whole (<= {budget} tokens)")
    if editable:
        body = text if source is None else source
        if not family.startswith("source:") and not _source_path(path):
            lang = language_of(body[:8192])      # declarations further down than the first KiB
            family = f"source:{lang}" if lang else family
        outlined = _outline(body, ctx, path, family, budget)
        if outlined is not None:
            return _focused(body, ctx, path, family, outlined) or outlined
    if transform_id in ("outline", "read_file", "read_view"):
        transform_id = "default"      # no outline to give: the line budget
    return registry.get(transform_id)(text, replace(ctx, family=family))


def _source_path(path: str | None) -> bool:
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


def _focused(source: str, ctx: Context, path: str | None, family: str, structure: TransformResult) -> TransformResult | None:
    """The structure's declaration lines with the regions the task points at whole (observe/read_focus.py,
    the cut ctx_read serves): the session's cues read only here, when a file is over the read budget;
    None when nothing points (no cue, no region here, no grammar): the plain structure stands."""
    if ctx.cues is None:
        return None

    cue = ctx.cues()
    if empty(cue):
        return None
    name = path or ""
    if outline.language_for(name, source) is None:
        lang = family.split(":", 1)[1] if family.startswith("source:") else None
        ext = next((e for e, known in outline.EXTENSIONS.items() if known == lang), None)
        if ext is None:
            return None
        name = (path or "stdin") + ext
    bodies = outline.outline(source, name, ctx.languages, detail="signatures")
    if not bodies.removals:
        return None
    lines = source.split("\n")
    omitted = {n for r in structure.removals for n in range(r.start, r.end + 1)}
    folds = {(int(m[1]), int(m[2] or m[1])): f"parameters: {m[3]}"
             for m in map(_FOLD.match, structure.text.split("\n")) if m}
    for m in filter(None, map(_IMPORTS.match, structure.text.split("\n"))):    # one marker naming them, as folded
        folds[int(m[1]), int(m[2])] = m[3]
        omitted.update(range(int(m[1]), int(m[2]) + 1))
    got = read_focus.cut(source, path, set(range(1, len(lines) + 1)) - omitted, bodies, cue, folds)
    if got is None:
        return None
    shown, picked = got
    removals = [Removal(FOCUS_REASON, n, a, b, lines[a - 1].strip()[:120])
                for n, a, b in filter(None, map(markers.parse, shown)) if a is not None]
    summary = read_focus.summary(path or "FILE", len(lines) - (lines[-1] == ""), picked)
    return TransformResult("\n".join(shown) + "\n", "focus", removals=removals, notes=[summary])


# The runs the structure folds into one line (_render): a long signature's parameter lines
# (`    …A-B: a, b, c`) and a run of imports (`A-B: imports: a; b (c, d)`).
_FOLD = re.compile(r"^\s*…(\d+)(?:-(\d+))?: (.*)$")
_IMPORTS = re.compile(r"^(\d+)-(\d+): (imports: .*)$")
FOCUS_REASON = "outside the declarations and the task's regions: a file read beyond the read budget"


def _outline(source: str, ctx: Context, path: str | None, family: str, budget: int = 0) -> TransformResult | None:
    """The file's structure: every declaration header at every depth (nested functions and
    methods included), decorators, and the top-level imports and constants, each as
    `N: line`; plus, whole, the declarations the intent names (pointed_at); None when no
    grammar reads it."""
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

    tree = tree_sitter.Parser(language).parse(source.encode("utf-8", "surrogateescape"))
    lines = source.split("\n")
    total = len(lines) - (1 if lines and lines[-1] == "" else 0)
    rows, heads, imports = _declaration_rows(tree.root_node, outline.KINDS[lang], lines)
    exact = _needs_edit(tree.root_node, lines)
    regions = pointed_at(tree.root_node, outline.KINDS[lang], lines, _names_in(ctx), budget)
    exact |= regions
    rows = sorted(r for r in rows | exact if r < total)
    if not rows or len(rows) >= total:
        return None
    out, shown = _render(rows, {r: h for r, h in heads.items() if not exact & set(range(r, h[0] + 1))},
                         imports, lines)
    target = path or "FILE"
    out.append(f"[structure: {len(shown)} of {total} lines shown with their numbers; "
               f"read a range whole: sed -n 'A,Bp' {target}]")
    removals, run = [], []
    for r in list(range(total)) + [total]:
        if r < total and r not in shown:
            run.append(r)
            continue
        if run:
            removals.append(Removal("inside a body: a file read beyond the read budget shows its "
                                    "structure", len(run), run[0] + 1, run[-1] + 1,
                                    lines[run[0]].strip()[:120]))
            run = []
    return TransformResult("\n".join(out) + "\n", "outline", removals=removals,
                           notes=[f"{lang} structure, every depth"]
                           + ([f"{len(regions)} lines of the declarations pointed at, whole"] if regions else []))


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


def _names_in(ctx: Context) -> list[str]:
    """The identifiers the step's goal names, in order (each once)."""
    return list(dict.fromkeys(_IDENT.findall(ctx.intent or "")))


def pointed_at(root, kinds, lines: list[str], names: list[str], budget: int) -> set[int]:
    """Rows of the declarations (functions first, then the smallest containers) whose name is
    one of `names`, whole, while their tokens together stay within `budget`: what the agent is
    about to edit is shown, not outlined (issue 25)."""
    if not names:
        return set()
    wanted = set(names)
    found: list[tuple[int, int, int]] = []      # (kind rank, start row, end row)
    stack = [root]
    while stack:
        node = stack.pop()
        t = node.type
        if t in kinds.function or t in kinds.container or t in kinds.typedecl:
            name = node.child_by_field_name("name")
            if name is not None and name.text.decode("utf-8", "replace") in wanted:
                rank = 0 if t in kinds.function else 1
                found.append((rank, node.start_point.row, node.end_point.row))
        stack.extend(node.named_children)
    rows: set[int] = set()
    spent = 0
    for _, a, b in sorted(found, key=lambda f: (f[0], f[2] - f[1], f[1])):
        cost = tokens.count("\n".join(lines[a:b + 1]))
        if spent + cost > budget:
            continue
        spent += cost
        rows.update(range(a, b + 1))
    return rows


_COMMENT = ("#", "//", "/*", "* ", "--")
_CONFLICT = re.compile(r"^(<{7}|\|{7}|>{7})(?: |$)|^={7}$")
CONFLICT_MAX = 40  # a conflict region up to this many lines is shown whole, a longer one by its markers
IMPORT_RUN = 4     # this many imports in a row (nothing else kept between) become one line naming them


def _render(rows: list[int], heads: dict, imports: dict, lines: list[str]) -> tuple[list[str], set[int]]:
    """`N: line` for each kept row, except: a run of IMPORT_RUN+ imports is one `A-B: imports:`
    line naming each module; a signature of 3+ lines keeps its first and last line with the
    parameters named between (each only when shorter than the lines it replaces)."""
    out: list[str] = []
    shown: set[int] = set()
    i = 0
    while i < len(rows):
        r = rows[i]
        j = i
        while j + 1 < len(rows) and rows[j + 1] in imports and r in imports:
            j += 1
        if j - i + 1 >= IMPORT_RUN:
            names = _import_list([imports[x] for x in rows[i:j + 1]])
            line = f"{r + 1}-{rows[j] + 1}: imports: {names}"
            if len(line) < sum(len(lines[x]) + 6 for x in rows[i:j + 1]):
                out.append(line)
                shown.update(rows[i:j + 1])
                i = j + 1
                continue
        head = heads.get(r)
        if head is not None and head[0] - r >= 2:
            end, params = head
            middle = [x for x in rows[i + 1:] if x < end]
            indent = lines[r][:len(lines[r]) - len(lines[r].lstrip())]
            span = f"{r + 2}-{end}" if end - r > 2 else f"{r + 2}"
            line = f"{indent}    …{span}: " + (", ".join(params) if params else f"{end - r - 1} lines")
            if len(line) < sum(len(lines[x]) + 6 for x in middle):
                out.append(f"{r + 1}: {lines[r]}")
                out.append(line)
                out.append(f"{end + 1}: {lines[end]}")
                shown.update({r, end})
                i += len(middle) + 2
                continue
        out.append(f"{r + 1}: {lines[r]}")
        shown.add(r)
        i += 1
    return out, shown


def _needs_edit(root, lines: list[str]) -> set[int]:
    """Rows the next edit is about, whatever the structure: merge-conflict regions (markers and
    both sides; only the markers of a region over CONFLICT_MAX lines) and the first row of each
    span the grammar could not parse."""
    rows: set[int] = set()
    markers = [i for i, ln in enumerate(lines) if _CONFLICT.match(ln)]
    start = None
    for i in markers:
        rows.add(i)
        if lines[i].startswith("<<<<<<<"):
            start = i
        elif lines[i].startswith(">>>>>>>") and start is not None:
            if i - start < CONFLICT_MAX:
                rows.update(range(start, i + 1))
            start = None
    stack = [root] if root.has_error else []
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            rows.add(node.start_point.row)
        stack.extend(c for c in node.children if c.has_error or c.is_missing)
    return rows


def _param_names(node) -> list[str]:
    """The names a declaration's parameter list declares (`reverse: bool = False` -> reverse)."""
    params = node.child_by_field_name("parameters")
    if params is None:
        return []
    names = []
    for c in params.named_children:
        if c.type == "comment":
            continue
        text = " ".join(c.text.decode("utf-8", "replace").split())
        names.append(re.split(r"\s*[:=]", text, maxsplit=1)[0][:40])
    return names


def _import_names(node) -> tuple[str, str | None]:
    """`from a.b import (c, d)` -> (a.b, c, d), `import x as y` -> (x as y, None); other languages'
    import statements as written, on one line."""
    text = " ".join(node.text.decode("utf-8", "replace").replace("(", " ").replace(")", " ").split())
    m = re.match(r"^from (\S+) import (.+)$", text)
    if m:
        return m.group(1), m.group(2).rstrip(",").strip()
    return re.sub(r"^(?:import|use) ", "", text).rstrip(";").strip(), None


def _import_list(items: list[tuple[str, str | None]]) -> str:
    """One entry per module, in order: names imported from the same module one after another merge."""
    merged: list[list] = []
    for mod, names in items:
        if names is not None and merged and merged[-1][0] == mod and merged[-1][1] is not None:
            merged[-1][1] += ", " + names
        else:
            merged.append([mod, names])
    return "; ".join(mod if names is None else f"{mod} ({names})" for mod, names in merged)


def _declaration_rows(root, kinds, lines: list[str]) -> tuple[set[int], dict, dict]:
    """(kept rows, {first row of a multi-line head: (its last row, parameter names)},
    {row of a top-level import: what it imports})."""
    rows: set[int] = set()
    heads: dict[int, tuple[int, list[str]]] = {}
    imports: dict[int, str] = {}
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        t = node.type
        if t in kinds.function or t in kinds.container or t in kinds.typedecl:
            start = node.start_point.row
            body = body_of(node, kinds)
            head_end = start
            if body is not None and body.start_point.row > start:
                head_end = split_rows(node, body, lines)[0]
                while head_end > start and lines[head_end].lstrip().startswith(_COMMENT):
                    head_end -= 1      # comments above the first statement are body, not head
            rows.update(range(start, head_end + 1))
            if head_end > start:
                heads[start] = (head_end, _param_names(node))
        elif t in kinds.wrapper:
            inner = [c for c in node.named_children if c.type in kinds.function or
                     c.type in kinds.container or c.type in kinds.typedecl]
            if inner:
                rows.update(range(node.start_point.row, inner[0].start_point.row))
        elif depth == 1 and t in kinds.line:
            if t == "expression_statement" and not has_assignment(node):
                pass
            else:
                rows.add(node.start_point.row)
                if "import" in t or t == "use_declaration":
                    imports[node.start_point.row] = _import_names(node)
        stack.extend((c, depth + 1) for c in node.named_children)
    return rows, heads, imports


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
