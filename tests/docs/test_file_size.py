"""STYLE.md's "small files": a source file of capsule past 500 lines is probably two. The compiled
capture counts too (its C is read by whoever fixes the shell door), as do the shim's shell helpers."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "capsule"
MAX_LINES = 500
SOURCES = ("*.py", "*.c", "*.sh")


def too_long(root: Path) -> dict[str, int]:
    found = {}
    for pattern in SOURCES:
        for path in root.rglob(pattern):
            n = len(path.read_bytes().splitlines())
            if n > MAX_LINES:
                found[str(path.relative_to(root))] = n
    return found


def test_no_source_file_over_500_lines():
    assert not too_long(PACKAGE), f"split these (STYLE.md, small files): {too_long(PACKAGE)}"


def test_the_check_sees_a_long_c_file(tmp_path):
    (tmp_path / "long.c").write_text("int x;\n" * (MAX_LINES + 1))
    (tmp_path / "short.py").write_text("x = 1\n" * MAX_LINES)
    assert too_long(tmp_path) == {"long.c": MAX_LINES + 1}
