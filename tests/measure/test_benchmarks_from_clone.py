"""Every benchmark runs from a plain clone: its default inputs ship in the repo, and it runs on a tiny input.

The corpora under benchmarks/corpus were made by running real tools (make_corpus.py); these tests
check their layout and that each benchmark script runs end to end on a small input, as a subprocess
(the way a user runs it), without ../shared. bench_speed makes its own inputs and is run tiny below; bench_agents, bench_session_cost and bench_usage make
their inputs by driving the real clients at run time (no corpus); their own e2e tests cover them,
and the guard below keeps every benchmark off hard-coded external corpus paths.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "benchmarks"
CORPUS = BENCH / "corpus"
CASE_FILES = ["cmd.txt", "output.txt", "exit_code.txt", "must_keep.txt", "intent.txt", "meta.json"]


def run(script: str, *args: str, timeout: int = 240) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JACKIN_CTX_")}
    return subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True, text=True,
                          timeout=timeout, cwd="/", env=env)


def test_no_benchmark_hard_codes_an_external_corpus():
    """Only corpora.py knows where ../shared/corpus is; a benchmark never needs it to run."""
    offenders = [p.name for p in BENCH.glob("*.py")
                 if p.name != "corpora.py" and ("/work/shared" in p.read_text() or '"shared"' in p.read_text()
                                                and "corpora" not in p.read_text())]
    assert not offenders, offenders


def cases(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir())


@pytest.mark.parametrize("name", ["dev", "holdout", "fresh"])
def test_shipped_corpus_is_complete(name):
    folder = CORPUS / name
    found = cases(folder)
    assert len(found) >= 40, f"{folder} has only {len(found)} cases"
    for case in found:
        missing = [f for f in CASE_FILES if not (case / f).is_file()]
        assert not missing, f"{case.name} lacks {missing}"
        meta = json.loads((case / "meta.json").read_text())
        assert meta["family"] and meta["source"] and meta["tool_version"], case.name
        assert (case / "output.txt").stat().st_size <= 1_000_000, case.name
        int((case / "exit_code.txt").read_text())
        out = (case / "output.txt").read_bytes().decode("utf-8", "surrogateescape").split("\n")
        for line in (case / "must_keep.txt").read_bytes().decode("utf-8", "surrogateescape").split("\n"):
            assert not line or line in out, f"{case.name}: must-keep line not in output: {line[:80]!r}"


@pytest.mark.parametrize("a,b", [("dev", "holdout"), ("dev", "fresh"), ("holdout", "fresh")])
def test_no_project_is_in_two_sets(a, b):
    """By source (`pypi:click==8.5.1`) and by project name (`click`), whatever the version or tool."""
    def sources(name):
        return {json.loads((c / "meta.json").read_text())["source"] for c in cases(CORPUS / name)}

    def projects(srcs):          # `npm:express@5,debug@4` -> express, debug; `debian:librust-x-dev (x-1)` -> x
        names = set()
        for s in srcs:
            kind, _, rest = s.partition(":")
            if kind == "debian":
                names.add("crate:" + rest.split()[0].removeprefix("librust-").removesuffix("-dev"))
                continue
            for part in rest.split(","):
                names.add(re.split(r"==|(?<=.)@", part.strip())[0].lower())
        return names
    # the docker cases use the same local engine and `pip inspect`/`pip list` the same kind of tool venv
    own = {n: {s for s in sources(n) if not s.startswith(("docker:", "tools:"))} for n in (a, b)}
    assert not own[a] & own[b]
    assert not projects(own[a]) & projects(own[b]), projects(own[a]) & projects(own[b])


def test_bounded_reads_label_every_line():
    reads = [c for name in ("dev", "holdout", "fresh") for c in cases(CORPUS / name)
             if json.loads((c / "meta.json").read_text())["family"] == "read"]
    assert len(reads) >= 10
    for c in reads:
        out = [l for l in (c / "output.txt").read_text().split("\n") if l.strip()]
        assert set((c / "must_keep.txt").read_text().split("\n")) - {""} == set(out), c.name


def test_bench_corpus_defaults_need_no_shared_corpus():
    sys.path.insert(0, str(BENCH))
    try:
        import corpora
    finally:
        sys.path.remove(str(BENCH))
    found = dict(corpora.default_corpora(with_shared=False))
    assert found == {"dev": CORPUS / "dev", "holdout": CORPUS / "holdout", "fresh": CORPUS / "fresh"}


@pytest.fixture
def tiny_corpus(tmp_path) -> Path:
    """Three shipped cases: a failing pytest run, a bounded read, a grep."""
    dest = tmp_path / "tiny"
    dest.mkdir()
    for prefix in ("pytest_q_fail_", "read_sed_", "grep_def_"):
        src = next(c for c in cases(CORPUS / "dev") if c.name.startswith(prefix))
        shutil.copytree(src, dest / src.name)
    return dest


def test_bench_corpus_runs_on_a_tiny_corpus(tiny_corpus):
    done = run("bench_corpus.py", "--no-defaults", "--corpus", str(tiny_corpus), "--misses")
    assert done.returncode == 0, done.stderr
    assert "tiny" in done.stdout and "ALL" in done.stdout and "read_lines" in done.stdout
    row = next(l for l in done.stdout.splitlines() if l.startswith("ALL"))
    assert row.split()[1] == "3"


def test_bench_corpus_rejects_a_missing_folder(tmp_path):
    done = run("bench_corpus.py", "--no-defaults", "--corpus", str(tmp_path / "nope"))
    assert done.returncode == 2 and "no corpus folder" in done.stderr


def test_bench_content_runs_on_a_tiny_input(tiny_corpus, tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    shutil.copy(BENCH / "corpora.py", lib / "corpora.py")
    done = run("bench_content.py", "--corpus", str(tiny_corpus), "--stdlib", str(lib))
    assert "json lossless" in done.stdout and "[tiny]" in done.stdout, done.stderr
    assert done.returncode in (0, 1), done.stderr          # 1 = a target missed on this tiny input


def test_bench_read_runs_on_a_tiny_input(tmp_path):
    (tmp_path / "a.py").write_text("def parse_header(line):\n    return line.split(':', 1)\n")
    done = run("bench_read.py", "--root", str(tmp_path), "--queries", "2", "--quick",
               "--state", str(tmp_path / "state"))
    assert "signatures vs full" in done.stdout and "tools/list answer" in done.stdout, done.stderr
    assert done.returncode in (0, 1), done.stderr          # the warm-search target needs >= 20,000 files


def test_bench_startup_runs_on_a_tiny_input():
    done = run("bench_startup.py", "--runs", "1")
    assert done.returncode == 0, done.stderr
    assert "capsule ctx run -- true" in done.stdout


def test_bench_shim_runs_on_a_tiny_input():
    done = run("bench_shim.py", "-n", "1", "--starts", "1")
    assert "supervisor start-to-milestone" in done.stdout, done.stderr
    assert "ready (socket answers PING)" in done.stdout and "warm engine (STATUS answered)" in done.stdout
    assert done.returncode in (0, 1), done.stderr          # 1 = over the latency budget on a loaded machine


def test_bench_proxy_runs_on_a_tiny_input():
    done = run("bench_proxy.py", "--requests", "3", "--skip-session")
    assert done.returncode == 0, done.stderr
    assert "Added latency per request" in done.stdout


def test_bench_proxy_session_files_exist_in_a_clone():
    """Without ../shared/corpus the session reads files shipped in the repo (dev corpus, repo files),
    each small enough for Claude Code's Read tool (256 KB)."""
    env = {k: v for k, v in os.environ.items() if k != "CAPSULE_CORPUS"}
    code = ("import sys, corpora; corpora.shared_corpus = lambda: None; sys.argv = ['x'];"
            "import importlib.util as u; s = u.spec_from_file_location('bp', 'bench_proxy.py');"
            "m = u.module_from_spec(s); s.loader.exec_module(m);"
            "paths = [m.REPO / c[5:] if c.startswith('repo:') else m.CORPUS / c / 'output.txt' for c, _ in"
            " m.SESSION_FILES];"
            "missing = [p for p in paths if not p.is_file() or p.stat().st_size > 256_000];"
            "print(m.CORPUS, missing); assert not missing and m.CORPUS == corpora.SHIPPED['dev']")
    done = subprocess.run([sys.executable, "-c", code], cwd=BENCH, capture_output=True, text=True, env=env,
                          timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_bench_speed_runs_on_a_tiny_input():
    done = run("bench_speed.py", "-n", "1", "--big-runs", "0")
    assert "cold embedded run" in done.stdout, done.stderr
    assert done.returncode in (0, 1), done.stderr          # 1 = a speed target missed on a loaded machine


def test_bench_observe_runs_on_the_shipped_corpora_and_a_real_file(tmp_path):
    log = tmp_path / "app.log"
    log.write_text("".join(f"2026-12-01T10:{i % 60:02d}:00Z INFO worker-{i % 4} GET /items/{i} 200\n" for i in range(3000)))
    done = run("bench_observe.py", "--min-kb", "300", "--runs", "1", "--slowest", "50", "--file", f"{log}=python3 app.py")
    assert done.returncode == 0, done.stderr
    assert re.search(r"^TOTAL\s+\d+", done.stdout, re.M) and f"{log} as `python3 app.py`" in done.stdout
    assert "benchmarks/corpus" not in done.stderr
    missing = run("bench_observe.py", "--no-corpora", "--file", str(tmp_path / "absent.log"))
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_bench_corpus_counts_the_bounce_of_a_lost_line(tmp_path):
    """Issue 25: net tokens = emitted + a `ctx expand --lines` recovery for each lost must-keep line."""
    import json
    import subprocess

    case = tmp_path / "bounce" / "seq_middle_line"
    case.mkdir(parents=True)
    (case / "cmd.txt").write_text("seq 1 3000\n")
    (case / "output.txt").write_bytes(subprocess.run(["seq", "1", "3000"], capture_output=True, check=True).stdout)
    (case / "exit_code.txt").write_text("0\n")
    (case / "must_keep.txt").write_text("1517\n")           # a line no rule has a reason to keep
    (case / "intent.txt").write_text("count the numbers\n")
    (case / "meta.json").write_text(json.dumps({"family": "short", "tool_version": "seq", "notes": ""}))
    done = run("bench_corpus.py", "--no-defaults", "--corpus", str(tmp_path / "bounce"), "--json")
    assert done.returncode == 0, done.stderr
    (row,) = [r for r in json.loads(done.stdout)["by_source"] if r["name"] == "bounce"]
    assert row["must_keep_kept"] == 0
    assert row["net_tokens"] > row["emitted_tokens"] + 20 and row["net_reduction_pct"] < row["reduction_pct"]


def test_bench_traffic_runs_on_the_shipped_data():
    """The shipped observations run end to end: every row, every later-used line counted once."""
    done = run("bench_traffic.py", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout)
    shipped = [json.loads(line) for line in (BENCH / "data" / "traffic" / "observations.jsonl").read_text().splitlines()]
    assert set(figures) == {r["id"] for r in shipped}
    for rec in figures.values():
        for cond in ("no intent", "intent", "head/tail"):
            assert len(rec[cond]["kept"]) == len(rec["used"])
    assert sum(len(rec["used"]) for rec in figures.values()) > 0
    table = run("bench_traffic.py")
    assert table.returncode == 0 and "all steps" in table.stdout and ">= 1000 tokens" in table.stdout


def test_bench_traffic_rejects_a_missing_or_broken_data_file(tmp_path):
    missing = run("bench_traffic.py", "--data", str(tmp_path / "absent.jsonl"))
    assert missing.returncode == 2 and "no data file" in missing.stderr
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps({"id": "x", "source": "s", "command": "ls"}) + "\n")
    done = run("bench_traffic.py", "--data", str(broken))
    assert done.returncode == 2 and "lacks" in done.stderr
