"""The tested client versions (capsule/agents/data/clients/<name>.toml `tested`) agree with the
image's pins, the other tested release is installed apart, and `capsule ctx doctor` warns when an
installed client is outside its range."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib

from capsule.agents import clients
from tests.conftest import REPO


def _pins():
    return {c["package"]: c["version"] for c in tomllib.loads((REPO / "image/agent-clis.toml").read_text())["cli"]}


def test_the_image_pins_a_tested_release_and_setup_installs_the_other_apart():
    pins = _pins()
    out = subprocess.run([sys.executable, str(REPO / "image/agent_clis.py"), "matrix"], capture_output=True,
                         text=True, check=True).stdout.split("\n")
    apart = {line.split(" ")[1] for line in out if line}
    for name in ("claude", "codex"):
        c = clients.get(name)
        assert pins[c.package] in c.tested, (name, pins)
        assert {f"{c.package}@{v}" for v in c.tested if v != pins[c.package]} <= apart, apart


def _fake_install(root, version):
    pkg = root / "lib/node_modules/@anthropic-ai/claude-code"
    (pkg / "bin").mkdir(parents=True)
    (pkg / "package.json").write_text(json.dumps({"name": "@anthropic-ai/claude-code", "version": version}))
    exe = pkg / "bin/claude.exe"
    exe.write_text("#!/bin/sh\necho should-not-run\nexit 1\n")
    exe.chmod(0o755)
    (root / "bin").mkdir()
    (root / "bin/claude").symlink_to(exe)
    return root / "bin"


def test_doctor_warns_about_an_installed_client_outside_the_tested_range(tmp_path, capsule):
    newer = _fake_install(tmp_path / "newer", "2.9.1")
    text = capsule("ctx", "doctor", env={"PATH": f"{newer}:{os.environ['PATH']}"}).stdout.decode()
    assert f"claude 2.9.1: newer than the newest tested ({clients.get('claude').tested[1]})" in text, text
    inside = _fake_install(tmp_path / "inside", clients.get("claude").tested[1])
    text = capsule("ctx", "doctor", env={"PATH": f"{inside}:{os.environ['PATH']}"}).stdout.decode()
    assert "newer than the newest tested" not in text and f"claude {clients.get('claude').tested[1]}" in text, text
