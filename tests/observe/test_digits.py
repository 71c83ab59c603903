"""digits.masked: each line with every ASCII digit read as `0`, and nothing else changed (non-ASCII
digits, lone surrogates, NULs); None when a line holds a newline."""

from __future__ import annotations

import re

from hypothesis import given, settings, strategies as st

from capsule.observe import digits

TEXT = st.text(alphabet=st.one_of(st.sampled_from("0123456789 aZ-\t\x00é١٢\udc80\ud83d\ude00İ"),
                                  st.characters(blacklist_characters="\n")), max_size=30)


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(lines=st.lists(TEXT, max_size=30))
def test_masked_reads_each_ascii_digit_as_zero(lines):
    assert digits.masked(lines) == [re.sub("[0-9]", "0", ln) for ln in lines]


def test_a_line_with_a_newline_has_no_mask():
    assert digits.masked(["a1", "b\n2"]) is None
    assert digits.masked([]) == []
    assert digits.masked([""]) == [""]
