"""Numbers and statuses are columns (issue 29.4): in tabular output long enough to be cut, the row
whose value is far outside its column (a size 1,000x the rest, a memory share) or whose status is
seen once (CrashLoopBackOff, Exited (137), a zombie) is kept, through `capsule ctx pipe --cmd …` and
the engine, with the command and without it (the generic salience model). Real `du`, `ls -l` and
`ps` run here; `docker ps` and `kubectl get pods` tables are generated in their real formats."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from capsule.engine import Engine
from capsule.ground.types import Observation
from capsule.observe import guard

# Realistic `kubectl get pods -A` and `docker ps -a` tables (names with pod and container hashes,
# restarts with their age, ports, health), one row in an odd state; `ps aux` rows with one process
# holding almost all memory. Seeded: the same table every run.
GEN = r'''
import random, sys
r = random.Random(7)
def h(n): return "".join(r.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(n))
kind = sys.argv[1]
if kind == "kubectl":
    print("NAMESPACE     NAME                                   READY   STATUS             RESTARTS        AGE")
    for i in range(160):
        n, a = r.choice(["default", "payments", "search", "kube-system", "monitoring"]), r.choice(
            ["api", "worker", "web", "indexer", "billing", "gateway", "scheduler", "cache"])
        ready, status, rest = r.choice(["1/1", "1/1", "2/2"]), "Running", r.choice(["0", "0", "0", "1 (3d ago)", "2 (26h ago)"])
        if i == 97:
            ready, status, rest = "0/1", "CrashLoopBackOff", "47 (2m13s ago)"
        age = r.choice(["3d4h", "12d", "47h", "5d", "9d2h", "30d"])
        print(f"{n:<13} {a + '-' + h(9) + '-' + h(5):<38} {ready:<7} {status:<18} {rest:<15} {age}")
elif kind == "docker":
    print("CONTAINER ID   IMAGE                          COMMAND                  CREATED        STATUS                       PORTS                    NAMES")
    for i in range(240):
        cid = "".join(r.choice("0123456789abcdef") for _ in range(12))
        img = r.choice(["nginx:1.25", "redis:7-alpine", "postgres:16", "ghcr.io/acme/api:2.3.1", "ghcr.io/acme/worker:2.3.1"])
        cmd = r.choice(['"nginx -g \'daemon of…"', '"docker-entrypoint.s…"', '"/app/server --port…"'])
        created = r.choice(["2 days ago", "3 days ago", "5 hours ago", "6 days ago"])
        status = "Exited (137) 4 minutes ago" if i == 161 else r.choice(["Up 2 days", "Up 3 days", "Up 5 hours", "Up 6 days (healthy)"])
        port = f"0.0.0.0:{8000 + i}->80/tcp" if i % 3 else ""
        print(f"{cid}   {img:<30} {cmd:<24} {created:<14} {status:<28} {port:<24} svc_{r.choice(['api', 'worker', 'web'])}_{i}")
elif kind == "ps":
    print("USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND")
    for i in range(200):
        rss, mem = (31400000, "96.3") if i == 58 else (r.randint(20000, 40000), "0.1")
        print(f"app      {1000 + 7 * i:>7}  0.{r.randint(0, 9)}  {mem} {r.randint(100000, 300000):>6} {rss:>5} ?        "
              f"Sl   10:{r.randint(10, 59)}   0:00 /usr/bin/python3 worker.py --shard {i}")
'''


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    d = tmp_path_factory.mktemp("tables")
    (d / "gen.py").write_text(GEN)
    tree = d / "tree"                      # 400 small files and one of 48 MiB written for real (`du` counts blocks)
    for k in range(20):
        (tree / f"d{k}").mkdir(parents=True)
        for f in range(20):
            (tree / f"d{k}" / f"f{f}.txt").write_bytes(b"x" * (100 + 10 * f))
    (tree / "d7" / "huge.bin").write_bytes(os.urandom(1 << 20) * 48)
    many = d / "many"                      # 300 files of ~2 KB and one of 40G (sparse: `ls -l` reads its size)
    many.mkdir()
    for f in range(300):
        (many / f"part-{f:04d}.dat").write_bytes(b"y" * (2000 + f))
    with open(many / "part-0173.dat", "wb") as fh:
        fh.truncate(40 << 30)
    rows = ["id,customer,status,amount,created"] + [
        f"{i},cust-{i % 37},paid,{20 + i % 50}.{i % 100:02d},2026-11-{1 + i % 28:02d}" for i in range(400)]
    rows[251] = "250,cust-28,paid,98000000.00,2026-11-27"
    rows[301] = "300,cust-4,chargeback,41.99,2026-11-21"
    (d / "orders.csv").write_text("\n".join(rows) + "\n")
    return d


def run(cmd: list[str], cwd) -> bytes:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, check=True).stdout


def through_both(tmp_path, raw: bytes, command: str | None) -> list[tuple[str, str]]:
    """(door, output) of the engine's observe and of `capsule ctx pipe [--cmd …]`."""
    eng = Engine(tmp_path / "state", mode="standard", scope="t")
    engine_out = eng.observe(Observation(raw, command=command, exit_code=0)).data.decode()
    eng.close()
    pipe = subprocess.run([sys.executable, "-m", "capsule", "ctx", "pipe", *(["--cmd", command] if command else [])],
                          input=raw, capture_output=True, env={**os.environ, "JACKIN_CTX_STATE_DIR": str(tmp_path / "s2")})
    assert pipe.returncode == 0, pipe.stderr
    return [("engine", engine_out), ("ctx pipe", pipe.stdout.decode())]


def assert_kept(tmp_path, raw: bytes, command: str, *must: str):
    """Through both doors, with the command and without: the output is cut (its footer), and one of
    its lines holds every string of `must` (the odd row whole, or a listing's row re-shaped with its
    size and name)."""
    for cmd in (command, None):
        for door, out in through_both(tmp_path, raw, cmd):
            assert guard.FOOTER_RE.search(out) and len(out) < len(raw), (door, cmd, "not cut")
            assert any(all(m in line for m in must) for line in out.split("\n")), (door, cmd, must, out)


def odd_line(raw: bytes, needle: str) -> str:
    return next(ln for ln in raw.decode().splitlines() if needle in ln)


@pytest.mark.parametrize("flags", ["-a", "-ah"])
def test_du_keeps_the_one_huge_file(made, tmp_path, flags):
    raw = run(["du", flags, "."], made / "tree")
    assert raw.count(b"\n") > 400
    assert_kept(tmp_path, raw, f"du {flags} .", odd_line(raw, "huge.bin"))


@pytest.mark.parametrize("flags", ["-l", "-lh"])
def test_ls_l_keeps_the_one_huge_file_with_its_size(made, tmp_path, flags):
    raw = run(["ls", flags], made / "many")
    size = odd_line(raw, "part-0173.dat").split()[4]
    assert size in ("42949672960", "40G")
    assert_kept(tmp_path, raw, f"ls {flags}", f" {size} ", "part-0173.dat")


@pytest.mark.parametrize("needle", ["98000000.00", "chargeback"], ids=["value", "status"])
def test_a_csvs_one_outlier_value_and_one_status_are_kept(made, tmp_path, needle):
    raw = run(["cat", "orders.csv"], made)
    assert_kept(tmp_path, raw, "cat orders.csv", odd_line(raw, needle))


@pytest.mark.parametrize("kind, command, needle", [
    ("kubectl", "kubectl get pods -A", "CrashLoopBackOff"),
    ("docker", "docker ps -a", "Exited (137)"),
    ("ps", "ps aux", "96.3"),
])
def test_a_tables_one_status_or_outlier_row_is_kept(made, tmp_path, kind, command, needle):
    raw = run([sys.executable, "gen.py", kind], made)
    assert_kept(tmp_path, raw, command, odd_line(raw, needle))


def test_real_ps_keeps_the_one_zombie(tmp_path):
    """`ps u` (aux's columns) over 120 sleeping children of one parent and one it never reaped."""
    parent = subprocess.Popen([sys.executable, "-c", (
        "import subprocess, sys, time\n"
        "kids = [subprocess.Popen(['sleep', '60']) for _ in range(120)]\n"
        "z = subprocess.Popen(['true'])\n"
        "print(z.pid, flush=True)\n"
        "time.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    try:
        zombie = int(parent.stdout.readline())
        for _ in range(50):
            raw = run(["ps", "u", "--ppid", str(parent.pid)], tmp_path)
            if b"[true] <defunct" in raw:          # (ps cuts its lines to $COLUMNS when set)
                break
            time.sleep(0.1)
        row = odd_line(raw, "[true] <defunct")
        assert row.split()[1] == str(zombie) and row.split()[7].startswith("Z") and raw.count(b"\n") > 120
        assert_kept(tmp_path, raw, "ps aux", row)
    finally:
        for p in subprocess.run(["pgrep", "-P", str(parent.pid)], capture_output=True, text=True).stdout.split():
            try:
                os.kill(int(p), 9)
            except ProcessLookupError:
                pass
        parent.kill()
        parent.wait()
