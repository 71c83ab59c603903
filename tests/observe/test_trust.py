"""Trusted project and role filters: SHA-256 pins, single read, changed files refused."""

from __future__ import annotations

import json
import logging
import os

import pytest

from capsule.ground import paths
from capsule.observe.filters import filter_engine
from capsule.observe.rules.command import classify_command_line
from capsule.observe.transform_types import Context
from capsule.policy import trust

PROJECT_FILTER = b'''schema = 1
[filters.acme_deploy]
description = "acme deploy: upload chatter dropped"
match = ['^acme deploy\\b']
family = "acme"
strip_lines = ['^uploading ']

[[filters.acme_deploy.tests]]
name = "uploads dropped"
input = """
uploading a
deployed v2
"""
expected = """
deployed v2
"""
'''


@pytest.fixture
def project(tmp_path, state_dir):
    root = tmp_path / "proj"
    (root / ".capsule").mkdir(parents=True)
    path = root / ".capsule" / "filters.toml"
    path.write_bytes(PROJECT_FILTER)
    yield root, path
    filter_engine.set_role_filters([])


def test_pin_list_revoke(project):
    _, path = project
    where, digest = trust.pin(path)
    assert where == str(path.resolve())
    pins = json.loads(paths.trust_path().read_text())["pins"]
    assert pins[where]["sha256"] == digest
    assert trust.read_trusted(path) == (PROJECT_FILTER, digest)
    assert trust.revoke(path) is True
    assert trust.revoke(path) is False
    assert trust.load_pins() == {}


def test_untrusted_project_filter_is_not_loaded_and_a_warning_names_it(project, caplog):
    root, path = project
    with caplog.at_level(logging.WARNING, logger="capsule"):
        found = classify_command_line("acme deploy prod", cwd=str(root))
    assert found is None
    assert str(path) in caplog.text and "not trusted" in caplog.text


def test_trusted_project_filter_claims_its_command_and_runs(project):
    root, path = project
    trust.pin(path)
    found = classify_command_line("acme deploy prod", cwd=str(root))
    assert found is not None and found.filter_id.startswith("acme_deploy@") and found.family == "acme"
    result = filter_engine.apply("uploading a\nuploading b\ndeployed v2\n", Context(filter_id=found.filter_id, exit_code=0))
    assert result.text == "deployed v2\n"
    assert result.removed_lines == 2


def test_changed_file_is_not_loaded_and_a_warning_names_it(project, caplog):
    root, path = project
    trust.pin(path)
    path.write_bytes(PROJECT_FILTER.replace(b"^uploading ", b"^deployed "))   # an attacker's edit
    with caplog.at_level(logging.WARNING, logger="capsule"):
        found = classify_command_line("acme deploy prod", cwd=str(root))
    assert found is None
    assert str(path) in caplog.text and "changed since it was trusted" in caplog.text
    assert filter_engine.refresh_extra(str(root)) == {}


def test_unreadable_file_is_not_loaded(project, caplog):
    if os.geteuid() == 0:
        # root reads anything: make it unreadable by turning it into a directory instead
        root, path = project
        trust.pin(path)
        path.unlink()
        path.mkdir()
    else:
        root, path = project
        trust.pin(path)
        path.chmod(0)
    with caplog.at_level(logging.WARNING, logger="capsule"):
        data, digest = trust.read_trusted(path)
    assert data is None and digest is None
    assert str(path) in caplog.text


def test_the_bytes_returned_are_the_bytes_hashed(project):
    _, path = project
    _, digest = trust.pin(path)
    data, got = trust.read_trusted(path)
    import hashlib
    assert hashlib.sha256(data).hexdigest() == got == digest


def test_role_filters_load_from_paths_when_trusted(tmp_path, state_dir):
    role_file = tmp_path / "role-filters.toml"
    role_file.write_bytes(PROJECT_FILTER.replace(b"acme_deploy", b"role_deploy"))
    filter_engine.set_role_filters([str(role_file)])
    try:
        assert filter_engine.refresh_extra(str(tmp_path)) == {}
        trust.pin(role_file)
        assert [i.split("@")[0] for i in filter_engine.refresh_extra(str(tmp_path))] == ["role_deploy"]
        found = classify_command_line("acme deploy prod", cwd=str(tmp_path))
        assert found.filter_id.startswith("role_deploy@")
    finally:
        filter_engine.set_role_filters([])


def test_corrupt_trust_store_fails_closed(project, caplog):
    root, path = project
    paths.trust_path().write_text("{not json")
    with caplog.at_level(logging.WARNING, logger="capsule"):
        assert trust.read_trusted(path) == (None, None)
    assert "trust store" in caplog.text


def test_cli_trust_list_revoke(project, capsule):
    _, path = project
    r = capsule("ctx", "trust", str(path))
    assert r.returncode == 0, r.stderr
    assert b"sha256:" in r.stdout
    r = capsule("ctx", "trust", "--list")
    assert str(path.resolve()).encode() in r.stdout
    r = capsule("ctx", "trust", "--revoke", str(path))
    assert r.returncode == 0 and b"revoked" in r.stdout
    r = capsule("ctx", "trust", "--revoke", str(path))
    assert r.returncode == 2 and b"not trusted" in r.stderr


def test_cli_refuses_to_pin_a_broken_filter_file(tmp_path, capsule):
    bad = tmp_path / "bad.toml"
    bad.write_text("[filters.x]\nturbo = true\n")
    r = capsule("ctx", "trust", str(bad))
    assert r.returncode == 2
    assert b"turbo" in r.stderr and b"Traceback" not in r.stderr


def test_two_projects_with_the_same_filter_name_never_mix(tmp_path, state_dir):
    ids = []
    for n, word in enumerate(("alpha", "beta")):
        root = tmp_path / f"p{n}"
        (root / ".capsule").mkdir(parents=True)
        f = root / ".capsule" / "filters.toml"
        f.write_bytes(PROJECT_FILTER.replace(b"^uploading ", f"^{word} ".encode()))
        trust.pin(f)
        ids.append(classify_command_line("acme deploy", cwd=str(root)).filter_id)
    assert ids[0] != ids[1]
    text = "alpha 1\nbeta 2\ndeployed v2\n"
    assert filter_engine.apply(text, Context(filter_id=ids[0], exit_code=0)).text == "beta 2\ndeployed v2\n"
    assert filter_engine.apply(text, Context(filter_id=ids[1], exit_code=0)).text == "alpha 1\ndeployed v2\n"


def test_role_filter_pinned_by_its_manifest_entry(tmp_path, state_dir, caplog):
    import hashlib

    role_file = tmp_path / "role-filters.toml"
    data = PROJECT_FILTER.replace(b"acme_deploy", b"role_pinned")
    role_file.write_bytes(data)
    try:
        filter_engine.set_role_filters([{"path": str(role_file), "sha256": hashlib.sha256(data).hexdigest()}])
        assert [i.split("@")[0] for i in filter_engine.refresh_extra(str(tmp_path))] == ["role_pinned"]
        filter_engine.set_role_filters([{"path": str(role_file), "sha256": "0" * 64}])
        with caplog.at_level(logging.WARNING, logger="capsule"):
            assert filter_engine.refresh_extra(str(tmp_path)) == {}
        assert str(role_file) in caplog.text and "role manifest" in caplog.text
    finally:
        filter_engine.set_role_filters([])
