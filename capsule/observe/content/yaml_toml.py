"""YAML/TOML minification where it is lossless: comment-only lines, blank lines and trailing
spaces go, and the result is kept only if it parses to exactly the same data. A YAML document
with a large collection (kubectl -o yaml, lock files) gets the JSON tier's structural reduction
(json_reduce), written back as YAML with numbers as written, when that is shorter.

Not responsible for the sampling rules (json_reduce / json_anomaly). Minified kept lines are
original lines. Not responsible for JSON (json_crusher).
Marked lossless only when nothing but blank lines and trailing spaces went.
Invariant: the emitted text loads (yaml.safe_load_all / tomllib) to data strictly equal
to the original's; on any doubt — parse error, mismatch — the original is returned.
"""

from __future__ import annotations

import re
import tomllib

import yaml as pyyaml

from capsule.observe.content import json_reduce
from capsule.observe.content.toon import strict_equal
from capsule.observe.transform_types import Context, Removal, TransformResult
from capsule.ground.tokens import count

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
    return list(pyyaml.safe_load_all(text))


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
    result = minify(text, "yaml")
    reduced = reduce_yaml(text, ctx)
    if reduced is not None and _tokens(reduced.text) < _tokens(result.text):
        return reduced
    return result


def _tokens(text: str) -> int:
    return count(text)


def _text_yaml():
    """A SafeLoader whose numbers remember their text and whose timestamps stay text, and the
    Dumper that writes both back as written (a sampled document keeps every digit it shows)."""

    class Num:
        def __init__(self, value, text):
            self.value, self.text = value, text

    class IntText(int):
        pass

    class FloatText(float):
        pass

    class Loader(pyyaml.SafeLoader):
        pass

    class Dumper(pyyaml.SafeDumper):
        pass

    def number(cls, build):
        def construct(loader, node):
            obj = cls(build(loader, node))
            obj.text = node.value
            return obj
        return construct

    Loader.add_constructor("tag:yaml.org,2002:int", number(IntText, pyyaml.SafeLoader.construct_yaml_int))
    Loader.add_constructor("tag:yaml.org,2002:float", number(FloatText, pyyaml.SafeLoader.construct_yaml_float))
    Loader.add_constructor("tag:yaml.org,2002:timestamp", lambda loader, node: node.value)
    Dumper.add_representer(IntText, lambda d, v: d.represent_scalar("tag:yaml.org,2002:int", v.text))
    Dumper.add_representer(FloatText, lambda d, v: d.represent_scalar("tag:yaml.org,2002:float", v.text))
    Dumper.add_representer(json_reduce.SampledArray, lambda d, v: d.represent_list(list(v)))
    return pyyaml, Loader, Dumper


def _string_keys(value) -> bool:
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            if not all(isinstance(k, str) for k in v):
                return False
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return True


def reduce_yaml(text: str, ctx: Context) -> TransformResult | None:
    """The structural reduction of a YAML stream, as YAML under one '# sampled:' comment; None
    when it does not parse, has non-string keys or nothing large enough to sample."""
    try:
        pyyaml, loader, dumper = _text_yaml()
        docs = list(pyyaml.load_all(text, Loader=loader))
    except Exception:   # any parser complaint: minify() already decided
        return None
    value = docs[0] if len(docs) == 1 else docs
    if not _string_keys(value):
        return None
    min_rows = json_reduce.AGGRESSIVE_MIN_ROWS if ctx.mode == "aggressive" else json_reduce.LOSSY_MIN_ROWS
    done = json_reduce.reduce(value, ctx.intent, min_rows)
    if done is None:
        return None
    reduced, removals, summaries = done
    try:
        parts = [reduced] if len(docs) == 1 else list(reduced)
        body = pyyaml.dump_all(parts, Dumper=dumper, sort_keys=False, allow_unicode=True, width=1 << 16,
                               default_flow_style=False)
    except Exception:
        return None
    return TransformResult("# sampled: " + "; ".join(summaries) + "\n" + body, TRANSFORM_ID,
                           removals=removals, notes=summaries)


def toml(text: str, ctx: Context) -> TransformResult:
    return minify(text, "toml")
