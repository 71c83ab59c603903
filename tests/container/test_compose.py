"""compose.yaml: two roles side by side, one image, nothing else shared (each its own state volume).

Read as text (no YAML library in the test extras): the file is written in a plain block style.
"""

from __future__ import annotations

import re
from pathlib import Path

from capsule.policy.manifest import load_role

ROOT = Path(__file__).resolve().parents[2]


def services(text: str) -> dict[str, str]:
    body = text.split("\nservices:\n", 1)[1].split("\nvolumes:\n", 1)[0]
    blocks = re.split(r"\n  (?=[a-z][\w-]*:\n)", "\n" + body)
    return {b.split(":", 1)[0].strip(): b for b in blocks if b.strip()}


def test_compose_runs_two_roles_with_separate_state():
    text = (ROOT / "compose.yaml").read_text()
    svcs = services(text)
    assert len(svcs) == 2
    states = set()
    for name, block in svcs.items():
        assert "image: ${CAPSULE_IMAGE:-capsule:dev}" in block
        role = re.search(r"JACKIN_CTX_ROLE: (\S+)", block).group(1)
        assert load_role(role).name == name
        state = re.findall(r"- ([\w-]+):/state/context", block)
        assert len(state) == 1
        states.add(state[0])
        assert "init: false" in block  # the supervisor is PID 1
        # root starts it, the supervisor drops to the host user's ids (issue 22's rule, as `capsule up`)
        assert 'user: "0:0"' in block and "JACKIN_CTX_RUN_AS: ${CAPSULE_USER:-1000:1000}" in block
        # and confined as `capsule up` confines it (issue 31): every capability but the listed, no new privileges
        assert "cap_drop: [ALL]" in block and 'security_opt: ["no-new-privileges:true"]' in block
        from capsule.ground.reserved import CAPABILITIES
        assert f"cap_add: [{', '.join(CAPABILITIES)}]" in block
    declared = re.findall(r"^  ([\w-]+):\s*$", text.split("\nvolumes:\n", 1)[1], re.M)
    assert len(states) == 2 and states == set(declared)
