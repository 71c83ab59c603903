"""Hostile transcripts (issue 24): ingestion reads only regular files (a FIFO, a /dev/zero symlink),
caps bytes per line and per pass, validates each field's type, skips a bad line (counted, reported
by `ctx usage` and doctor) and moves its offset on; costs and counts are finite, non-negative and
bounded; a 50 MB tool result is counted in bounded time and memory (the rest estimated, said so)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time

GOOD_TS = "2026-01-01T00:00:00Z"


def _run(state, *args, env=None, timeout=60, mem_gb=None):
    def limits():
        if mem_gb:
            resource.setrlimit(resource.RLIMIT_AS, (mem_gb << 30, mem_gb << 30))

    return subprocess.run([sys.executable, "-m", "capsule", *args], capture_output=True, timeout=timeout,
                          preexec_fn=limits,
                          env={**os.environ, "JACKIN_CTX_STATE_DIR": str(state), **(env or {})})


def _assistant(mid: str, session="s-1", **over) -> dict:
    entry = {"type": "assistant", "sessionId": session, "timestamp": GOOD_TS, "cwd": "/w",
             "message": {"id": mid, "model": "claude-sonnet-4-5", "role": "assistant",
                         "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                         "usage": {"input_tokens": 100, "output_tokens": 10}}}
    for k, v in over.items():
        if k.startswith("usage_"):
            entry["message"]["usage"][k[6:]] = v
        elif k == "content":
            entry["message"]["content"] = v
        else:
            entry[k] = v
    return entry


def _project(home, name="-w"):
    d = home / "projects" / name
    d.mkdir(parents=True, exist_ok=True)
    return d


def _usage(state, home, **kw):
    proc = _run(state, "ctx", "usage", "--json", env={"CLAUDE_CONFIG_DIR": str(home)}, **kw)
    err = proc.stderr.decode()
    assert proc.returncode == 0 and "Traceback" not in err, err[-3000:]
    return json.loads(proc.stdout)      # strict JSON: no Infinity / NaN


def test_a_fifo_and_a_dev_zero_symlink_are_skipped_and_the_rest_is_read(tmp_path):
    home = tmp_path / "claude"
    d = _project(home)
    os.mkfifo(d / "a-fifo.jsonl")
    (d / "b-zero.jsonl").symlink_to("/dev/zero")
    (d / "c-good.jsonl").write_text(json.dumps(_assistant("msg_good")) + "\n")
    t0 = time.monotonic()
    data = _usage(tmp_path / "state", home, timeout=60, mem_gb=3)
    assert time.monotonic() - t0 < 30
    assert data["totals"]["calls"] == 1 and data["totals"]["input_tokens"] == 100
    assert any("not a regular file" in e for e in data["ingest"]["errors"]), data["ingest"]


def test_bad_lines_are_skipped_counted_and_never_block_later_lines(tmp_path):
    home, state = tmp_path / "claude", tmp_path / "state"
    d = _project(home)
    deep = "[" * 5000 + "]" * 5000
    bad = [deep, "{" * 1000 + "}" * 1000,
           json.dumps(_assistant("msg_big", usage_input_tokens=2 ** 64)),
           json.dumps(_assistant("msg_cwd", cwd={"x": 1})),
           json.dumps(_assistant("msg_agent", isSidechain=True, agentId={"x": 1})),
           json.dumps(_assistant("msg_tool", content=[{"type": "tool_use", "id": "t1", "name": {"x": 1},
                                                       "input": {}}])),
           json.dumps(_assistant("msg_sess", sessionId=["x"])),
           json.dumps(_assistant("msg_inf", costUSD=1e999)).replace("Infinity", "1e999"),
           json.dumps(_assistant("msg_true", costUSD=True)),
           json.dumps(_assistant("msg_neg", usage_output_tokens=-5, costUSD=-3.0)),
           json.dumps(_assistant("msg_year1", timestamp="0001-01-01T00:00:00Z"))]
    good = [json.dumps(_assistant(f"msg_ok{i}")) for i in range(3)]
    (d / "s-1.jsonl").write_text("\n".join([good[0], *bad, good[1]]) + "\n")
    (d / "s-2.jsonl").write_text(good[2].replace('"s-1"', '"s-2"') + "\n")
    data = _usage(state, home)
    t = data["totals"]
    # The good lines all count; nothing infinite, negative or absurd got in.
    ids = {"msg_ok0", "msg_ok1", "msg_ok2"}
    assert t["calls"] >= len(ids)
    assert 0 <= t["input_tokens"] < 10 ** 6 and t["output_tokens"] >= 0
    assert t.get("cost_usd") is None or 0 <= t["cost_usd"] < 1e6, t
    assert data["ingest"]["skipped"] >= 3, data["ingest"]
    # The offset moved past them: a second run reads nothing new and still reports the count.
    again = _usage(state, home)
    assert again["totals"] == t and again["ingest"]["lines"] == 0
    assert again["ingest"]["skipped_total"] >= data["ingest"]["skipped"]
    text = _run(state, "ctx", "usage", env={"CLAUDE_CONFIG_DIR": str(home)}).stdout.decode()
    assert "skipped" in text and "bad transcript line" in text, text
    doctor = json.loads(_run(state, "ctx", "doctor", "--json").stdout)
    assert doctor["state"]["usage"]["skipped_lines"] >= data["ingest"]["skipped"]
    # The HTML/text report renders (it stayed blank on an infinite cost).
    rep = _run(state, "ctx", "report", env={"CLAUDE_CONFIG_DIR": str(home)})
    assert rep.returncode == 0 and "Traceback" not in rep.stderr.decode()


def test_a_50_mb_tool_result_is_counted_in_bounded_time_and_memory(tmp_path):
    home = tmp_path / "claude"
    d = _project(home)
    big = "word " * (10 << 20)          # 50 MiB
    lines = [_assistant("msg_1", content=[{"type": "tool_use", "id": "toolu_big", "name": "Bash",
                                           "input": {"command": "cat big.log"}}]),
             {"type": "user", "sessionId": "s-1", "timestamp": GOOD_TS, "cwd": "/w",
              "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_big",
                                                        "content": big}]}},
             _assistant("msg_2")]
    with open(d / "s-1.jsonl", "w") as f:
        for e in lines:
            f.write(json.dumps(e) + "\n")
    del big
    t0 = time.monotonic()
    data = _usage(tmp_path / "state", home, timeout=120, mem_gb=2)
    assert time.monotonic() - t0 < 30
    assert data["totals"]["calls"] == 2
    assert data["ingest"]["estimated_results"] == 1


def test_up_local_exits_promptly_with_the_agents_status_beside_a_fifo_transcript(tmp_path):
    home = tmp_path / "claude"
    d = _project(home)
    os.mkfifo(d / "stuck.jsonl")
    (d / "zero.jsonl").symlink_to("/dev/zero")
    env = {k: v for k, v in os.environ.items() if not k.startswith("JACKIN_CTX_")}
    env.update({"JACKIN_CTX_STATE_DIR": str(tmp_path / "state"), "CLAUDE_CONFIG_DIR": str(home),
                "CODEX_HOME": str(tmp_path / "codex"), "HOME": str(tmp_path), "JACKIN_CTX_USAGE_INTERVAL": "0.2"})
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "capsule", "up", "--role", "python-dev", "--local", "--",
                           "sh", "-c", "sleep 1; exit 7"], env=env, capture_output=True, timeout=90,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)))
    took = time.monotonic() - t0
    assert proc.returncode == 7, proc.stderr.decode()[-2000:]
    assert took < 30, took
