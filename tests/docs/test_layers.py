"""The import graph of capsule/ against the layer picture in docs/layers.toml: no circles, and no
import that runs up a layer beyond the listed, explained exceptions (at most 4).

Every import counts, function-local ones and importlib.import_module("capsule...") strings included:
a function-local import that dodges a circle is still a circle.
"""

from __future__ import annotations

import ast
import graphlib
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "capsule"
LAYERS = tomllib.loads((REPO / "docs" / "layers.toml").read_text(encoding="utf-8"))
TEMPLATES = ("shim_template", "hook_template")   # sources with @PLACEHOLDERS@, installed as files
MAX_ALLOWED = 4


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        if any(t in path.parts for t in TEMPLATES):
            continue
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(mods: dict[str, Path]) -> list[tuple[str, str, int]]:
    """(importer, imported module, line) for every import of a capsule module."""

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges = set()
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                names = [base] + [f"{base}.{a.name}" for a in node.names]   # P runs before P.m
            elif (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module"
                  and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                names = [node.args[0].value]
            for name in names:
                if name == "capsule" or name.startswith("capsule."):
                    target = resolve(name)
                    # a module's own packages are initialised before it: importing them is no circle
                    if target and target != mod and not mod.startswith(target + "."):
                        edges.add((mod, target, node.lineno))
    return sorted(edges)


def layer_of(mod: str) -> str:
    if mod in LAYERS["modules"]:
        return LAYERS["modules"][mod]
    return mod.split(".")[1]


def allowed() -> dict[str, set[str]]:
    direct = LAYERS["may_import"]

    def closure(layer: str, seen: set[str]) -> set[str]:
        for below in direct[layer]:
            if below not in seen:
                seen.add(below)
                closure(below, seen)
        return seen

    return {layer: closure(layer, set()) for layer in direct}


def up_imports() -> list[tuple[str, str, int]]:
    """Imports up the picture, and door imports below the engine ([must_not_import]: no exceptions)."""
    may, never = allowed(), LAYERS.get("must_not_import", {})
    out = []
    for a, b, line in imports(modules()):
        la, lb = layer_of(a), layer_of(b)
        if la == lb:
            continue
        if lb not in may[la] or lb in never.get(la, ()):
            out.append((a, b, line))
    return out


def test_every_module_sits_in_a_known_layer():
    unknown = {m for m in modules() if layer_of(m) not in LAYERS["may_import"]}
    assert not unknown, f"add these packages to docs/layers.toml [may_import]: {sorted(unknown)}"


def test_no_import_circles():
    graph: dict[str, set[str]] = {m: set() for m in modules()}
    for a, b, _ in imports(modules()):
        graph[a].add(b)
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        cycle = " -> ".join(reversed(exc.args[1]))
        raise AssertionError(f"import circle: {cycle}; move the shared piece down a layer") from None


def test_imports_point_down_except_the_listed_few():
    listed = LAYERS["allow"]
    assert len(listed) <= MAX_ALLOWED, f"at most {MAX_ALLOWED} exceptions in docs/layers.toml [allow]"
    assert all(reason.strip() for reason in listed.values()), "every exception says why"
    found = up_imports()
    unlisted = [f"{a} -> {b} (line {line})" for a, b, line in found if f"{a} -> {b}" not in listed]
    assert not unlisted, ("imports that run up the layer picture (docs/layers.toml):\n  "
                          + "\n  ".join(unlisted))
    stale = set(listed) - {f"{a} -> {b}" for a, b, _ in found}
    assert not stale, f"exceptions no import needs any more; remove them from [allow]: {sorted(stale)}"


DOORS = ("mcp", "proxy", "shims")
DOOR_MAY_REACH = {"engine", "agents", "ground"}   # the engine's entries, client facts, plain facts


def test_doors_reach_only_the_engine():
    """A door's [must_not_import] row takes away every layer its [may_import] row lets through below
    the engine, agents and ground: the door rows are not transitive, with no listed exceptions."""
    assert "door_reach" not in LAYERS, "no door import below the engine is let through: fix the import"
    for door in DOORS:
        below = allowed()[door] - DOOR_MAY_REACH
        missing = below - set(LAYERS["must_not_import"].get(door, ()))
        assert not missing, f"{door} could reach {sorted(missing)}: add them to [must_not_import] {door}"


def test_a_door_import_below_the_engine_is_found(tmp_path):
    """A door module importing the store (module level or function-local) or observe is found as an
    up-import; its import of the engine's entries and of ground is not."""
    pkg = tmp_path / "capsule"
    for sub in ("store", "observe", "ground", "proxy", "mcp", "shims"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "engine_api.py").write_text("from capsule.store import sqlite\n")
    (pkg / "store" / "sqlite.py").write_text("from capsule.ground import paths\n")
    (pkg / "observe" / "media.py").write_text("")
    (pkg / "ground" / "paths.py").write_text("")
    (pkg / "proxy" / "memo.py").write_text("from capsule import engine_api\nfrom capsule.ground import paths\n"
                                           "def f():\n    from capsule.store import sqlite\n")
    (pkg / "mcp" / "tools.py").write_text("import capsule.observe.media\n")
    (pkg / "shims" / "door.py").write_text("from capsule import engine_api\n")
    global PACKAGE, REPO
    saved = PACKAGE, REPO
    PACKAGE, REPO = pkg, tmp_path
    try:
        found = sorted((a, b) for a, b, _ in up_imports())
    finally:
        PACKAGE, REPO = saved
    assert found == [("capsule.mcp.tools", "capsule.observe.media"), ("capsule.proxy.memo", "capsule.store"),
                     ("capsule.proxy.memo", "capsule.store.sqlite")], found


def test_the_check_sees_a_circle_and_an_up_import(tmp_path):
    """The checker itself can fail: a two-module circle and a store -> engine import are found."""
    pkg = tmp_path / "capsule"
    (pkg / "store").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "engine.py").write_text("from capsule.store import a\n")
    (pkg / "store" / "__init__.py").write_text("")
    (pkg / "store" / "a.py").write_text("def f():\n    from capsule.store import b\n")
    (pkg / "store" / "b.py").write_text("import capsule.store.a\nimport capsule.engine\n")
    global PACKAGE, REPO
    saved = PACKAGE, REPO
    PACKAGE, REPO = pkg, tmp_path
    try:
        edges = imports(modules())
        assert ("capsule.store.a", "capsule.store.b", 2) in edges
        assert [e[:2] for e in up_imports()] == [("capsule.store.b", "capsule.engine")]
        try:
            test_no_import_circles()
        except AssertionError as exc:
            assert "capsule.store.a" in str(exc) and "capsule.store.b" in str(exc)
        else:
            raise AssertionError("the circle store.a <-> store.b was not found")
    finally:
        PACKAGE, REPO = saved
