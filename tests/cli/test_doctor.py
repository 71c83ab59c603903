"""`capsule ctx doctor`: subsystems with reasons, shims on PATH, conflicts (INV-8), the budget gate (INV-6)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from capsule import shims


def doctor(tmp_path, *args, env=None, path=None):
    full = {k: v for k, v in os.environ.items() if not k.startswith("JACKIN_CTX_")}
    full.update({"JACKIN_CTX_STATE_DIR": str(tmp_path / "state"), "HOME": str(tmp_path / "home"),
                 "PATH": path or "/usr/bin:/bin"})
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "capsule", "ctx", "doctor", *args], env=full,
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)


def test_json_report_names_each_subsystem_and_reason(tmp_path):
    got = doctor(tmp_path, "--json", "--role", "python-dev", env={"JACKIN_CTX_NO_MCP": "1"})
    assert got.returncode == 0, got.stderr
    report = json.loads(got.stdout)
    assert report["role"]["name"] == "python-dev" and report["mode"] == "standard"
    assert report["subsystems"]["mcp"] == {"name": "mcp", "on": False, "reason": "switch JACKIN_CTX_NO_MCP"}
    assert report["subsystems"]["register"]["on"] is True        # the output register is not MCP's
    assert report["subsystems"]["shims"]["on"] is True
    assert report["switches"]["JACKIN_CTX_NO_MCP"] is True
    parts = report["standing_context"]["parts"]      # no MCP tools and no note about them when MCP is off
    assert "mcp tools" not in parts and "read-door note" not in parts and "register" in parts
    assert report["supervisor"] is None


def test_text_report_fits_one_screen(tmp_path):
    got = doctor(tmp_path, "--role", "default")
    assert got.returncode == 0, got.stderr
    lines = got.stdout.splitlines()
    assert len(lines) <= 24
    assert lines[0].startswith("capsule ") and "mode measure" in lines[0]
    assert any(line.strip().startswith("register   off") and "shell" in line for line in lines)


def test_gate_fails_over_the_roles_budget(tmp_path):
    small = tmp_path / "small.toml"
    small.write_text('schema = 1\nname = "small"\n[agent]\nkind = "claude"\n[context]\nstanding_budget = 10\n')
    over = doctor(tmp_path, "--gate", "--role", str(small))
    assert over.returncode == 1 and "over budget" in over.stderr
    assert "largest part: mcp tools" in over.stderr and str(small) in over.stderr
    ok = doctor(tmp_path, "--gate", "--role", "python-dev")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "within budget" in ok.stdout
    report = json.loads(doctor(tmp_path, "--json", "--role", "python-dev").stdout)["standing_context"]
    assert set(report["families"]) == {"anthropic", "openai"}
    assert report["families"]["openai"]["label"] == "o200k_base (exact)"
    assert report["label"].startswith("approx (cl100k_base +")      # Claude: no exact tokenizer, margin stated
    assert report["tokens"] == sum(report["parts"].values()) <= 1000


def test_shims_first_on_path_and_a_shadowing_tool_is_a_conflict(tmp_path):
    shim_dir = tmp_path / "shims"
    shims.install(shim_dir)
    other = tmp_path / "other"
    other.mkdir()
    (other / "git").write_text("#!/bin/sh\nexec /usr/bin/git \"$@\"\n")
    (other / "git").chmod(0o755)
    good = json.loads(doctor(tmp_path, "--json", path=f"{shim_dir}:/usr/bin:/bin").stdout)
    assert good["shims"] == {"dirs": [str(shim_dir)], "first_on_path": True, "present": True}
    assert good["conflicts"] == []
    bad = doctor(tmp_path, "--json", "--gate", path=f"{other}:{shim_dir}:/usr/bin:/bin")
    report = json.loads(bad.stdout)
    assert report["shims"]["first_on_path"] is False
    assert report["conflicts"] == [f"git: {other}/git ahead of {shim_dir}/git"]
    assert bad.returncode == 1


def test_rtk_style_hook_is_a_conflict(tmp_path):
    settings = tmp_path / "home" / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "rtk-rewrite.sh"}]}]}}))
    report = json.loads(doctor(tmp_path, "--json").stdout)
    assert report["conflicts"] == [f"PreToolUse Bash hook in {settings}: rtk-rewrite.sh"]


def test_outside_a_role_doctor_reports_the_mode_ctx_run_really_uses(tmp_path):
    """No role, no supervisor: `ctx run` compresses (standard), so doctor must not say measure-only."""
    report = json.loads(doctor(tmp_path, "--json").stdout)
    assert report["mode"] == "standard" and report["embedded"]["mode"] == "standard"
    assert report["role_mode"] == "measure"   # the default role, for `capsule up`
    text = doctor(tmp_path).stdout.splitlines()
    assert "embedded" in text[0] and "mode standard" in text[0]
    assert "measure" in json.loads(doctor(tmp_path, "--json", env={"JACKIN_CTX_MEASURE_ONLY": "1"}).stdout)["mode"]
    assert json.loads(doctor(tmp_path, "--json", env={"JACKIN_CTX_MODE": "aggressive"}).stdout)["mode"] == "aggressive"
    assert json.loads(doctor(tmp_path, "--json", env={"JACKIN_CTX_DISABLE": "1"}).stdout)["mode"] == "off"


def test_embedded_mode_matches_what_ctx_run_does(tmp_path):
    """The same fact two ways: doctor's mode and the ledger row `ctx run` writes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JACKIN_CTX_")}
    env["JACKIN_CTX_STATE_DIR"] = str(tmp_path / "state")
    run = subprocess.run([sys.executable, "-m", "capsule", "ctx", "run", "--", "seq", "1", "3000"], env=env,
                         capture_output=True, timeout=120, cwd=tmp_path)
    assert run.returncode == 0
    gain = subprocess.run([sys.executable, "-m", "capsule", "ctx", "gain", "--json"], env=env,
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert gain.returncode == 0, gain.stderr
    total = json.loads(gain.stdout)["total"]
    assert total["measured_only"] == 0 and total["saved_tokens"] > 0   # really compressed, not measured
    assert json.loads(doctor(tmp_path, "--json").stdout)["mode"] == "standard"


def test_doctor_says_which_pdf_tool_and_ocr_the_media_layer_uses(tmp_path):
    got = doctor(tmp_path, "--json", "--role", "python-dev")
    assert got.returncode == 0, got.stderr
    media = json.loads(got.stdout)["media"]
    assert media["mode"] == "on" and media["pdf_text"].startswith("pdftotext (poppler ")
    assert media["pdf_pages"] == "pdftoppm" and media["ocr"].startswith("tesseract ")
    text = doctor(tmp_path, "--role", "python-dev").stdout
    assert "PDF text: pdftotext (poppler" in text
    # Without poppler on PATH, the Python fallback is named (and no page renderer or OCR).
    empty = tmp_path / "bin"
    empty.mkdir()
    bare = json.loads(doctor(tmp_path, "--json", "--role", "default", path=str(empty)).stdout)["media"]
    assert bare["pdf_text"].startswith("pypdf ") and bare["pdf_pages"] is None and bare["ocr"] is None
    assert bare["mode"] == "measure"      # the default role measures
