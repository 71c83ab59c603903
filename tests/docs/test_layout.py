"""The test tree's own rules: pytest (rootdir import mode, no __init__.py) needs unique test basenames,
else a whole directory fails to collect on a clean clone."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_test_module_basenames_are_unique():
    seen: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        seen[path.name].append(str(path.relative_to(TESTS)))
    dupes = {name: where for name, where in seen.items() if len(where) > 1}
    assert not dupes, f"rename one of each: {dupes}"
