"""Issue 29's findings, each on output made at test time by running the real commands: the one line
that differs in an output no family rule was written for survives every door, and the markers
around it keep the one contract (observe/markers.py): one marker per omitted run, in place, saying
how many lines and which, adding up to the original's length, never "the lines above repeat"."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from capsule.engine import Engine
from capsule.ground.types import Observation
from capsule.observe import guard, markers

ODD = "step 61: database connection pool exhausted for tenant acme"
SCRIPT = ('for i in $(seq 1 60); do echo "step $i: processing shard-$i of dataset alpha"; done\n'
          f'echo "{ODD}"\n'
          'for i in $(seq 62 120); do echo "step $i: processing shard-$i of dataset alpha"; done\n')


def body(out: str) -> list[str]:
    """The emission's lines without the recovery footer."""
    lines = out.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [ln for ln in lines if not guard.FOOTER_RE.search(ln)]


def assert_contract(raw: str, out: str, odd: str) -> None:
    lines = body(out)
    assert odd in lines, out
    total = len(raw.split("\n")) - raw.endswith("\n")
    assert markers.check(total, lines) is None, (markers.check(total, lines), out)
    k = lines.index(odd)
    for near in lines[max(0, k - 1):k + 2]:
        assert "repeat" not in near and "lines above" not in near, out
    assert not any("lines above" in ln for ln in lines), out


@pytest.fixture(scope="module")
def script(tmp_path_factory):
    d = tmp_path_factory.mktemp("pipeline")
    (d / "run_pipeline.sh").write_text(SCRIPT)
    return d


def test_a_scripts_one_failing_step_survives_ctx_run(script, capsule):
    raw = subprocess.run(["sh", "run_pipeline.sh"], cwd=script, capture_output=True, text=True).stdout
    r = capsule("ctx", "run", "--", "sh", str(script / "run_pipeline.sh"))
    out = r.stdout.decode()
    assert r.returncode == 0 and guard.FOOTER_RE.search(out), out
    assert_contract(raw, out, ODD)
    assert len(body(out)) < 20, out        # the routine steps fold: first line, one marker


@pytest.mark.parametrize("cmd", [None, "python3 etl.py"], ids=["no-command", "python"])
def test_a_scripts_one_failing_step_survives_ctx_pipe(script, capsule, cmd):
    raw = subprocess.run(["sh", "run_pipeline.sh"], cwd=script, capture_output=True).stdout
    r = capsule("ctx", "pipe", *(["--cmd", cmd] if cmd else []), input=raw)
    assert r.returncode == 0, r.stderr
    assert_contract(raw.decode(), r.stdout.decode(), ODD)


def observe(tmp_path, raw: bytes, command: str | None, exit_code: int | None = 0) -> str:
    engine = Engine(tmp_path / "state", mode="standard", scope="t")
    return engine.observe(Observation(raw, command=command, exit_code=exit_code)).data.decode()


GEN_JOURNAL = """
import sys
for i in range(300):
    if i == 173:
        print("Dec 02 10:%02d:%02d web-1 app[4121]: connection pool exhausted for tenant acme" % (i // 60, i % 60))
    print("Dec 02 10:%02d:%02d web-1 app[4121]: served request %d in %d ms" % (i // 60, i % 60, 1000 + i, 5 + i % 17))
"""
GEN_JSONL = """
import json
for i in range(300):
    rec = {"ts": "2026-12-02T10:%02d:%02dZ" % (i // 60, i % 60), "level": "info", "msg": "served", "id": 9000 + i, "ms": 5 + i % 13}
    if i == 211:
        rec = {"ts": rec["ts"], "level": "info", "msg": "tenant acme switched to read-only replica", "id": 9000 + i, "ms": 0}
    print(json.dumps(rec))
"""


@pytest.mark.parametrize("command", ["journalctl -u app --no-pager", "kubectl logs web-1", None])
def test_a_log_streams_one_off_line_survives_with_true_markers(tmp_path, command):
    gen = tmp_path / "gen.py"
    gen.write_text(GEN_JOURNAL)
    raw = subprocess.run([sys.executable, str(gen)], capture_output=True).stdout
    odd = next(ln for ln in raw.decode().splitlines() if "exhausted" in ln)
    out = observe(tmp_path, raw, command)
    assert_contract(raw.decode(), out, odd)


@pytest.mark.parametrize("command", ["python3 app.py", None])
def test_a_json_lines_logs_one_off_record_survives(tmp_path, command):
    gen = tmp_path / "gen.py"
    gen.write_text(GEN_JSONL)
    raw = subprocess.run([sys.executable, str(gen)], capture_output=True).stdout
    odd = next(ln for ln in raw.decode().splitlines() if "read-only" in ln)
    out = observe(tmp_path, raw, command)
    assert odd in body(out), out
    assert not any("lines above" in ln or "repeat" in ln for ln in body(out)), out


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """400 small files and one of 38G (sparse: `du --apparent-size` and `ls -l` read its size)."""
    root = tmp_path_factory.mktemp("tree")
    for d in range(20):
        (root / f"d{d}").mkdir()
        for f in range(20):
            (root / f"d{d}" / f"f{f}.txt").write_bytes(b"x" * (100 + 10 * f))
    with open(root / "d7" / "huge.bin", "wb") as fh:
        fh.truncate(38 << 30)
    return root


@pytest.mark.parametrize("flags", [["-a", "--apparent-size"], ["-ah", "--apparent-size"]], ids=["bytes", "human"])
def test_du_keeps_the_one_huge_entry(tree, tmp_path, flags):
    raw = subprocess.run(["du", *flags, "."], cwd=tree, capture_output=True).stdout
    odd = next(ln for ln in raw.decode().splitlines() if ln.endswith("huge.bin"))
    out = observe(tmp_path, raw, "du " + " ".join(flags) + " .")
    assert odd in body(out), out


def test_ls_l_keeps_the_one_huge_file(tmp_path):
    big = tmp_path / "many"
    big.mkdir()
    for f in range(300):      # 300 files of ~2 KB and one of 40G (sparse)
        (big / f"part-{f:04d}.dat").write_bytes(b"y" * (2000 + f))
    with open(big / "part-0173.dat", "wb") as fh:
        fh.truncate(40 << 30)
    raw = subprocess.run(["ls", "-l", "--time-style=+%Y"], cwd=big, capture_output=True).stdout
    odd = next(ln for ln in raw.decode().splitlines() if ln.endswith("part-0173.dat"))
    out = observe(tmp_path, raw, "ls -l")
    assert odd in body(out), out


def test_a_tables_one_status_and_a_csvs_one_value_are_salient(tmp_path):
    gen = tmp_path / "gen.py"
    gen.write_text(
        "print('NAME                    READY   STATUS             RESTARTS   AGE')\n"
        "for i in range(120):\n"
        "    status = 'CrashLoopBackOff' if i == 77 else 'Running'\n"
        "    print(f'worker-{i:04d}-7f9c   1/1     {status:<18} 0          3d')\n")
    raw = subprocess.run([sys.executable, str(gen)], capture_output=True).stdout
    odd = next(ln for ln in raw.decode().splitlines() if "CrashLoop" in ln)
    for command in ("kubectl get pods", None):
        assert odd in body(observe(tmp_path, raw, command)), command
    csv = tmp_path / "orders.csv"
    rows = ["id,customer,status,amount"] + [f"{i},c{i % 37},paid,{20 + i % 50}" for i in range(400)]
    rows[251] = "250,c28,paid,98000000"
    csv.write_text("\n".join(rows) + "\n")
    raw = subprocess.run(["cat", str(csv)], capture_output=True).stdout
    out = observe(tmp_path, raw, "cat orders.csv")
    assert "250,c28,paid,98000000" in out, out
