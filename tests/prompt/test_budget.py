"""The standing-context count behind `doctor --gate` (INV-6): per part, per model family, following the plan."""

from __future__ import annotations

import pytest

from capsule.policy.manifest import load_role, role_names
from capsule.ground.switches import Switches
from capsule.prompt import budget, pack
from capsule.prompt.budget import standing_context
from capsule.policy import plan as planning


def test_counts_follow_the_plan():
    role = load_role("python-dev")
    on = standing_context(planning.plan(role, Switches.read({})), role)
    assert on["parts"]["mcp tools"] > 100
    assert on["parts"]["read-door note"] > 10 and on["parts"]["register"] > 5
    assert on["tokens"] == sum(on["parts"].values())
    assert on["largest"] == "mcp tools"
    off = standing_context(planning.plan(role, Switches.read({"JACKIN_CTX_NO_MCP": "1"})), role)
    assert "mcp tools" not in off["parts"] and "read-door note" not in off["parts"]   # MCP's parts only
    assert off["parts"]["register"] == on["parts"]["register"]
    none = standing_context(planning.plan(role, Switches.read({"JACKIN_CTX_NO_MCP": "1", "JACKIN_CTX_NO_REGISTER": "1"})),
                            role)
    assert none["tokens"] == 0 and none["parts"] == {}


def test_no_register_switch_drops_the_register_but_not_the_tools_or_their_note():
    role = load_role("python-dev")
    got = standing_context(planning.plan(role, Switches.read({"JACKIN_CTX_NO_REGISTER": "1"})), role)
    assert "register" not in got["parts"] and "guard lines" not in got["parts"]
    assert "read-door note" in got["parts"] and "mcp tools" in got["parts"]


@pytest.mark.parametrize("name", role_names())
@pytest.mark.parametrize("register", ["terse", "compact"])
def test_shipped_roles_fit_1000_tokens_with_every_part_on(name, register):
    """Every part on: register, guards, guard lines, note, subagent contract and a full codebook."""
    role = load_role(name)
    every = {k: planning.Decision(k, True, "test") for k in planning.SUBSYSTEMS}
    legend = pack.data()["codebook"]["head"] + "".join(
        f"\n@{i} = capsule/observe/content/some_long_module_name_{i}.py" for i in range(8))
    for client, family in budget.CLIENT_FAMILY.items():
        parts = budget.texts(client, role, every)
        parts.update(pack.parts({"register": register}, legend=legend))
        counted = budget.count_parts(family, parts)
        assert counted["tokens"] <= 1000, (name, client, counted)
        assert counted["tokens"] <= role.context.standing_budget


def test_claude_is_labelled_approximate_with_its_margin_and_openai_exact():
    count, label = budget.counter("anthropic")
    assert label == "approx (cl100k_base +35%)"
    from capsule.ground.tokens import count as cl100k
    text = "Keep exact: code, identifiers, paths, numbers."
    assert count(text) == -(-cl100k(text) * 135 // 100)
    o_count, o_label = budget.counter("openai")
    assert o_label == "o200k_base (exact)" and o_count("hello world") == 2


def test_the_standing_text_is_a_pure_function_of_the_role():
    """Byte-stable (INV-6): nothing in it depends on time, paths, pids or counts."""
    a = pack.standing_text({"register": "terse"})
    b = pack.standing_text({"register": "terse"})
    assert a == b and a
    for needle in ("/tmp", "/state", str(__import__("os").getpid())):
        assert needle not in a


MEMO_PROBE = """
import json, sys
from capsule.prompt import budget
from capsule.policy import plan as planning
on = {k: planning.Decision(k, True, "test") for k in planning.SUBSYSTEMS}
print(json.dumps([budget.standing_context(on), "bpe_openai" in sys.modules]))
"""


def test_an_exact_count_is_memoized_so_the_next_doctor_loads_no_o200k_tokenizer(state_dir):
    # Loading bpe-openai's o200k tokenizer (a 74 MB extension) was ~0.4 s of CPU on every `ctx doctor`,
    # for figures that change only with the standing text (or the family's data).
    import json
    import os
    import subprocess
    import sys

    def probe():
        proc = subprocess.run([sys.executable, "-c", MEMO_PROBE], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "JACKIN_CTX_STATE_DIR": str(state_dir)})
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    (first, loaded), (again, loaded_again) = probe(), probe()
    assert loaded and not loaded_again
    assert again == first and first["families"]["openai"]["label"] == "o200k_base (exact)"
    assert first["families"]["openai"]["tokens"] > 0
