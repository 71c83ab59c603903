"""compose.yaml: two roles side by side, one image, nothing else shared (each its own state volume)."""

from __future__ import annotations

from pathlib import Path

import yaml

from capsule.policy.manifest import load_role

ROOT = Path(__file__).resolve().parents[2]


def test_compose_runs_two_roles_with_separate_state():
    spec = yaml.safe_load((ROOT / "compose.yaml").read_text())
    services = spec["services"]
    assert len(services) == 2
    states = {}
    for name, svc in services.items():
        assert svc["image"] == "${CAPSULE_IMAGE:-capsule:dev}"
        assert load_role(svc["environment"]["JACKIN_CTX_ROLE"]).name == name
        mounts = dict(v.split(":", 1)[::-1] for v in svc["volumes"])
        states[name] = mounts["/state/context"]
        assert svc.get("init") is False  # the supervisor is PID 1
    assert len(set(states.values())) == 2
    assert set(states.values()) == set(spec["volumes"])
