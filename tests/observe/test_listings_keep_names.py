"""Listings keep every name (issue 25): `ls -la` of ~190 entries lost 90 names to the budget, and the
agent's next step used one. Only repeated columns fold. Real ls on a directory made here."""

from __future__ import annotations

import subprocess

from capsule.engine import Engine
from capsule.ground.types import Observation
from capsule.ground import tokens


def tree(tmp_path):
    d = tmp_path / "proj"
    d.mkdir()
    for i in range(150):
        (d / f"file_{i}.py").write_text("x" * (i % 7))
    for i in range(20):
        (d / f"pkg_{i}").mkdir()
    for i in range(18):
        (d / f"notes_{i}.md").write_text("")
    return d


def names(d) -> list[str]:
    return sorted(p.name for p in d.iterdir())


def test_ls_la_of_190_entries_keeps_every_name_and_folds_shared_columns(tmp_path):
    d = tree(tmp_path)
    raw = subprocess.run(["ls", "-la"], cwd=d, capture_output=True, check=True).stdout
    assert raw.count(b"\n") == 191          # total, ., .. and 188 entries
    out = Engine(tmp_path / "st", mode="standard", scope="t").observe(Observation(raw, command="ls -la")).data.decode()
    for name in names(d):
        assert any(ln.endswith(" " + name) for ln in out.splitlines()), name
    assert "(every entry below: owner" in out                     # the repeated columns, once
    assert tokens.count(out) < tokens.count_bytes(raw)


def test_a_bare_ls_keeps_every_name(tmp_path):
    d = tree(tmp_path)
    raw = subprocess.run(["ls"], cwd=d, capture_output=True, check=True).stdout
    out = Engine(tmp_path / "st", mode="standard", scope="t").observe(Observation(raw, command="ls")).data.decode()
    assert set(out.splitlines()) >= set(names(d))


def test_past_the_budget_an_entry_loses_its_columns_not_its_name(tmp_path):
    d = tmp_path / "big"
    d.mkdir()
    for i in range(450):
        (d / f"m{i:03}.txt").write_text("")
    raw = subprocess.run(["ls", "-la"], cwd=d, capture_output=True, check=True).stdout
    out = Engine(tmp_path / "st", mode="standard", scope="t").observe(Observation(raw, command="ls -la")).data.decode()
    for name in names(d):
        assert name in out, name
