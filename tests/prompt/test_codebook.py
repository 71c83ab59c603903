"""prompt/codebook.py: aliases chosen from ledger counts, pinned, dropped when they stop paying."""

from __future__ import annotations

from capsule.ground.tokens import count
from capsule.policy.manifest import load_role
from capsule.prompt import budget, codebook, pack

LONG = "capsule/observe/content/structured_crusher.py"


def _commands(n_long: int, n_other: int = 0) -> list[str]:
    return [f"ctx_read {LONG} full"] * n_long + ["ctx_read src/a/b.py full"] * n_other


def test_a_recurring_long_path_gets_an_alias_and_a_rare_one_does_not():
    aliases = codebook.choose(codebook.candidates(_commands(12, 12)), count)
    assert aliases == [("@1", LONG)]          # src/a/b.py is too short to be a candidate
    assert codebook.choose(codebook.candidates(_commands(2)), count) == []   # under min_uses


def test_at_most_eight_and_the_same_counts_give_the_same_bytes():
    cmds = [f"ctx_read capsule/observe/content/module_number_{i:02d}.py full" for i in range(12) for _ in range(10 + i)]
    first = codebook.render(codebook.choose(codebook.candidates(cmds), count))
    again = codebook.render(codebook.choose(codebook.candidates(list(reversed(cmds))), count))
    assert first == again and first.count("\n@") == pack.data()["codebook"]["max_aliases"] == 8
    assert "module_number_11" in first and "module_number_00" not in first    # most used first


def test_pinned_legend_is_read_not_recomputed_and_dropped_at_the_next_pin(tmp_path):
    role = load_role("aggressive")          # codebook = true
    legend = codebook.pin(tmp_path, role.name, _commands(12), count)
    assert LONG in legend and codebook.legend(role, tmp_path) == legend
    assert codebook.legend(role, tmp_path) == legend                     # reading never changes it
    assert codebook.pin(tmp_path, role.name, _commands(1), count) == ""    # stopped recurring: dropped
    assert codebook.legend(role, tmp_path) == ""


def test_the_legend_is_a_standing_part_counted_by_doctor(tmp_path, monkeypatch):
    monkeypatch.setenv("JACKIN_CTX_STATE_DIR", str(tmp_path))
    role = load_role("aggressive")
    codebook.pin(tmp_path, role.name, _commands(12), count)
    from capsule.ground.switches import Switches
    from capsule.policy import plan as planning

    parts = budget.texts("codex", role, planning.plan(role, Switches.read({})))
    assert parts["codebook"] == codebook.legend(role, tmp_path)
