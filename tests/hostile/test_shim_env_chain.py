"""JACKIN_CTX_CHAIN_ENV naming another capsule-env.sh (a session started inside another session with
its own shim dir), or the same one, must not make the env file source itself forever (issue 24: bash
died with SIGSEGV): the shell runs, the inner session's shims come first on PATH, the chained file ran."""

from __future__ import annotations

import os
import subprocess

import pytest

from capsule import shims


@pytest.mark.parametrize("chain", ["other", "self"])
def test_a_chained_capsule_env_file_does_not_recurse(tmp_path, chain):
    inner, outer = tmp_path / "inner", tmp_path / "outer"
    shims.install(inner, names=["cat"])
    shims.install(outer, names=["cat"])
    env_file = inner / shims.ENV_FILE
    chained = outer / shims.ENV_FILE if chain == "other" else env_file
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "BASH_ENV": str(env_file),
           "JACKIN_CTX_CHAIN_ENV": str(chained)}
    proc = subprocess.run(["bash", "-c", 'echo "ok $PATH"; echo "chain=$JACKIN_CTX_CHAIN_ENV"'], env=env,
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-500:])
    path = proc.stdout.split("\n")[0].split(" ", 1)[1].split(":")
    assert path[0] == str(inner)
    if chain == "other":
        assert str(outer) in path                     # the chained (outer) file ran too
    assert f"chain={chained}" in proc.stdout          # and the variable is as it was
