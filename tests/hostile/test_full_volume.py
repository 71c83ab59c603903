"""A full state volume (issue 24): output degrades to the command's raw bytes, exit 0, no traceback,
at most one warning line. The state dir is a 2 MiB tmpfs in a private mount namespace (root), filled."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

SCRIPT = r"""
set -e
mount -t tmpfs -o size=2m tmpfs "$1"
export JACKIN_CTX_STATE_DIR="$1/state"
"$2" -m capsule ctx pipe --cmd "ls -l" < "$3" > /dev/null
head -c 4000000 /dev/urandom > "$1/filler" 2>/dev/null || true
exec "$2" -m capsule ctx pipe --cmd "ls -la" < "$4"
"""


def test_a_full_state_volume_gives_raw_output_and_no_crash(tmp_path):
    assert os.geteuid() == 0, "a tmpfs mount in a private namespace needs root (CI and the image run as root)"
    assert shutil.which("unshare"), "unshare (util-linux) is needed"
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    first.write_text("".join(f"line {i} of a long listing\n" for i in range(3000)))
    second.write_text("".join(f"other line {i} of a long listing\n" for i in range(5000)))
    vol = tmp_path / "vol"
    vol.mkdir()
    proc = subprocess.run(["unshare", "-m", "sh", "-c", SCRIPT, "sh", str(vol), sys.executable, str(first),
                           str(second)], capture_output=True, timeout=120)
    err = proc.stderr.decode()
    assert proc.returncode == 0, err[-2000:]
    assert proc.stdout == second.read_bytes()
    assert "Traceback" not in err and len([ln for ln in err.splitlines() if ln.strip()]) <= 1, err
