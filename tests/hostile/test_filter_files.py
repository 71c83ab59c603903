"""Hostile project and role filter files: catastrophic regexes, devices, huge files.

Issue 11, Security: a trusted filter's regex must not stall the engine (RE2, linear time), a
pattern that needs backtracking is refused when it is trusted, and a filter path naming a device
or a huge file is refused without being read.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time

import pytest

from capsule.observe.filters.linear import LinearPattern
from capsule.observe.filters.spec import FilterError, parse_file

CATASTROPHIC = b"""schema = 1
[filters.acme]
match = ['^acme\\b']
strip_lines = ['^(a+)+$']
"""


def _limited():
    """Children get 1 GiB of address space: an unbounded read fails fast instead of eating the box."""
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def _run(args, cwd, state_dir, input=b"", timeout=20.0):
    env = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir)}
    return subprocess.run([sys.executable, "-m", "capsule", *args], input=input, capture_output=True,
                          cwd=cwd, env=env, timeout=timeout, preexec_fn=_limited)


@pytest.fixture
def project(tmp_path, state_dir):
    root = tmp_path / "proj"
    (root / ".capsule").mkdir(parents=True)
    return root


def test_a_catastrophic_regex_in_a_trusted_filter_runs_in_linear_time(project, state_dir):
    (project / ".capsule" / "filters.toml").write_bytes(CATASTROPHIC)
    trusted = _run(["ctx", "trust", ".capsule/filters.toml"], project, state_dir)
    assert trusted.returncode == 0, trusted.stderr
    hostile = ("a" * 33 + "!\n") * 50
    payload = ("aaaa\n" * 400 + hostile).encode()   # enough noise to be worth removing
    start = time.monotonic()
    try:
        proc = _run(["ctx", "pipe", "--cmd", "acme deploy"], project, state_dir, input=payload, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("a backtracking regex held the engine for over 30 s")
    took = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    assert out.count("a" * 33 + "!") == 50          # the hostile lines are not noise: all kept
    assert "\naaaa\n" not in "\n" + out             # the noise lines went
    assert took < 30


def test_the_linear_engine_answers_the_probe_in_milliseconds():
    pattern = LinearPattern("^(a+)+$")
    start = time.perf_counter()
    assert pattern.search("a" * 33 + "!") is None
    assert pattern.search("a" * 100_000) is not None
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize("regex", ["(?=x)y", "(a)\\1", "x(?!y)"])
def test_ctx_trust_refuses_a_regex_that_needs_backtracking(project, state_dir, regex):
    path = project / ".capsule" / "filters.toml"
    path.write_text(f"schema = 1\n[filters.acme]\nmatch = ['^acme']\nstrip_lines = ['{regex}']\n")
    proc = _run(["ctx", "trust", ".capsule/filters.toml"], project, state_dir)
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert "strip_lines[0]" in err and "linear-time" in err and "Traceback" not in err
    listing = _run(["ctx", "trust", "--list", "--json"], project, state_dir)
    assert json.loads(listing.stdout) == {}


def test_linear_filters_keep_the_dsl_semantics():
    """Multi-line anchors, groups in summaries and replacement templates behave as with `re`."""
    specs = parse_file(b"""schema = 1
[filters.t]
match = ['^t\\b']
replace = [{ pattern = '(\\d+) ms', with = '\\1ms' }]
strip_lines = ['^noise']
""", "t.toml", linear=True)
    from capsule.observe.filters.stages import run_stages

    out, removals, _ = run_stages(specs["t"], "noise a\nok 12 ms\nbyte \udcff kept\n", 0)
    assert out.startswith("ok 12ms\nbyte \udcff kept\n")
    assert sum(r.count for r in removals) == 1
    with pytest.raises(FilterError):
        parse_file(b"[filters.t]\nstrip_lines = ['(?<=a)b']\n", "t.toml", linear=True)


@pytest.mark.parametrize("target", ["/dev/zero", "/dev/urandom"])
def test_ctx_trust_refuses_a_device_at_once(project, state_dir, target):
    start = time.monotonic()
    try:
        proc = _run(["ctx", "trust", target], project, state_dir, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail(f"ctx trust {target} read without end")
    assert proc.returncode == 2
    assert "not a regular file" in proc.stderr.decode() and b"Traceback" not in proc.stderr
    assert time.monotonic() - start < 20


ROLE_PROBE = """
import resource, sys, time
from capsule.engine import Engine
from capsule.ground.types import Observation
from capsule.observe.filters import filter_engine as fe
fe.set_role_filters([{"path": sys.argv[1], "sha256": "0" * 64}])
start = time.monotonic()
out = Engine().observe(Observation(b"hello\\n" * 3, command="git status")).data
print(round(time.monotonic() - start, 3), out == b"hello\\n" * 3,
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""


@pytest.mark.parametrize("kind", ["device", "fifo", "huge"])
def test_a_role_filter_path_that_is_not_a_small_regular_file_is_refused(tmp_path, state_dir, kind):
    if kind == "device":
        target = "/dev/zero"
    elif kind == "fifo":
        target = str(tmp_path / "fifo")
        os.mkfifo(target)
    else:
        target = str(tmp_path / "huge.toml")
        with open(target, "wb") as fh:
            fh.truncate(2 << 30)           # sparse: 2 GiB of zeros
    env = {**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir)}
    try:
        proc = subprocess.run([sys.executable, "-c", ROLE_PROBE, target], capture_output=True, env=env,
                              timeout=20, preexec_fn=_limited)
    except subprocess.TimeoutExpired:
        pytest.fail(f"a role filter path naming a {kind} blocked the engine")
    assert proc.returncode == 0, proc.stderr.decode()[-800:]
    took, unchanged, peak_mib = proc.stdout.split()
    assert unchanged == b"True" and float(took) < 10
    assert int(peak_mib) < 400, f"{peak_mib} MiB peak: the filter path was read without a size limit"
