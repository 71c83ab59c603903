"""Compressor Reflex: fail-open floor, forced error lines, numbering, shipped calibration."""

from capsule.observe.content import reflex
from capsule.observe.transform_types import Context


def _output():
    lines = [f"tests/test_mod.py::test_case_{i} PASSED                      [{i:3d}%]" for i in range(60)]
    lines[30] = "tests/test_mod.py::test_total FAILED                     [ 50%]"
    lines += ["", "E       assert 214.2 == 214.5", "tests/test_mod.py:44: AssertionError",
              "=========== 1 failed, 59 passed in 0.42s ==========="]
    return "\n".join(lines) + "\n"


def test_short_output_passes_untouched():
    text = "ok\nall good\n"
    result = reflex.reflex(text, Context(intent="did it pass"))
    assert result.text == text and not result.removals


def test_errors_are_always_kept_with_line_numbers_in_order():
    text = _output()
    result = reflex.reflex(text, Context(intent="which test failed and why"))
    out = result.text.split("\n")
    for needle in ("test_total FAILED", "assert 214.2 == 214.5", "AssertionError", "1 failed, 59 passed"):
        assert any(needle in ln for ln in out), needle
    numbers = [int(ln.split(":", 1)[0]) for ln in out if ln]
    assert numbers == sorted(numbers)
    for ln in out:
        if ln:
            n, rest = ln.split(": ", 1)
            assert text.split("\n")[int(n) - 1] == rest
    assert result.removed_lines + len([ln for ln in out if ln]) == len(text.split("\n")) - 1


def test_fails_open_on_internal_error(monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("model missing")
    monkeypatch.setattr(reflex, "decide", boom)
    text = _output()
    result = reflex.reflex(text, Context(intent="x"))
    assert result.text == text and "failed open" in result.notes[0]


def test_shipped_calibration_meets_the_recall_bar():
    model = reflex.model()
    assert model["features"] == list(reflex.FEATURES)
    assert len(model["weights"]) == len(reflex.FEATURES)
    held = model["held_back"]
    assert held["recall"] >= 0.99 and held["anchors"] >= 100
    assert 0 < model["tau"] < 1
    assert not set(model["split"]["train_cases"]) & set(model["split"]["held_back_cases"])
