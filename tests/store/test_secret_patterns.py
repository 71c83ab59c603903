"""The secret patterns capsule ships from detect-secrets are the installed library's own: the engine
reads them from a data file (importing the library costs ~110 ms and opens a socket), and this test
fails when a detect-secrets release changes them."""

import json
import sys

from capsule.store import redact


def test_the_shipped_patterns_are_the_installed_detect_secrets_patterns():
    shipped = json.loads(redact.PATTERNS_FROM_LIBRARY.read_text())
    live = redact.patterns_from_library()
    assert len(live) > 20
    assert shipped == live, ("detect-secrets changed its patterns: regenerate with "
                             "`python -m capsule.store.redact > capsule/store/data/detect_secrets_patterns.json`")


def test_the_engine_redacts_with_them_without_importing_the_library():
    sys.modules.pop("detect_secrets", None)
    redact._patterns = None
    text, n = redact.redact_text("token ghp_" + "a1B2c3D4e5" * 4 + "\n")   # a GitHub token: detect-secrets' plugin
    assert n == 1 and "ghp_" not in text
    assert "detect_secrets" not in sys.modules


def test_every_shipped_pattern_compiles_in_re_and_loading_compiles_none_a_sieve_guards():
    # A pattern RE2 cannot take is compiled in re only when its RE2 sieve first matches (or the text is
    # not UTF-8): loading them all in re cost every cold run that archives ~4 ms. So a bad pattern is
    # caught here, not when a secret first shows up.
    import re

    redact._patterns = None
    whole, by_line, words = redact.patterns()
    sieved = [p for p in whole + by_line if p._re2 is None and p._sieve is not None]
    assert len(sieved) >= 10
    assert all(p._re is None for p in sieved)
    for p in whole + by_line + [words]:
        re.compile(p.source, p.flags)
    text, n = redact.redact_text("deploy with glptt-" + "x" * 40 + "\n")     # gitlab: a lookahead, sieved
    assert n == 1 and "glptt-" not in text
    assert [p.kind for p in sieved if p._re is not None] == ["gitlab-token"]
