"""`ctx run [--intent X] -- CMD…` read without argparse gives exactly argparse's reading; other forms go to argparse."""

import os
import subprocess
import sys

import pytest

from capsule.cli import main

FAST = [
    ["ctx", "run", "--", "git", "log", "--stat", "-n", "40"],
    ["ctx", "run", "--", "ls", "-h"],
    ["ctx", "run", "--", "--help"],
    ["ctx", "run", "--", "a", "--", "b"],
    ["ctx", "run", "--", "a", "--intent", "y"],
    ["ctx", "run", "--intent", "find the failing test", "--", "pytest", "-x"],
    ["ctx", "run", "--intent", "", "--", "true"],
    ["ctx", "run", "--intent=why -x fails", "--", "make"],
    ["ctx", "run", "--intent=", "--", "make"],
    ["ctx", "run", "--intent", "x", "--", "a", "--intent", "y"],
]
NOT_FAST = [
    ["ctx", "run"], ["ctx", "run", "--"], ["ctx", "run", "git", "log"], ["ctx", "run", "--help"],
    ["ctx", "run", "--intent", "-x", "--", "a"], ["ctx", "run", "--intent", "x", "y", "--", "a"],
    ["ctx", "run", "--int", "x", "--", "a"], ["ctx", "run", "--intent"], ["ctx", "pipe", "--", "a"],
    ["ctx", "runx", "--", "a"], ["--version"], [],
]


@pytest.mark.parametrize("argv", FAST)
def test_the_usual_form_reads_as_argparse_reads_it(argv):
    fast = main.run_args(argv)
    assert fast is not None
    assert vars(fast) == vars(main.build_parser(argv).parse_args(argv))


@pytest.mark.parametrize("argv", NOT_FAST)
def test_every_other_form_is_left_to_argparse(argv):
    assert main.run_args(argv) is None


def test_a_usual_run_does_not_import_argparse(state_dir, tmp_path):
    code = ("import sys; from capsule.cli import main; rc = main.main(['ctx', 'run', '--', 'true']); "
            "print(rc, 'argparse' in sys.modules)")
    env = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir), "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert out.split()[-2:] == ["0", "False"]
