"""Searches with context cut by the task (issue 29.3): real rg and grep over a tree written here, past
the view size, keep whole the match groups the task's cues point at (the intent, the user's last
prompt, the session's failing frames and recent edits), fold the rest in the one marker form, and
every omitted run is one `ctx expand --lines` away."""

from __future__ import annotations

import re
import subprocess

import pytest

from capsule.engine import Engine
from capsule.ground.types import Observation, Request
from capsule.observe import markers

FILES = 8
FUNCS = 45


def module(k: int) -> str:
    """A module of refunds, each charge() call 15 lines from the next: rg -C 4 shows one group each."""
    out = ["from shop.pay import audit, charge, notify", ""]
    for i in range(FUNCS):
        out += [f"def refund_{k}_{i}(order):", f"    '''Refund part {i} of an order.", f"    Shard {k}.", "    '''",
                f"    total = order.total * {i}", "    if total < 0:", "        return None", "    notify(order, total)",
                f"    audit(order, 'refund_{k}_{i}')", "    charge(order, -total)", "    notify(order, -total)",
                "    audit(order, 'done')", "    notify(order, 0)", f"    return round(total / {i + 1}, 2)", ""]
        if k == 5 and i == 30:
            out += ["", "", "", "def apply_discount(order, rate):", "    '''Discount an order by its coupon rate.'''",
                    "    total = order.total * (1 - rate)", "    coupon = order.coupon or 'none'",
                    "    charge(order, total)", "    return total", "", "", "", ""]
    return "\n".join(out) + "\n"


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "ws"
    (root / "shop").mkdir(parents=True)
    for k in range(FILES):
        (root / "shop" / f"m{k}.py").write_text(module(k))
    return root


@pytest.fixture
def engine(tmp_path):
    eng = Engine(tmp_path / "st", mode="standard", scope="t")
    yield eng
    eng.close()


def run(args, cwd) -> str:
    return subprocess.run(args, cwd=cwd, capture_output=True, check=True, text=True).stdout


def search(tree, *flags) -> tuple[str, str]:
    args = ["rg", "-n", *flags, "--sort", "path", "charge\\(", "shop"]
    raw = run(args, tree)
    assert raw.count("\n") > 1000                # past the bounded view's size: a cut happens
    return raw, " ".join(args)


def group_of(raw: str, needle: str) -> list[str]:
    """The `--`-separated group of the tool's output holding `needle`."""
    for block in raw.rstrip("\n").split("\n--\n"):
        if needle in block:
            return block.split("\n")
    raise AssertionError(needle)


def observe(engine, raw: str, command: str, scope="t", **kw) -> str:
    return engine.observe(Observation(raw.encode(), command=command, scope=scope, **kw)).data.decode()


def body(out: str) -> list[str]:
    lines = out.rstrip("\n").split("\n")
    assert lines[-1].startswith("[full output: capsule ctx expand '<<ccr:")
    return lines[:-1]


def contains_in_order(out: list[str], block: list[str]) -> bool:
    try:
        start = out.index(block[0])
    except ValueError:
        return False
    return out[start:start + len(block)] == block


def test_intent_naming_a_function_keeps_its_match_group_whole(engine, tree):
    raw, cmd = search(tree, "-C", "4")
    out = observe(engine, raw, cmd, intent="apply_discount charges the wrong total")
    shown = body(out)
    assert contains_in_order(shown, group_of(raw, "def apply_discount"))
    assert len(out) < len(raw) // 5
    assert markers.check(raw.count("\n"), shown) is None            # kept + markers == total, ranged
    assert sum(1 for ln in shown if markers.parse(ln)) > 1


def test_the_user_prompt_is_a_cue(engine, tree):
    raw, cmd = search(tree, "-B", "4", "-A", "2")
    out = observe(engine, raw, cmd, prompt="The coupon path double-bills: look at `apply_discount` please")
    assert contains_in_order(body(out), group_of(raw, "def apply_discount"))


def test_a_failing_frame_of_the_session_keeps_the_group_holding_its_line(engine, tree):
    src = (tree / "shop" / "m3.py").read_text().split("\n")
    line = src.index("def refund_3_17(order):") + 10      # its charge() call
    assert "charge(" in src[line - 1]
    trace = (f'Traceback (most recent call last):\n  File "shop/m3.py", line {line}, in refund_3_17\n'
             f"    charge(order, -total)\nValueError: card declined\n")
    engine.observe(Observation(trace.encode(), command="python3 run.py", stream="stderr", exit_code=1, scope="f"))
    raw, cmd = search(tree, "-C", "3")
    out = observe(engine, raw, cmd, scope="f")
    assert contains_in_order(body(out), group_of(raw, f"shop/m3.py:{line}:"))


def test_a_recent_edit_is_a_cue(engine, tree):
    raw, cmd = search(tree, "-C", "4")
    edit = "shop/m5.py\ndef apply_discount(order, rate):\n    total = order.total * (1 - rate)"
    out = observe(engine, raw, cmd, edits=(edit,))
    assert contains_in_order(body(out), group_of(raw, "def apply_discount"))


def test_grep_with_context_words_only_ranks_by_bm25(engine, tree):
    raw = run(["grep", "-rn", "-C", "4", "charge(", "shop"], tree)
    assert raw.count("\n") > 1000
    out = observe(engine, raw, "grep -rn -C 4 'charge(' shop", intent="the coupon rate is applied twice")
    assert contains_in_order(body(out), group_of(raw, "apply_discount"))
    assert len(out) < len(raw) // 5


def test_every_omitted_run_is_one_expand_lines_away(engine, tree):
    raw, cmd = search(tree, "-C", "4")
    out = observe(engine, raw, cmd, intent="apply_discount")
    handle = re.search(r"<<ccr:([0-9a-f]+)>>", out).group(1)
    lines = raw.split("\n")
    for ln in [ln for ln in body(out) if markers.parse(ln)][:3]:
        n, a, b = markers.parse(ln)
        got = engine.request(Observation(request=Request("expand", tree, handle, lines=f"{a}-{b}"))).data.decode()
        assert got == "\n".join(lines[a - 1:b]) + "\n"


def test_same_inputs_same_bytes(tmp_path, tree):
    raw, cmd = search(tree, "-C", "4")
    outs = []
    for k in range(2):
        eng = Engine(tmp_path / f"st{k}", mode="standard", scope="d")
        outs.append(observe(eng, raw, cmd, scope="d", intent="why is the coupon rate wrong in apply_discount",
                            prompt="see `refund_2_9` too"))
        eng.close()
    assert outs[0] == outs[1]
    assert contains_in_order(body(outs[0]), group_of(raw, "'refund_2_9'"))


def test_without_cues_the_plain_search_cut_stands(engine, tree):
    raw, cmd = search(tree, "-C", "4")
    out = observe(engine, raw, cmd, scope="nocue")
    assert "def apply_discount" not in out                 # nothing points at it: the plain cut
