"""YAML/TOML minification where it is lossless: comment-only lines, blank lines and trailing
spaces go, and the result is kept only if it parses to exactly the same data.

Not responsible for re-serialising (no key reordering, no flow style): kept lines are
original lines. Not responsible for JSON (json_crusher).
Marked lossless only when nothing but blank lines and trailing spaces went.
Invariant: the emitted text loads (yaml.safe_load_all / tomllib) to data strictly equal
to the original's; on any doubt — parse error, mismatch — the original is returned.
"""

from __future__ import annotations

import re
import tomllib

from capsule.observe.content.toon import strict_equal
from capsule.observe.types import Context, Removal, TransformResult

TRANSFORM_ID = "yaml_toml"
_COMMENT = re.compile(r"^\s*#")
_BLOCK = re.compile(r"[:-]\s*[|>][-+0-9]*\s*(?:#.*)?$")   # `key: |` opens a block scalar
_MULTI = re.compile(r'"""|\'\'\'')                            # TOML multi-line strings


def _protected(lines: list[str], kind: str) -> set[int]:
    """Rows inside YAML block scalars or TOML multi-line strings: never touched."""
    rows: set[int] = set()
    if kind == "yaml":
        block_indent = None
        for i, ln in enumerate(lines):
            indent = len(ln) - len(ln.lstrip(" "))
            if block_indent is not None:
                if not ln.strip() or indent > block_indent:
                    rows.add(i)
                    continue
                block_indent = None
            if _BLOCK.search(ln):
                block_indent = indent
    else:
        inside = False
        for i, ln in enumerate(lines):
            if inside:
                rows.add(i)
            if len(_MULTI.findall(ln)) % 2:
                inside = not inside
    return rows


def _load_yaml(text: str):
    import yaml

    return list(yaml.safe_load_all(text))


def _load_toml(text: str):
    return tomllib.loads(text)


def _equal(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, (str, int, float, bool)) or a is None:
        return strict_equal(a, b)
    return a == b       # dates, datetimes, bytes


def minify(text: str, kind: str) -> TransformResult:
    """kind: "yaml" or "toml"."""
    load = _load_yaml if kind == "yaml" else _load_toml
    try:
        original = load(text)
    except Exception as exc:   # any parser complaint: not ours to touch
        return TransformResult(text, TRANSFORM_ID, notes=[f"{kind} does not parse: {exc}"[:200]])
    lines = text.split("\n")
    trailing = bool(lines) and lines[-1] == ""
    if trailing:
        lines = lines[:-1]
    out, removals, run, run_kind = [], [], [], ""
    protected = _protected(lines, kind)
    for i, ln in enumerate(lines + [None]):
        kind_here = None
        if ln is not None and i in protected:
            pass
        elif ln is not None:
            if not ln.strip():
                kind_here = "blank line"
            elif _COMMENT.match(ln) and not (kind == "yaml" and ln.lstrip().startswith("#!")):
                kind_here = "comment line"
        if kind_here and (not run or kind_here == run_kind):
            run.append(i)
            run_kind = kind_here
            continue
        if run:
            removals.append(Removal(run_kind, len(run), run[0] + 1, run[-1] + 1,
                                    lines[run[0]].strip()[:120]))
            run, run_kind = [], ""
        if kind_here:
            run, run_kind = [i], kind_here
            continue
        if ln is not None:
            out.append(ln if i in protected else ln.rstrip(" \t"))
    body = "\n".join(out) + ("\n" if trailing else "")
    if body == text:
        return TransformResult(text, TRANSFORM_ID, lossless=True, notes=["already minimal"])
    try:
        same = _equal(load(body), original)
    except Exception:
        same = False
    if not same:
        return TransformResult(text, TRANSFORM_ID, notes=[f"{kind} minification changed the data: original kept"])
    # the data is unchanged; comments are text the reader loses, so only blank-only is lossless
    lossless = all(r.reason == "blank line" for r in removals)
    return TransformResult(body, TRANSFORM_ID, removals=removals, lossless=lossless,
                           notes=[f"{kind} minified; load(result) == load(original) checked"])


def yaml(text: str, ctx: Context) -> TransformResult:
    return minify(text, "yaml")


def toml(text: str, ctx: Context) -> TransformResult:
    return minify(text, "toml")
