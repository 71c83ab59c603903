"""A full state volume (issue 24): output degrades to the command's raw bytes, exit 0, no traceback,
one warning line on stderr. The state dir is a 2 MiB tmpfs in a private mount namespace (root), filled."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

SCRIPT = r"""
set -e
mount -t tmpfs -o size=8m tmpfs "$1"
export JACKIN_CTX_STATE_DIR="$1/state"
"$2" -m capsule ctx pipe --cmd "ls -l" < "$3" > "$1/first.out" 2> "$1/first.err"
cp "$1/first.out" "$1/first.err" "$5"/
head -c 16000000 /dev/urandom > "$1/filler" 2>/dev/null || true
"$2" -m capsule ctx pipe --cmd "ls -la" < "$4"
find "$1/state" -name "*.tmp" > "$5/left.txt"
"$2" -m capsule ctx doctor > "$5/doctor.txt" 2>&1
"""


def test_a_full_state_volume_gives_raw_output_and_no_crash(tmp_path):
    assert os.geteuid() == 0, "a tmpfs mount in a private namespace needs root (CI and the image run as root)"
    assert shutil.which("unshare"), "unshare (util-linux) is needed"
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    first.write_text("".join(f"line {i} of a long listing\n" for i in range(3000)))
    second.write_text("".join(f"other line {i} of a long listing\n" for i in range(5000)))
    vol, seen = tmp_path / "vol", tmp_path / "seen"
    vol.mkdir()
    seen.mkdir()
    proc = subprocess.run(["unshare", "-m", "sh", "-c", SCRIPT, "sh", str(vol), sys.executable, str(first),
                           str(second), str(seen)], capture_output=True, timeout=120)
    err = proc.stderr.decode()
    assert proc.returncode == 0, err[-2000:]
    assert proc.stdout == second.read_bytes()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert "Traceback" not in err and len(lines) == 1, err
    # the one warning reaches the user: on a full volume the log cannot hold it
    assert "state volume is full" in lines[0] and "/vol/state" in lines[0], err
    # before the volume filled, the same door worked (compressed, archived, silent)
    assert (seen / "first.err").read_bytes() == b""
    assert b"[full output: capsule ctx expand" in (seen / "first.out").read_bytes()
    assert (seen / "left.txt").read_text() == ""      # no half-written cache or temp file stays behind
    doctor = (seen / "doctor.txt").read_text()          # doctor itself runs on the full volume, and says so
    assert "Traceback" not in doctor and "volume       LOW: 0 MiB free of 8 MiB" in doctor, doctor
