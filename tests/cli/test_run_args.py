"""`ctx run [--intent X] -- CMD…`, the form the shims and agents send on every tool call: argparse reads
the command after `--` untouched (its own flags, a second `--`, `--intent` or `--help` included) and
the intent before it; a form it cannot read is a usage error (exit 2), never a run."""

import os
import subprocess
import sys

import pytest

from capsule.cli import main

USUAL = [
    (["ctx", "run", "--", "git", "log", "--stat", "-n", "40"], None, ["git", "log", "--stat", "-n", "40"]),
    (["ctx", "run", "--", "ls", "-h"], None, ["ls", "-h"]),
    (["ctx", "run", "--", "--help"], None, ["--help"]),
    (["ctx", "run", "--", "a", "--", "b"], None, ["a", "--", "b"]),
    (["ctx", "run", "--", "a", "--intent", "y"], None, ["a", "--intent", "y"]),
    (["ctx", "run", "--intent", "find the failing test", "--", "pytest", "-x"], "find the failing test", ["pytest", "-x"]),
    (["ctx", "run", "--intent", "", "--", "true"], "", ["true"]),
    (["ctx", "run", "--intent=why -x fails", "--", "make"], "why -x fails", ["make"]),
    (["ctx", "run", "--intent=", "--", "make"], "", ["make"]),
    (["ctx", "run", "--intent", "x", "--", "a", "--intent", "y"], "x", ["a", "--intent", "y"]),
]
USAGE_ERRORS = [["ctx", "run", "--intent", "-x", "--", "a"],
                ["ctx", "run", "--intent"]]


@pytest.mark.parametrize("argv,intent,command", USUAL)
def test_the_usual_form_reads_the_intent_and_the_command_untouched(argv, intent, command):
    args = main.build_parser(argv).parse_args(argv)
    assert args.func.__name__ == "cmd_run" and args.intent == intent and args.argv == ["--", *command]


@pytest.mark.parametrize("argv", USAGE_ERRORS)
def test_a_form_argparse_cannot_read_is_a_usage_error(argv, state_dir):
    env = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir)}
    proc = subprocess.run([sys.executable, "-m", "capsule", *argv], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 2 and "usage: capsule ctx run" in proc.stderr
