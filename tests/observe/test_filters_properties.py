"""Properties every built-in filter keeps on arbitrary input: no error line lost, at most one
marker and it counts exactly the removed lines, nothing grows, same input gives same output."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings, strategies as st

from capsule.observe.filters.filter_engine import apply, builtin_filters
from capsule.observe.guard import MARKER_RE
from capsule.observe.transform_types import Context
from capsule.observe.verbatim import missing_verbatim

POOL = [
    "error: could not compile `demo`", "src/a.py:3: error: Incompatible types  [assignment]",
    "FAILED tests/t.py::test_x - assert 1 == 2", "E       assert 1 == 2", "warning: unused variable: `x`",
    "Traceback (most recent call last):", '  File "/w/a.py", line 3, in <module>', "ValueError: bad",
    "ok  \texample.com/x\t0.01s", "test tests::a ... ok", "   Compiling demo v0.1.0 (/w)", "PASS src/a.test.js",
    "  ✓ adds (2 ms)", "npm http fetch GET 200 https://registry.npmjs.org/a 15ms", "Collecting idna",
    "diff --git a/x b/x", "@@ -1,2 +1,2 @@", "-old", "+new", " context", "commit 1111111111111111111111111111111111111111",
    "Author: Ann <a@x>", "Date:   Mon Feb 26 03:36:00 2024 +0100", "    subject", "", "INFO worker: rendered 7",
    "drwxr-xr-x 2 a a 4096 Nov 29 14:13 src", "src/a.py:3:def f():", "Step 2/9 : RUN make", " ---> 1234567890ab",
    '{"Action":"pass","Package":"x","Test":"T"}', '{"Action":"fail","Package":"x","Test":"T"}', "\x1b[31mred\x1b[0m",
    "panic: boom", "\t/usr/lib/go/src/testing/testing.go:1 +0x1", "make: *** [Makefile:3: all] Error 1",
]
NAMES = sorted(builtin_filters())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(NAMES), lines=st.lists(st.sampled_from(POOL), max_size=400),
       exit_code=st.sampled_from([0, 1, 2, None]))
def test_filter_invariants(name, lines, exit_code):
    text = "\n".join(lines) + ("\n" if lines else "")
    ctx = Context(command=None, filter_id=name, exit_code=exit_code)
    result = apply(text, ctx)
    assert missing_verbatim(text, result.text) == []
    if text.strip():
        assert len(result.text) <= len(text)
    markers = [l for l in result.text.split("\n") if MARKER_RE.match(l)]
    assert len(markers) <= 1
    if markers:
        assert int(MARKER_RE.match(markers[0]).group(1)) == result.removed_lines
    assert apply(text, ctx).text == result.text
