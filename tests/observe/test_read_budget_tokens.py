"""Read budgets in tokens (issue 25): a whole-file read passes whole up to [budgets] read_tokens;
past it, the outline plus, whole, the declarations the intent names. Real `cat` of modules
written here."""

from __future__ import annotations

import subprocess

from capsule.engine import Engine
from capsule.ground.types import Observation
from capsule.ground import tokens


def module(n_funcs: int, special: int | None = None) -> str:
    out = ["import math", ""]
    for i in range(n_funcs):
        if i == special:
            out += ["def refund_half(amount):", "    cents = round(amount * 100)", "    half = cents // 2",
                    "    if cents % 2:", "        half -= 1", "    return half / 100", "", ""]
            continue
        out += [f"def rate_{i}(x):", f"    y = x * {i}", "    return math.floor(y)", "", ""]
    return "\n".join(out)


def cat(tmp_path, text: str) -> bytes:
    (tmp_path / "billing.py").write_text(text)
    return subprocess.run(["cat", "billing.py"], cwd=tmp_path, capture_output=True, check=True).stdout


def test_a_320_line_module_of_short_lines_passes_whole(tmp_path):
    raw = cat(tmp_path, module(62, special=30))
    assert 300 < raw.count(b"\n") < 340 and tokens.count_bytes(raw) < 3000
    out = Engine(tmp_path / "st", mode="standard", scope="t").observe(Observation(raw, command="cat billing.py")).data
    assert out == raw                       # was an outline (over 300 lines); the edit is on a body line


def test_past_the_budget_the_outline_keeps_the_named_declaration_whole(tmp_path):
    raw = cat(tmp_path, module(300, special=150))
    assert tokens.count_bytes(raw) > 6000
    eng = Engine(tmp_path / "st", mode="standard", scope="t")
    plain = eng.observe(Observation(raw, command="cat billing.py")).data.decode()
    aimed = eng.observe(Observation(raw, command="cat billing.py", intent="fix refund_half: it drops a cent")).data.decode()
    src = raw.decode().splitlines()
    start = src.index("def refund_half(amount):")
    body = [f"{start + 1 + k}: {src[start + k]}" for k in range(1, 6)]
    assert not all(ln in plain.splitlines() for ln in body)            # the plain outline has the head only
    assert all(ln in aimed.splitlines() for ln in body)                # the goal's function, whole
    assert "[structure:" in aimed and tokens.count(aimed) < tokens.count_bytes(raw) // 2
