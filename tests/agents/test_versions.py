"""The tested client versions are data (capsule/agents/data/client_versions.toml), agree with the
image's pins, and `capsule ctx doctor` warns when the installed client is outside them."""

from __future__ import annotations

import json
import os
import tomllib

from capsule.agents import versions
from tests.conftest import REPO


def test_the_image_pins_a_tested_release_of_each_client():
    pins = {c["package"]: c["version"] for c in tomllib.loads((REPO / "image/agent-clis.toml").read_text())["cli"]}
    for client, spec in versions.data().items():
        assert pins[spec["package"]] in (spec["oldest"], spec["newest"]), (client, pins)
        assert versions.parse(spec["oldest"]) <= versions.parse(spec["newest"])


def test_outside_names_the_side_and_the_range():
    low, high = versions.tested("claude")
    assert versions.outside("claude", low) is None and versions.outside("claude", f"{high} (Claude Code)") is None
    older = versions.outside("claude", "2.0.76")
    assert "older than" in older and f"{low} to {high}" in older
    assert "newer than" in versions.outside("claude", "9.0.0")
    assert versions.outside("claude", "version unknown") is None and versions.outside("vim", "9.1.0") is None


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


def test_doctor_warns_about_a_client_outside_the_tested_range(tmp_path, capsule):
    newer = _fake_install(tmp_path / "newer", "2.9.1")
    out = capsule("ctx", "doctor", env={"PATH": f"{newer}:{os.environ['PATH']}"})
    text = out.stdout.decode()
    assert "claude 2.9.1 is newer than the versions capsule is tested with" in text, text
    inside = _fake_install(tmp_path / "inside", versions.tested("claude")[1])
    text = capsule("ctx", "doctor", env={"PATH": f"{inside}:{os.environ['PATH']}"}).stdout.decode()
    assert "tested with" not in text and f"claude {versions.tested('claude')[1]}" in text, text
