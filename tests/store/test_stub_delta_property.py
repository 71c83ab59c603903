"""Property: a delta applied to the version the scope saw gives exactly the current text."""

from __future__ import annotations

import re

from hypothesis import given, settings, strategies as st

from capsule.store.stubs import line_hashes, render_delta

_HEAD = re.compile(r"^([-~+]) (?:old lines (\d+)-(\d+)|old line (\d+)|inserted after old line (\d+))")


def apply(old: list[str], delta: str) -> list[str]:
    ops = []   # (start, end, new lines) over old, 0-based, end exclusive
    for line in delta.splitlines()[1:]:
        m = _HEAD.match(line)
        if m:
            kind, a, b, single, after = m.groups()
            if after is not None:
                start = end = int(after)
            elif single is not None:
                start, end = int(single) - 1, int(single)
            else:
                start, end = int(a) - 1, int(b)
            ops.append([start, end, []])
        else:
            num, text = line.split("| ", 1)
            assert num.isdigit()
            ops[-1][2].append(text)
    out, pos = [], 0
    for start, end, new in ops:
        out.extend(old[pos:start])
        out.extend(new)
        pos = end
    out.extend(old[pos:])
    return out


lines = st.lists(st.sampled_from(["a", "b", "c", "d = 1", "", "  return x", "- old line 3 removed"]), max_size=40)


@settings(max_examples=300, deadline=None)
@given(old=lines, new=lines)
def test_delta_reconstructs_current_text(old, new):
    old_text = "".join(f"{x}\n" for x in old)
    new_text = "".join(f"{x}\n" for x in new)
    delta, changed = render_delta("f.py", line_hashes(old_text), new_text)
    assert apply(old, delta) == new
    if old == new:
        assert changed == 0
