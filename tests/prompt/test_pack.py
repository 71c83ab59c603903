"""The register pack and the subagent report contract: from data, selected by the role, refused when bad."""

from __future__ import annotations

import subprocess
import sys

from capsule.prompt import pack


def test_each_register_has_its_text_and_off_has_none():
    terse = pack.parts({"register": "terse"})
    compact = pack.parts({"register": "compact"})
    assert terse["register"] != compact["register"] and "guards" in terse and "guards" in compact
    off = pack.parts({"register": "off"})
    assert "register" not in off and "guards" not in off and "guard lines" in off
    assert pack.parts({"register": "off", "guard_lines": False}, read_door=False) == {}
    assert pack.settings({}) == ("terse", True, False)      # the defaults


def test_guards_keep_exact_what_must_stay_exact():
    guards = pack.data()["guards"]["text"]
    for word in ("code", "identifiers", "paths", "numbers", "error", "commands", "security warnings",
                 "destructive", "order-sensitive", "Commit messages", "PR texts"):
        assert word in guards, word


def test_contract_is_appended_to_a_subagent_prompt_and_the_task_is_kept_exactly():
    task = "Find every caller of  parse_header()  in src/ — list them ALL.\n"
    out = pack.with_contract(task)
    assert out.startswith(task.rstrip()) and out.endswith(pack.report_contract())
    assert pack.with_contract(out) == out                    # idempotent
    d = pack.extend_definition("explore", {"description": "x", "prompt": task, "model": "haiku"})
    assert d["model"] == "haiku" and d["prompt"] == out
    contract = pack.report_contract()
    for word in ("file:line", "anomalies:", "1,000 tokens", "path"):
        assert word in contract


def test_a_bad_register_is_refused_with_file_line_and_key(tmp_path):
    role = tmp_path / "loud.toml"
    role.write_text('schema = 1\nname = "loud"\n\n[agent]\nkind = "claude"\n\n[context.output]\nregister = "loud"\n')
    got = subprocess.run([sys.executable, "-m", "capsule", "ctx", "doctor", "--role", str(role)],
                         capture_output=True, text=True, timeout=120)
    assert got.returncode == 2, got.stderr
    assert str(role) in got.stderr and "line 8" in got.stderr and "context.output.register" in got.stderr
    assert "'off', 'terse', 'compact'" in got.stderr
    role.write_text('schema = 1\nname = "loud"\n\n[agent]\nkind = "claude"\n\n[context.output]\nguard_lines = "yes"\n')
    got = subprocess.run([sys.executable, "-m", "capsule", "ctx", "doctor", "--role", str(role)],
                         capture_output=True, text=True, timeout=120)
    assert got.returncode == 2 and "line 8" in got.stderr and "guard_lines" in got.stderr, got.stderr
