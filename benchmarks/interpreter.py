"""`--python PATH` for the benchmarks: measure the capsule installed for another interpreter (an
older checkout's venv, a user's install) by running the same benchmark script under it.

Not responsible for what a benchmark measures.
Invariant: under the named interpreter the script runs once, with the same arguments but --python.
"""

from __future__ import annotations

import argparse
import os
import sys

HELP = "measure the capsule installed for this interpreter (this script runs under it)"


def add_option(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--python", help=HELP)


def run_under(ap: argparse.ArgumentParser, python: str | None, script: str) -> None:
    """Re-run script under python (never returns) unless it is this interpreter; a missing one is
    a usage error."""
    if not python:
        return
    if not os.access(python, os.X_OK):
        ap.error(f"--python {python}: no such interpreter")
    # abspath, not realpath: two venvs' pythons are symlinks to one interpreter, each with its own install
    if os.path.abspath(python) != os.path.abspath(sys.executable):
        argv = [a for a in sys.argv[1:] if a != python and a != "--python" and not a.startswith("--python=")]
        os.execv(python, [python, os.path.abspath(script), *argv])
