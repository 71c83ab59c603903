"""[context.media] in the role manifest: parsed, validated with file/line/key errors, and turned into a
media policy with the kill switches applied."""

import pytest

from capsule.policy import media_policy
from capsule.ground import switches
from capsule.policy.manifest import ManifestError, load_role

HEAD = 'schema = 1\nname = "m"\n\n[agent]\nkind = "shell"\n\n[context]\nmode = "standard"\n\n'


def _role(tmp_path, body: str):
    path = tmp_path / "m.toml"
    path.write_text(HEAD + body)
    return path


def test_a_media_table_is_parsed_into_the_context(tmp_path):
    role = load_role(_role(tmp_path, '[context.media]\nmode = "on"\nimage_long_edge = 1024\npdf = "keep"\n'
                                     'screenshots = "resize"\n\n[context.media.screenshot]\nmin_words = 40\n'))
    assert role.context.media == {"mode": "on", "image_long_edge": 1024, "pdf": "keep", "screenshots": "resize",
                                  "screenshot": {"min_words": 40}}
    pol = media_policy.from_table(role.context.media, role.context.mode, env={})
    assert pol.active and pol.image_long_edge == 1024 and pol.pdf == "keep" and pol.screenshot_rules == {"min_words": 40}


def test_an_unknown_media_key_names_file_line_and_key(tmp_path):
    path = _role(tmp_path, '[context.media]\nmode = "on"\nocr_everything = true\n')
    with pytest.raises(ManifestError) as err:
        load_role(path)
    msg = str(err.value)
    assert str(path) in msg and "line 12" in msg and '"ocr_everything"' in msg and "[context.media]" in msg
    assert "image_long_edge" in msg    # the allowed keys are listed


def test_a_bad_media_value_names_its_line_and_the_choices(tmp_path):
    path = _role(tmp_path, '[context.media]\npdf = "ocr"\n')
    with pytest.raises(ManifestError) as err:
        load_role(path)
    msg = str(err.value)
    assert "line 11" in msg and "context.media.pdf" in msg and "'text', 'keep'" in msg


def test_without_a_table_the_media_mode_follows_the_context_mode():
    assert media_policy.from_table(None, "measure", env={}).mode == "measure"
    assert media_policy.from_table(None, "off", env={}).mode == "off"
    assert media_policy.from_table(None, "standard", env={}).mode == "on"
    assert media_policy.from_table({"mode": "measure"}, "aggressive", env={}).mode == "measure"


def test_kill_switches_win_over_the_role():
    assert media_policy.from_table({"mode": "on"}, "standard", env={switches.DISABLE: "1"}).mode == "off"
    pol = media_policy.from_table({"mode": "on"}, "standard", env={switches.MEASURE_ONLY: "1"})
    assert pol.mode == "measure" and not pol.active and switches.MEASURE_ONLY in pol.reason


def test_the_shipped_roles_still_load():
    for name in ("default", "python-dev", "aggressive"):
        load_role(name)
