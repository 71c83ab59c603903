"""A program's version line is asked once per installed file: doctor starts no process for it again
until the program is replaced."""

from __future__ import annotations

import os
import subprocess

from capsule.store import memo


def test_a_programs_answer_is_kept_until_the_program_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("JACKIN_CTX_STATE_DIR", str(tmp_path / "state"))
    exe = tmp_path / "tool"
    calls = tmp_path / "calls"
    exe.write_text(f"#!/bin/sh\necho x >> {calls}\necho 'tool 1.0'\n")
    exe.chmod(0o755)

    def ask():
        return subprocess.run([str(exe), "--version"], capture_output=True, text=True).stdout.strip()

    assert memo.of_program(str(exe), ["--version"], ask) == "tool 1.0"
    assert memo.of_program(str(exe), ["--version"], ask) == "tool 1.0"
    assert calls.read_text().count("x") == 1                     # asked once
    exe.write_text(f"#!/bin/sh\necho x >> {calls}\necho 'tool 2.0'\n")   # upgraded in place
    os.utime(exe, ns=(1, 2_000_000_000))
    assert memo.of_program(str(exe), ["--version"], ask) == "tool 2.0"
    assert calls.read_text().count("x") == 2
    assert memo.of_program(str(tmp_path / "missing"), ["--version"], lambda: None) is None
