"""Template outliers (issue 25): in a run of search hits sharing a template, the hit that breaks it
is kept and the rest are counted with their template and the range of what varied. Real grep, run
on files written here."""

from __future__ import annotations

import subprocess

from capsule.engine import Engine
from capsule.ground import tokens
from capsule.observe.content.templates import cluster
from capsule.observe.filters.search_stream import ungroup
from capsule.ground.types import Observation


def grep(args: list[str], cwd) -> bytes:
    return subprocess.run(["grep", *args], cwd=cwd, capture_output=True, check=True).stdout


def test_the_one_todo_that_differs_of_301_is_kept(tmp_path):
    # Real Codex saw 301 hits, 300 `# TODO tidy imports in module D.M`; the cut kept 80 routine ones.
    for d in "abcdef":
        (tmp_path / "src" / d).mkdir(parents=True)
        for m in range(1, 51):
            (tmp_path / "src" / d / f"mod{m}.py").write_text(f"import os\n# TODO tidy imports in module {d}.{m}\n")
    (tmp_path / "src" / "c" / "refunds.py").write_text(
        "def refund_half(x):\n    # TODO refund_half subtracts one cent before rounding\n    return x / 2\n")
    raw = grep(["-rn", "TODO", "src"], tmp_path)
    assert raw.count(b"\n") == 301
    out = Engine(tmp_path / "st", mode="standard", scope="t").observe(Observation(raw, command="grep -rn TODO src")).data.decode()
    assert "src/c/refunds.py:2:    # TODO refund_half subtracts one cent before rounding" in out.splitlines()
    count = next(ln for ln in out.splitlines() if ln.startswith("(+"))
    assert "299 more hits" in count and "# TODO tidy imports in module <*>.<N>" in count
    assert "a, b, c, d, e, f" in count and "1…50" in count           # the range of what varied
    assert tokens.count(out) < tokens.count(raw.decode()) // 10


def test_sixty_hits_of_one_template_fold_below_the_cut(tmp_path):
    # Real Claude Code: 61 hits, 60 of one template, passed whole (under the 80-hit cut).
    (tmp_path / "handlers.py").write_text("".join(
        f"def handle_{i}(request):\n    log.debug('handler {i} called for %s', request.path)\n" for i in range(60))
        + "def handle_refund(request):\n    log.debug('refund called twice for %s: idempotency key ignored', request.path)\n")
    raw = grep(["-rn", "log.debug", "."], tmp_path)
    assert raw.count(b"\n") == 61
    eng = Engine(tmp_path / "st", mode="standard", scope="t")
    out = eng.observe(Observation(raw, command="grep -rn log.debug .")).data.decode()
    back = ungroup(out)
    assert "./handlers.py:122:    log.debug('refund called twice for %s: idempotency key ignored', request.path)" in back
    assert any("59 more hits of the template" in ln for ln in out.splitlines())
    assert tokens.count(out) < 0.3 * tokens.count(raw.decode())
    assert eng.observe(Observation(raw, command="grep -rn log.debug .")).data.decode() == out     # deterministic


def test_a_word_that_breaks_a_dominant_one_is_an_outlier():
    lines = [f"worker {i} finished batch {i * 7} in 12 ms" for i in range(40)]
    lines[17] = "worker 17 aborted batch 119 in 12 ms"
    folds, outliers = cluster(lines)
    assert outliers == {17} and len(folds) == 1 and 17 not in folds[0].members
    assert folds[0].template == "worker <N> finished batch <N> in 12 ms"


def test_routine_hits_in_a_file_the_intent_names_fold_within_that_file(tmp_path):
    # Real Codex's intent was the user's prompt, "why checkout drops orders": the path matched it, so
    # the 25 routine hits of checkout.py were each shown; they fold in their file, which stays in view
    for d, name in enumerate(("cart", "catalog", "checkout", "users", "taxes", "search"), 1):
        (tmp_path / "src").mkdir(exist_ok=True)
        (tmp_path / "src" / f"{name}.py").write_text("".join(
            f"def step_{i}(v):\n    # TODO tidy imports in module {d}.{i}\n    return v\n" for i in range(25)))
    (tmp_path / "src" / "refunds.py").write_text("def refund_half(x):\n    # TODO refund_half subtracts one cent\n")
    raw = grep(["-rn", "TODO", "src"], tmp_path)
    out = Engine(tmp_path / "st", mode="standard", scope="t").observe(Observation(
        raw, command="grep -rn TODO src", intent="Investigate why checkout drops orders.")).data.decode()
    lines = out.splitlines()
    assert "src/refunds.py:2:    # TODO refund_half subtracts one cent" in lines, out
    assert "src/checkout.py" in lines, out
    at = lines.index("src/checkout.py")
    assert lines[at + 1].startswith("2:    # TODO tidy imports in module 3.0"), out      # its sample
    assert lines[at + 2].startswith("(+24 more hits of the template"), out               # and its count


def test_a_fold_reads_lines_by_the_salience_templates_masks():
    # One notion of a line's template (issue 29 item 1): the hashes, timestamps and ids that
    # rarity.template masks are one slot each here too, so lines that differ only in them fold
    # (read word by word, a hash's letters and digits gave each line its own shape: no fold).
    import hashlib

    from capsule.observe import rarity
    shas = [hashlib.sha1(str(i).encode()).hexdigest()[:12] for i in range(30)]
    lines = [f"2024-05-0{1 + i % 9}T10:{i:02d}:00Z fetched object {sha} from remote pack-{i}a" for i, sha in enumerate(shas)]
    lines[12] = lines[12].replace("fetched", "skipped")
    assert len(set(rarity.templates(lines))) == 2
    folds, outliers = cluster(lines)
    assert outliers == {12} and len(folds) == 1 and len(folds[0].members) == 29
    assert folds[0].template == "<ts> fetched object <hex> from remote pack-<N>a"
    assert folds[0].ranges[0] == "<ts> 2024-05-01T10:00:00Z…2024-05-09T10:26:00Z"     # first…last
    assert folds[0].ranges[1].startswith("<hex> ") and folds[0].ranges[1].endswith("(+23)")    # 29 hashes
