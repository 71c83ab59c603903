"""No surprises on the command line (issue 33): no abbreviated flags, errors in the failing
subcommand's words with "did you mean", examples in every --help, and the small traps a newcomer hit."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from capsule.cli.main import build_parser

CLI = [sys.executable, "-m", "capsule"]


def capsule(*args, env=None, cwd=None, timeout=60):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env={**os.environ, **(env or {})})


def _walk(p):
    yield p
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sp in a.choices.values():
                yield from _walk(sp)


def test_every_parser_refuses_abbreviations_and_has_examples():
    parsers = list(_walk(build_parser()))
    assert len(parsers) > 30
    assert all(p.allow_abbrev is False for p in parsers), [p.prog for p in parsers if p.allow_abbrev]
    examples = tomllib.loads((Path(__file__).parents[2] / "capsule/cli/data/examples.toml").read_text())["examples"]
    progs = {p.prog for p in parsers}
    assert progs <= set(examples), sorted(progs - set(examples))
    assert set(examples) <= progs, sorted(set(examples) - progs)       # no entry for a parser that is gone
    for p in parsers:
        text = p.format_help()
        assert "\nexamples:\n" in text and examples[p.prog][0] in text, p.prog


def test_a_typo_in_a_flag_is_an_error_with_the_subcommands_usage_and_a_suggestion(tmp_path):
    up = capsule("up", "--rol", "python-dev", "--local", "--", "true", env={"JACKIN_CTX_STATE_DIR": str(tmp_path)})
    assert up.returncode == 2 and up.stdout == ""
    assert "usage: capsule up " in up.stderr and "did you mean --role?" in up.stderr, up.stderr
    assert not (tmp_path / "shims").exists()                         # nothing started
    gain = capsule("ctx", "gain", "--jsn")
    assert gain.returncode == 2 and "usage: capsule ctx gain" in gain.stderr and "--json?" in gain.stderr
    cmd = capsule("ctx", "gian")
    assert cmd.returncode == 2 and "usage: capsule ctx " in cmd.stderr and "did you mean 'gain'?" in cmd.stderr


def test_gain_emissions_must_be_positive(tmp_path):
    got = capsule("ctx", "gain", "--emissions", "-5", env={"JACKIN_CTX_STATE_DIR": str(tmp_path)})
    assert got.returncode == 2 and "at least 1" in got.stderr and got.stdout == ""


def test_fleet_report_on_a_missing_sqlite_file_is_an_error_not_a_new_database(tmp_path):
    db = tmp_path / "nonexist.db"
    got = capsule("fleet", "report", "--dsn", f"sqlite:///{db}")
    assert got.returncode == 2 and f"no database at {db}" in got.stderr, got.stderr
    assert not db.exists()


def test_quota_without_data_says_how_to_get_some(tmp_path):
    got = capsule("ctx", "quota", env={"JACKIN_CTX_STATE_DIR": str(tmp_path)})
    assert got.returncode == 0 and "capsule up" in got.stdout and "proxy" in got.stdout


def test_readme_degrade_at_default_is_the_default_roles():
    from capsule.policy.manifest import DEFAULT_ROLE, load_role

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    default = load_role(DEFAULT_ROLE).context.routing["degrade_at"]
    assert f"the default role {default}" in readme and "default 0.8)" not in readme


def test_doctor_says_whose_mode_each_line_gives_and_no_internal_words(tmp_path):
    got = capsule("ctx", "doctor", env={"JACKIN_CTX_STATE_DIR": str(tmp_path), "JACKIN_CTX_ROLE": ""}, cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    lines = got.stdout.splitlines()
    assert "`capsule ctx run` and `capsule ctx pipe` run in mode standard" in lines[0]
    role = next(line for line in lines if line.startswith("role "))
    assert "`capsule up` would start it in mode measure: count every output, change none" in role
    for word in ("INV-", "graduation", "manifest"):
        assert word not in got.stdout, word
