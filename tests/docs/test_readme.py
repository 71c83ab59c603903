"""The README's promises, checked as a new user meets them: its first command on a fresh clone with a
system Python that refuses `pip install` (PEP 668), and every `capsule …` command it names parses."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from capsule.cli.main import build_parser

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
SYSTEM_PYTHON = "/usr/bin/python3"


def sh_blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", README, re.S)


def first_command() -> str:
    section = README[README.index("## Two commands"):]
    return re.search(r"```sh\n(.*?)\n```", section, re.S).group(1).strip()


def capsule_invocations() -> list[tuple[str, list[str]]]:
    found = []
    for block in sh_blocks():
        for line in block.splitlines():
            words = shlex.split(line.replace("…", "x"), comments=True)
            words = [w.removeprefix("[").removesuffix("]") for w in words]   # [--opt VALUE]: optional parts
            segment: list[str] = []
            for w in [*words, ";"]:
                if w in (";", "&&", "||", "|"):
                    if segment and segment[0] == "capsule":
                        found.append((line.strip(), segment[1:]))
                    segment = []
                else:
                    segment.append(w)
    return found


def test_the_readme_names_capsule_commands():
    assert len(capsule_invocations()) >= 25


@pytest.mark.parametrize("line,argv", capsule_invocations(), ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_every_capsule_command_in_the_readme_parses(line, argv):
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        pytest.fail(f"README line {line!r}: `capsule {' '.join(argv)}` is refused by the CLI (exit {exc.code})")
    assert getattr(args, "func", None) is not None, f"README line {line!r} names no runnable command"


def test_the_first_command_works_on_a_fresh_clone_where_system_pip_refuses(tmp_path):
    """The exact first command, in a new clone, with Debian's python3 first on PATH."""
    refused = subprocess.run([SYSTEM_PYTHON, "-m", "pip", "install", "--dry-run", "--no-index", "six"],
                             capture_output=True, text=True)
    assert refused.returncode != 0 and "externally-managed-environment" in refused.stderr, \
        "precondition: the system Python here must refuse pip installs (PEP 668)"
    clone = tmp_path / "capsule"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": f"{Path(SYSTEM_PYTHON).parent}:/bin", "HOME": str(home), "LANG": "C.UTF-8",
           "JACKIN_CTX_STATE_DIR": str(tmp_path / "state"),
           # the user's pip cache, so the test does not download every wheel again
           "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))}
    run = subprocess.run(["bash", "-c", first_command()], cwd=clone, env=env, capture_output=True, timeout=900)
    err = run.stderr.decode(errors="replace")[-2000:]
    assert run.returncode == 0, err
    out = run.stdout.decode(errors="replace")
    assert re.search(r"\[full output: capsule ctx expand '<<ccr:[0-9a-f]{24}>>'\]", out), out[-1500:]
    assert "TOTAL" in out and "saved" in out
