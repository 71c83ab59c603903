"""Transcript ingestion speed: lines per second, and the time to ingest a 100 MB transcript folder.

The folder is made from REAL transcript lines: one session of the real Claude Code and one of the
real Codex, each driven by a local fake API (tests/fakes/usage.py) through parallel Bash
calls, a file read and a long listing; their lines are then copied into many sessions (ids rewritten
so every copy is a distinct session and call) until the folder holds --mb megabytes. Compared in the
same run with the floor any Python reader pays: reading the files and json.loads of every line.

    python benchmarks/bench_usage.py [--mb 100]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from capsule.measure import ingest  # noqa: E402
from capsule.measure.usage import UsageStore  # noqa: E402
from tests.measure import clients  # noqa: E402
from tests.fakes.usage import DistinctMessages as FakeAnthropic, DistinctResponses as FakeResponses  # noqa: E402


def claude_script(read_path: str):
    def script(body, turn):
        if "Bash" not in [t.get("name") for t in body.get("tools") or []]:
            return [{"type": "text", "text": "side"}]
        if turn == 0:
            return [{"type": "thinking", "thinking": "list and log"}, {"type": "text", "text": "Looking."},
                    {"type": "tool_use", "id": "toolu_a", "name": "Bash",
                     "input": {"command": "ls -la /usr/bin", "description": "a"}},
                    {"type": "tool_use", "id": "toolu_b", "name": "Bash",
                     "input": {"command": f"git -C {ROOT} log -n 40 --stat", "description": "b"}}]
        if turn == 1:
            return [{"type": "tool_use", "id": "toolu_r", "name": "Read", "input": {"file_path": read_path}}]
        return [{"type": "text", "text": "done"}]
    return script


def codex_script():
    def fc(i, cmd):
        return {"type": "function_call", "id": f"fc_{i}", "call_id": f"call_{i}", "name": "exec_command",
                "arguments": json.dumps({"cmd": cmd}), "status": "completed"}

    def script(body, done):
        if done == 0:
            return [fc(0, "ls -la /usr/bin"), fc(1, f"git -C {ROOT} log -n 40 --stat")]
        if done == 2:
            return [fc(2, f"cat {ROOT / 'capsule' / 'engine.py'}")]
        return [{"type": "message", "role": "assistant", "id": "msg_x",
                 "content": [{"type": "output_text", "text": "done", "annotations": []}]}]
    return script


def real_sessions(work: Path) -> tuple[bytes, bytes, str, str, str, str]:
    ws = work / "ws"
    ws.mkdir()
    fake = FakeAnthropic(claude_script(str(ROOT / "capsule" / "engine.py")))
    try:
        res = clients.run_claude(fake, ws, work / "cc", "go")
    finally:
        fake.close()
    claude_file = next((work / "cc" / "projects").rglob(f"{res['session_id']}.jsonl"))
    home = work / "codex-home"
    home.mkdir()
    cfake = FakeResponses(codex_script())
    (home / "config.toml").write_text(cfake.provider_config())
    try:
        clients.run_codex(cfake, ws, home, "go")
    finally:
        cfake.close()
    codex_file = next((home / "sessions").rglob("rollout-*.jsonl"))
    thread = json.loads(codex_file.read_bytes().splitlines()[0])["payload"]["id"]
    return (claude_file.read_bytes(), codex_file.read_bytes(), res["session_id"], fake.run, thread, cfake.run)


def build_folder(out: Path, mb: int, claude: bytes, codex: bytes, sid: str, crun: str, thread: str,
                 xrun: str) -> tuple[int, int, int]:
    """Copies with distinct ids until `mb` megabytes: (files, lines, bytes)."""
    cdir = out / "claude" / "projects" / "-bench"
    xdir = out / "codex" / "sessions" / "2026" / "12" / "01"
    cdir.mkdir(parents=True)
    xdir.mkdir(parents=True)
    total = files = lines = 0
    k = 0
    while total < mb * 1_000_000:
        tag = f"{k:06d}"
        new_sid = sid[:-6] + tag
        c = (claude.replace(sid.encode(), new_sid.encode()).replace(f"msg_{crun}".encode(), f"msg_{crun}{tag}".encode())
             .replace(b"toolu_", f"toolu_{tag}".encode()))
        (cdir / f"{new_sid}.jsonl").write_bytes(c)
        new_thread = thread[:-6] + tag
        x = (codex.replace(thread.encode(), new_thread.encode()).replace(f"resp_{xrun}".encode(),
                                                                         f"resp_{xrun}{tag}".encode())
             .replace(b':"call_', f':"call_{tag}'.encode()))
        (xdir / f"rollout-2026-12-01T00-00-00-{new_thread}.jsonl").write_bytes(x)
        total += len(c) + len(x)
        lines += c.count(b"\n") + x.count(b"\n")
        files += 2
        k += 1
    return files, lines, total


def floor(root: Path) -> float:
    t0 = time.perf_counter()
    for p in root.rglob("*.jsonl"):
        with open(p, "rb") as f:
            for line in f:
                json.loads(line)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=100, help="size of the generated transcript folder")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-usage-"))
    try:
        os.environ["JACKIN_CTX_STATE_DIR"] = str(work / "state")
        (work / "state").mkdir()
        claude, codex, sid, crun, thread, xrun = real_sessions(work)
        per_copy_calls = None
        folder = work / "folder"
        files, lines, size = build_folder(folder, args.mb, claude, codex, sid, crun, thread, xrun)
        parse_s = floor(folder)
        store = UsageStore(work / "state" / "usage.db")
        t0 = time.perf_counter()
        report = ingest.ingest(store, [folder / "claude"], [folder / "codex"])
        cold_s = time.perf_counter() - t0
        counts = store.counts()
        t0 = time.perf_counter()
        again = ingest.ingest(store, [folder / "claude"], [folder / "codex"])
        warm_s = time.perf_counter() - t0
        one = next((folder / "claude").rglob("*.jsonl"))
        extra = claude.replace(sid.encode(), one.stem.encode()).replace(f"msg_{crun}".encode(), b"msg_appended")
        with open(one, "ab") as f:
            f.write(extra)
        t0 = time.perf_counter()
        appended = ingest.ingest(store, [folder / "claude"], [folder / "codex"])
        append_s = time.perf_counter() - t0
        per_copy_calls = counts["calls"] // (files // 2)
        assert report.lines == lines and again.lines == 0 and appended.lines == extra.count(b"\n"), \
            (report.lines, lines, again.lines, appended.lines)
        mb = size / 1e6
        print(f"transcript folder: {files} files, {lines:,} lines, {mb:.1f} MB (real Claude Code 2.1.x + Codex 0.17x "
              f"lines, copied); {counts['calls']:,} calls ({per_copy_calls} per session pair), "
              f"{counts['tools']:,} tool rows")
        print(f"{'step':<38}{'seconds':>9}{'lines/s':>12}{'MB/s':>8}{'vs floor':>10}")
        print("-" * 77)
        print(f"{'floor: read + json.loads every line':<38}{parse_s:>9.2f}{lines / parse_s:>12,.0f}{mb / parse_s:>8.1f}"
              f"{1.0:>9.2f}x")
        print(f"{'cold ingest (parse, count, store)':<38}{cold_s:>9.2f}{lines / cold_s:>12,.0f}{mb / cold_s:>8.1f}"
              f"{cold_s / parse_s:>9.2f}x")
        print(f"{'re-ingest, nothing new':<38}{warm_s:>9.3f}{'':>12}{'':>8}{warm_s / parse_s:>9.3f}x")
        print(f"{'re-ingest, one session appended':<38}{append_s:>9.3f}{'':>12}{'':>8}{append_s / parse_s:>9.3f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
