"""Issue 29 under the stages that were still head/tail: the huge stage (a spool over 16 MiB, read
in a bounded streaming pass) and fit (an emission shaped to a client's small output limit) keep
the one line that differs, and mark every omitted run in the one form (observe/markers.py).
Outputs are made at test time by running real commands."""

from __future__ import annotations

import subprocess
import sys

from capsule.observe import fit, guard, markers

OOM = "Dec 02 13:20:00 web-1 kernel: Out of memory: Killed process 4121 (python3) total-vm:8123456kB"
GEN_LOG = f"""
import sys
w = sys.stdout.write
for i in range(200_000):
    if i == 123_457:
        w({OOM!r} + "\\n")
    w("Dec 02 %02d:%02d:%02d web-1 app[4121]: served request %d for tenant acme in %d ms path=/api/v1/items/%d\\n"
      % (i // 3600 % 24, i // 60 % 60, i % 60, 1_000_000 + i, 5 + i % 17, i % 977))
"""


def body(out: str) -> list[str]:
    lines = out.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [ln for ln in lines if not guard.FOOTER_RE.search(ln)]


def test_a_200k_line_log_through_ctx_pipe_keeps_its_one_oom_line(capsule):
    raw = subprocess.run([sys.executable, "-c", GEN_LOG], capture_output=True, check=True).stdout
    assert len(raw) > 16 << 20 and raw.count(b"\n") == 200_001
    r = capsule("ctx", "pipe", input=raw, timeout=300)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    lines = body(out)
    assert OOM in lines, out[:3000]                          # not an error word, but the one line that differs
    assert markers.check(200_001, lines) is None, (markers.check(200_001, lines), out[:3000])
    assert not any(ln.startswith("[") and " more line" in ln and " L" not in ln for ln in lines), out[:3000]
    assert len(out) < 64 * 1024, len(out)


STEPS = """
for i in $(seq 1 400); do echo "step $i: processing shard-$i of dataset alpha on worker-$((i % 7))"; done
echo "step 401: replica set drifted out of sync for tenant acme"
for i in $(seq 402 800); do echo "step $i: processing shard-$i of dataset alpha on worker-$((i % 7))"; done
"""
ONE_OFF = "step 401: replica set drifted out of sync for tenant acme"


def test_fit_to_a_small_limit_keeps_the_one_off_line_and_marks_every_run(tmp_path):
    (tmp_path / "steps.sh").write_text(STEPS)
    text = subprocess.run(["sh", "steps.sh"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    out = fit.fit(text, 1200, len, "0" * 24)
    assert len(out) <= 1200, len(out)
    lines = body(out)
    assert ONE_OFF in lines, out                              # salient before head and tail context
    total = text.count("\n")
    assert markers.check(total, lines) is None, (markers.check(total, lines), out)
    assert "…" not in lines, out                              # gaps are markers, not bare ellipses


def test_fit_keeps_an_error_and_the_one_off_line_before_context(tmp_path):
    script = STEPS + 'echo "step 801: ERROR checksum mismatch in shard-9"\n'
    (tmp_path / "steps.sh").write_text(script)
    text = subprocess.run(["sh", "steps.sh"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    out = fit.fit(text, 900, len, "0" * 24)
    lines = body(out)
    assert len(out) <= 900 and "step 801: ERROR checksum mismatch in shard-9" in lines and ONE_OFF in lines, out
    total = text.count("\n")
    assert markers.check(total, lines) is None, (markers.check(total, lines), out)
