"""Module names say where they are, and a module's private names stay in it (issue 32.4).

- No two modules of capsule/ share a basename (`usage.py` in three packages reads as one module in a
  traceback, a grep or an import line); a package's `__init__.py` is not a module name.
- No module imports another capsule module's private name (`from capsule.x import _name`) nor reaches
  one through a module it imported (`x._name`): a name used across modules is part of its module's
  interface and is named without the underscore.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TEMPLATES = ("shim_template", "hook_template")   # sources with @PLACEHOLDERS@, installed as files


def sources(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module under root/capsule."""
    out = {}
    for path in sorted((root / "capsule").rglob("*.py")):
        if any(t in path.parts for t in TEMPLATES):
            continue
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def repeated_basenames(root: Path) -> dict[str, list[str]]:
    by: dict[str, list[str]] = defaultdict(list)
    for mod, path in sources(root).items():
        if path.name != "__init__.py":
            by[path.stem].append(mod)
    return {name: mods for name, mods in sorted(by.items()) if len(mods) > 1}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_reaches(root: Path) -> list[str]:
    """`importer:line name` for every private name of another capsule module the importer uses."""
    mods = sources(root)
    out = []
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        aliases: dict[str, str] = {}        # local name -> capsule module it is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                if not (base == "capsule" or base.startswith("capsule.")) or base == mod:
                    continue
                for a in node.names:
                    if f"{base}.{a.name}" in mods:
                        aliases[a.asname or a.name] = f"{base}.{a.name}"
                    elif _private(a.name):
                        out.append(f"{mod}:{node.lineno} from {base} import {a.name}")
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("capsule.") and a.asname and a.name != mod:
                        aliases[a.asname] = a.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases):
                out.append(f"{mod}:{node.lineno} {aliases[node.value.id]}.{node.attr}")
    return sorted(set(out))


def test_no_repeated_module_names():
    found = repeated_basenames(REPO)
    assert not found, ("module basenames used more than once (name each after what it holds):\n  "
                       + "\n  ".join(f"{k}: {', '.join(v)}" for k, v in found.items()))


def test_no_private_names_across_modules():
    found = private_reaches(REPO)
    assert not found, ("private names used from another module (make them public in their module):\n  "
                       + "\n  ".join(found))


def test_the_checks_can_fail(tmp_path):
    """Both checks find what they look for: a repeated name, a private import and a private attribute."""
    pkg = tmp_path / "capsule"
    for sub in ("a", "b"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
        (pkg / sub / "same.py").write_text("_x = 1\ny = 2\n")
    (pkg / "__init__.py").write_text("")
    (pkg / "c.py").write_text("from capsule.a.same import _x, y\nfrom capsule.b import same\nz = same._x + same.y\n")
    assert repeated_basenames(tmp_path) == {"same": ["capsule.a.same", "capsule.b.same"]}
    assert private_reaches(tmp_path) == ["capsule.c:1 from capsule.a.same import _x", "capsule.c:3 capsule.b.same._x"]
