"""Context requests are reads (issue 25): a search that asks for context lines, grep -n on one
named file, git grep -W, is shown whole like a bounded view (up to [reads] view_max_lines), not cut
like a listing. Real grep, rg and git on files written here."""

from __future__ import annotations

import re

import subprocess

from capsule.engine import Engine
from capsule.ground.types import Observation


def module(n_funcs: int) -> str:
    out = []
    for i in range(n_funcs):
        out += [f"def refund_{i}(order):", f"    '''Refund part {i} of an order.'''", f"    total = order.total * {i}",
                "    if total < 0:", "        raise ValueError('negative')", f"    return round(total / {i + 1}, 2)", ""]
    return "\n".join(out) + "\n"


def run(args, cwd) -> bytes:
    return subprocess.run(args, cwd=cwd, capture_output=True, check=True).stdout


def observe(tmp_path, raw: bytes, command: str) -> bytes:
    return Engine(tmp_path / "st", mode="standard", scope="t").observe(Observation(raw, command=command)).data


def test_grep_with_context_on_one_file_is_a_whole_view(tmp_path):
    (tmp_path / "billing.py").write_text(module(60))
    cmd = ["grep", "-n", "raise ValueError", "billing.py", "-B", "5", "-A", "30"]
    raw = run(cmd, tmp_path)
    assert raw.count(b"\n") > 300          # 60 regions, far past the 80-hit cut of a listing
    assert observe(tmp_path, raw, " ".join(cmd)) == raw


def test_grep_n_on_one_named_file_is_a_read(tmp_path):
    (tmp_path / "billing.py").write_text(module(150))
    raw = run(["grep", "-n", "total", "billing.py"], tmp_path)
    assert raw.count(b"\n") == 450
    assert observe(tmp_path, raw, "grep -n total billing.py") == raw


def test_rg_context_across_files_keeps_every_region(tmp_path):
    for k in range(6):
        (tmp_path / f"m{k}.py").write_text(module(20))
    raw = run(["rg", "-n", "-C", "2", "--sort", "path", "raise ValueError", "."], tmp_path)
    out = observe(tmp_path, raw, "rg -n -C 2 --sort path 'raise ValueError' .").decode()
    from capsule.observe.filters.search_stream import ungroup

    back = set(ungroup(out))
    assert {ln for ln in raw.decode().splitlines() if ln != "--"} <= back
    assert "more lines]" not in out


def test_git_grep_function_context_is_a_read(tmp_path):
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "billing.py").write_text(module(40))
    subprocess.run(["git", "add", "."], cwd=tmp_path, check=True)
    raw = run(["git", "grep", "-n", "-W", "raise ValueError"], tmp_path)
    assert raw.count(b"\n") > 200
    out = observe(tmp_path, raw, "git grep -n -W 'raise ValueError'").decode()
    from capsule.observe.filters.search_stream import ungroup

    assert set(raw.decode().splitlines()) - {"--"} <= set(ungroup(out))
    assert "more lines]" not in out


def test_a_context_search_past_the_view_size_is_still_bounded(tmp_path):
    (tmp_path / "billing.py").write_text(module(400))
    raw = run(["grep", "-n", "-A", "3", "total", "billing.py"], tmp_path)
    assert raw.count(b"\n") > 1000
    out = observe(tmp_path, raw, "grep -n -A 3 total billing.py")
    assert len(out) < len(raw) // 2 and re.search(rb"^\[\d+ more lines L\d+-\d+\]$", out, re.M)
