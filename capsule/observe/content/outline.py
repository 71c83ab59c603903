"""Code outline: declaration lines kept, bodies elided as `{ … N lines }`, parsed by tree-sitter.

Responsible for outlining source in the languages of LANGUAGES (one grammar wheel each; only
the grammars a role lists are loaded). Not responsible for reading files (the MCP read door
passes text) nor for choosing the read mode. Never regex or brace counting.
Invariant: every kept line is an original line, byte-exact and in order, prefixed by its
1-based line number; every other line is accounted for by exactly one Removal.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

import tree_sitter

from capsule.observe.transform_types import Context, Removal, TransformResult

TRANSFORM_ID = "outline"
WHOLE_TYPE_LINES = 15     # struct/enum/interface bodies up to this many lines are kept whole

# language -> (module, function returning the grammar pointer)
GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "rust": ("tree_sitter_rust", "language"),
    "go": ("tree_sitter_go", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
    "bash": ("tree_sitter_bash", "language"),
}
EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript",
    ".cjs": "javascript", ".jsx": "javascript", ".ts": "typescript", ".mts": "typescript",
    ".cts": "typescript", ".tsx": "tsx", ".rs": "rust", ".go": "go", ".java": "java",
    ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp",
    ".hh": "cpp", ".hxx": "cpp", ".rb": "ruby", ".sh": "bash", ".bash": "bash",
}
SHEBANGS = {"python": "python", "node": "javascript", "bash": "bash", "sh": "bash",
            "ruby": "ruby", "deno": "typescript"}
# a role may name a language by an alias
ALIASES = {"js": "javascript", "ts": "typescript", "c++": "cpp", "cxx": "cpp", "sh": "bash",
           "py": "python", "rb": "ruby", "rs": "rust", "golang": "go"}


@dataclass(frozen=True)
class Kinds:
    """How one grammar's node types map to outline roles."""

    function: frozenset = frozenset()    # header kept, body elided
    container: frozenset = frozenset()   # header kept, body searched for declarations
    typedecl: frozenset = frozenset()    # kept whole when short, else header + elision
    line: frozenset = frozenset()        # first line kept (imports, fields, constants)
    wrapper: frozenset = frozenset()     # decorators/export/template: look inside
    transparent: frozenset = frozenset()  # if/try/#ifdef: kept only around kept children
    body_types: frozenset = frozenset()   # node types that can stand as a body without a field


def _k(**kw) -> Kinds:
    return Kinds(**{k: frozenset(v.split()) for k, v in kw.items()})


_JS_COMMON = dict(
    function="function_declaration generator_function_declaration method_definition "
             "function_signature",
    container="class_declaration abstract_class_declaration class internal_module module",
    typedecl="interface_declaration enum_declaration type_alias_declaration",
    line="import_statement public_field_definition field_definition method_signature "
         "abstract_method_signature property_signature ambient_declaration",
    wrapper="export_statement lexical_declaration variable_declaration variable_declarator",
    transparent="expression_statement",
    body_types="class_body statement_block object_type interface_body enum_body",
)
KINDS: dict[str, Kinds] = {
    "python": _k(
        function="function_definition",
        container="class_definition",
        line="import_statement import_from_statement future_import_statement "
             "expression_statement type_alias_statement",
        wrapper="decorated_definition",
        transparent="if_statement try_statement else_clause elif_clause except_clause "
                    "finally_clause with_statement block",
        body_types="block"),
    "javascript": _k(**_JS_COMMON),
    "typescript": _k(**_JS_COMMON),
    "tsx": _k(**_JS_COMMON),
    "rust": _k(
        function="function_item macro_definition",
        container="impl_item trait_item mod_item foreign_mod_item",
        typedecl="struct_item enum_item union_item",
        line="use_declaration const_item static_item type_item function_signature_item "
             "extern_crate_declaration attribute_item",
        body_types="declaration_list block field_declaration_list enum_variant_list"),
    "go": _k(
        function="function_declaration method_declaration",
        typedecl="type_declaration",
        line="package_clause import_declaration const_declaration var_declaration",
        body_types="block"),
    "java": _k(
        function="method_declaration constructor_declaration compact_constructor_declaration",
        container="class_declaration interface_declaration enum_declaration record_declaration "
                  "annotation_type_declaration",
        line="package_declaration import_declaration field_declaration constant_declaration "
             "enum_constant annotation_type_element_declaration",
        body_types="class_body interface_body enum_body block constructor_body "
                   "annotation_type_body"),
    "c": _k(
        function="function_definition",
        typedecl="struct_specifier union_specifier enum_specifier type_definition",
        line="declaration preproc_include preproc_def preproc_function_def",
        transparent="preproc_ifdef preproc_if preproc_else preproc_elif linkage_specification "
                    "declaration_list",
        body_types="compound_statement field_declaration_list enumerator_list"),
    "cpp": _k(
        function="function_definition",
        container="class_specifier namespace_definition",
        typedecl="struct_specifier union_specifier enum_specifier type_definition "
                 "alias_declaration concept_definition",
        line="declaration field_declaration preproc_include preproc_def preproc_function_def "
             "using_declaration access_specifier friend_declaration",
        wrapper="template_declaration",
        transparent="preproc_ifdef preproc_if preproc_else preproc_elif linkage_specification "
                    "declaration_list",
        body_types="compound_statement field_declaration_list enumerator_list declaration_list"),
    "ruby": _k(
        function="method singleton_method",
        container="class module singleton_class",
        line="call assignment",
        body_types="body_statement"),
    "bash": _k(
        function="function_definition",
        line="variable_assignment declaration_command",
        body_types="compound_statement"),
}

_languages: dict[str, object] = {}


def normalize(names) -> tuple[str, ...]:
    return tuple(ALIASES.get(n.lower(), n.lower()) for n in names if n)


def language_for(path: str | None, source: str = "") -> str | None:
    """The outline language of a path (by extension) or of a shebang line."""
    if path:
        dot = path.rfind(".")
        if dot > path.rfind("/"):
            lang = EXTENSIONS.get(path[dot:].lower())
            if lang:
                return lang
    if source.startswith("#!"):
        first = source.split("\n", 1)[0].split()
        words = [w.rsplit("/", 1)[-1] for w in first[:2]]
        prog = words[1] if words[0] == "env" and len(words) > 1 else words[0].lstrip("#!")
        prog = prog.rsplit("/", 1)[-1].rstrip("0123456789.")
        return SHEBANGS.get(prog)
    return None


def load(lang: str, allowed=()):
    """The tree_sitter.Language for lang; only grammars listed in allowed (when given)."""
    allowed = normalize(allowed)
    # one wheel, one permission: typescript also covers tsx (tree_sitter_typescript)
    wheels = {GRAMMARS[a][0] for a in allowed if a in GRAMMARS}
    if allowed and lang not in allowed and GRAMMARS[lang][0] not in wheels:
        raise LookupError(f"grammar {lang!r} not in this role's languages {list(allowed)}")
    got = _languages.get(lang)
    if got is None:
        module, attr = GRAMMARS[lang]
        got = tree_sitter.Language(getattr(importlib.import_module(module), attr)())
        _languages[lang] = got
    return got


@dataclass
class _Plan:
    lines: list[str]
    kinds: Kinds
    compact: bool = False                                # members as a name list
    keep: set[int] = field(default_factory=set)          # 0-based rows kept
    members: dict[int, str] = field(default_factory=dict)  # header row -> member list
    elide: dict[int, tuple[int, int, str]] = field(default_factory=dict)  # header row -> body

    def keep_rows(self, a: int, b: int) -> None:
        self.keep.update(range(a, b + 1))


def body_of(node, kinds: Kinds):
    body = node.child_by_field_name("body")
    if body is not None:
        return body
    for child in node.named_children:
        if child.type in kinds.body_types:
            return child
    return None


def split_rows(node, body, lines: list[str]) -> tuple[int, int, int]:
    """(last header row, first elided row, last elided row) of a node with a body."""
    start, end = node.start_point.row, node.end_point.row
    b = body.start_point.row
    text = lines[b] if b < len(lines) else ""
    indent = len(text) - len(text.lstrip())
    if b > start and body.start_point.column <= indent:
        head_end = b - 1
    else:
        head_end = b
    if node.end_point.column == 0 and end > start:
        end -= 1
    while head_end > start and not lines[head_end].strip():
        head_end -= 1
    return head_end, head_end + 1, end


def _name(node) -> str:
    name = node.child_by_field_name("name")
    if name is None:
        return node.type
    return name.text.decode("utf-8", "replace")


def _visit(node, plan: _Plan, depth: int) -> bool:
    """Plan one node; True when it kept any row."""
    k, t = plan.kinds, node.type
    start, end = node.start_point.row, node.end_point.row
    if node.end_point.column == 0 and end > start:
        end -= 1
    if t in k.function or t in k.container:
        body = body_of(node, k)
        if body is None or body.start_point.row > end:
            plan.keep_rows(start, end if t in k.function and end - start < 3 else start)
            return True
        head_end, b0, b1 = split_rows(node, body, plan.lines)
        if plan.compact and head_end > start:
            b0, head_end = start + 1, start       # continuation lines join the elision
        plan.keep_rows(start, head_end)
        if t in k.function or (plan.compact and depth >= 0):
            if b1 >= b0:
                plan.elide[head_end] = (b0, b1, f"body of {_name(node)}")
            if t not in k.function:
                names = [m for c in body.named_children if (m := _member(c, k))]
                if names:
                    plan.members[head_end] = ", ".join(f"{n}" for n, r in names)
        else:
            for child in body.named_children:
                _visit(child, plan, depth + 1)
        return True
    if t in k.typedecl:
        if end - start + 1 <= WHOLE_TYPE_LINES:
            plan.keep_rows(start, end)
        else:
            body = _find_body_deep(node, k)
            if body is not None and body.start_point.row <= end:
                head_end, b0, b1 = split_rows(node, body, plan.lines)
                plan.keep_rows(start, head_end)
                if b1 >= b0:
                    plan.elide[head_end] = (b0, b1, f"body of {_name(node)}")
            else:
                plan.keep_rows(start, start)
                if end > start:
                    plan.elide[start] = (start + 1, end, f"rest of {t}")
        return True
    if t in k.wrapper:
        inner = [c for c in node.named_children
                 if c.type in k.function or c.type in k.container or c.type in k.typedecl
                 or c.type in k.wrapper or c.type in k.line]
        value = node.child_by_field_name("value")
        if value is not None and value.type in ("arrow_function", "function_expression",
                                                 "function", "generator_function", "class"):
            return _visit_valued(node, value, plan)
        if not inner:
            return _visit_line(node, plan, start, end)
        kept = False
        # decorators, export keywords, template<...> headers sit above the inner declaration
        first = inner[0].start_point.row
        if first > start:
            plan.keep_rows(start, first - 1)
        for c in inner:
            kept = _visit(c, plan, depth) or kept
        if not kept:
            return _visit_line(node, plan, start, end)
        return True
    if t in k.line:
        if plan.kinds is KINDS.get("python") and t == "expression_statement" and not has_assignment(node):
            return False
        return _visit_line(node, plan, start, end)
    if t in k.transparent:
        kept = False
        for child in node.named_children:
            kept = _visit(child, plan, depth) or kept
        if kept:
            plan.keep_rows(start, start)
        return kept
    return False


def _member(node, k: Kinds) -> tuple[str, int] | None:
    """(name, row) of a method or nested type inside a container body."""
    t = node.type
    if t in k.wrapper:
        for c in node.named_children:
            if c.type in k.function or c.type in k.container or c.type in k.typedecl:
                return _member(c, k)
        return None
    if t in k.function or t in k.container or t in k.typedecl:
        name = _name(node)
        prefix = "" if t in k.function else "class " if t in k.container else "type "
        return prefix + name, node.start_point.row
    return None


IMPORTS = frozenset("import_statement import_from_statement future_import_statement "
                    "use_declaration import_declaration preproc_include".split())
FOLD_IMPORTS = 3   # compact mode: a run of this many imports shows its first line only


def _fold_imports(children, plan: _Plan) -> list:
    """Compact mode: runs of imports keep their first line; the rest join one elision."""
    out, run = [], []

    def flush():
        if len(run) >= FOLD_IMPORTS:
            first = run[0].start_point.row
            plan.keep_rows(first, first)
            last = run[-1].end_point.row
            if run[-1].end_point.column == 0:
                last -= 1
            plan.elide[first] = (first + 1, last, "rest of imports")
        else:
            out.extend(run)
        run.clear()

    for child in children:
        if child.type in IMPORTS or child.type == "comment" and run:
            run.append(child)
            continue
        flush()
        out.append(child)
    flush()
    return out


def _visit_valued(node, value, plan: _Plan) -> bool:
    """`const f = (a) => { … }`: a declaration whose value is a function or class."""
    start = node.start_point.row
    body = body_of(value, plan.kinds)
    end = node.end_point.row
    if body is None or body.start_point.row > end or end == start:
        plan.keep_rows(start, end if end - start < 3 else start)
        return True
    head_end, b0, b1 = split_rows(value, body, plan.lines)
    head_end = max(head_end, start)
    plan.keep_rows(start, head_end)
    if b1 >= b0:
        plan.elide[head_end] = (b0, b1, f"body of {_name(node)}")
    return True


def _visit_line(node, plan: _Plan, start: int, end: int) -> bool:
    plan.keep_rows(start, start)
    if end > start:
        plan.elide[start] = (start + 1, end, f"rest of {node.type}")
    return True


def has_assignment(node) -> bool:
    return any(c.type in ("assignment", "augmented_assignment") for c in node.named_children)


def _find_body_deep(node, k: Kinds):
    body = body_of(node, k)
    if body is not None:
        return body
    for child in node.named_children:
        for grand in child.named_children:
            if grand.type in k.body_types:
                return grand
        found = child.child_by_field_name("body")
        if found is not None:
            return found
    return None


COMPACT_ABOVE = 0.10   # full signatures above this share of the source: members as name lists


def outline(source: str, path: str, languages=(), detail: str = "auto") -> TransformResult:
    """Outline source (the text of path); languages limits the grammars that may load.

    detail: "signatures" keeps every declaration line at every depth; "compact" keeps
    top-level declaration lines and lists each class's members by name and line; "auto"
    gives signatures unless they exceed COMPACT_ABOVE of the source, then compact.
    """
    lang = language_for(path, source)
    if lang is None:
        return TransformResult(source, TRANSFORM_ID, notes=[f"no outline language for {path}"])
    if lang == "c" and "cpp" in normalize(languages) and "c" not in normalize(languages):
        lang = "cpp"          # a header in a C++-only role
    try:
        language = load(lang, languages)
    except LookupError as exc:
        return TransformResult(source, TRANSFORM_ID, notes=[str(exc)])

    data = source.encode("utf-8", "surrogateescape")
    tree = tree_sitter.Parser(language).parse(data)
    lines = source.split("\n")
    result = None
    for compact in ((False,) if detail == "signatures" else (True,) if detail == "compact"
                    else (False, True)):
        plan = _Plan(lines, KINDS[lang], compact=compact)
        children = tree.root_node.named_children
        if compact:
            children = _fold_imports(children, plan)
        for child in children:
            _visit(child, plan, 0)
        result = _render(plan, path, lang, tree.root_node.has_error)
        if len(result.text) <= COMPACT_ABOVE * len(source):
            break
    return result


def transform(text: str, ctx: Context) -> TransformResult:
    """Pipeline entry: outline ctx.path's text with the role's grammars (a sniffed family
    "source:LANG" names the language of piped source without a path)."""
    path = ctx.path or ""
    if language_for(path, text) is None and ctx.family.startswith("source:"):
        lang = ctx.family.split(":", 1)[1]
        ext = next((e for e, name in EXTENSIONS.items() if name == lang), "")
        path = (path or "stdin") + ext
    return outline(text, path, ctx.languages)


def _render(plan: _Plan, path: str, lang: str, has_error: bool) -> TransformResult:
    lines = plan.lines
    total = len(lines)
    if total and lines[-1] == "":
        total -= 1
    # elided ranges win over kept rows inside them (a nested keep inside an elided body)
    covered: set[int] = set()
    for header, (b0, b1, _) in plan.elide.items():
        if header in plan.keep:
            covered.update(range(b0, b1 + 1))
    keep = sorted(r for r in plan.keep if r not in covered and r < total)
    out: list[str] = []
    removals: list[Removal] = []
    biggest: tuple[int, int, int] | None = None
    reasons: dict[int, str] = {}
    for header, (b0, b1, why) in plan.elide.items():
        for r in range(b0, b1 + 1):
            reasons.setdefault(r, why)
    kept_set = set(keep)
    for row in keep:
        text = lines[row]
        el = plan.elide.get(row)
        if el is not None and el[1] >= el[0]:
            n = min(el[1], total - 1) - el[0] + 1
            if n > 0:
                unit = "line" if n == 1 else "lines"
                if el[2].startswith("rest of"):
                    text += f" … (+{n} {unit})"
                elif text.rstrip().endswith("{"):
                    text += f" … {n} {unit} }}"
                else:
                    text += f" {{ … {n} {unit} }}"
                if biggest is None or n > biggest[0]:
                    biggest = (n, el[0] + 1, el[0] + n)
        out.append(f"{row + 1}: {text}")
        if row in plan.members:
            pad = " " * (len(str(row + 1)) + 2 + len(text) - len(text.lstrip()) + 2)
            out.append(f"{pad}members: {plan.members[row]}")
    run: list[int] = []
    for r in list(range(total)) + [total]:
        if r < total and r not in kept_set:
            run.append(r)
            continue
        if run:
            why = reasons.get(run[0], "non-declaration lines")
            removals.append(Removal(reason=why, count=len(run), start=run[0] + 1,
                                    end=run[-1] + 1, preview=lines[run[0]].strip()[:120]))
            run = []
    if biggest is not None:
        follow = f"ctx_read {path} lines:{biggest[1]}-{biggest[2]}"
    else:
        follow = f"ctx_read {path} lines:1-{total}"
    out.append(f"[outline: {len(keep)} of {total} lines; read a body: {follow}]")
    notes = [f"{lang} outline"] + (["source has parse errors"] if has_error else [])
    return TransformResult("\n".join(out), TRANSFORM_ID, removals=removals, notes=notes)
