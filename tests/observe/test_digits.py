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


NEEDLES = ["@@", "commit ", "|", "-- ", "── ", "-->", ":::", "help:", "PASSED", "Running `", 'File "', "^", "at ",
           "\n=", "\n-"]
PROBE_TEXT = st.lists(st.one_of(st.sampled_from([n.lstrip("\n") for n in NEEDLES] + ["12", "7", "=", "a", " "]), TEXT),
                      max_size=6).map("".join).map(lambda t: t.replace("\n", " "))


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(lines=st.lists(PROBE_TEXT, max_size=30))
def test_a_digit_free_needle_is_in_the_distinct_lines_when_in_a_line(lines):
    """digits.distinct_lines answers a whole-text pre-check: a needle without a digit occurs in
    it when it occurs in one of the lines; after a newline, when a line starts with it."""
    probe = digits.distinct_lines(digits.masked(lines))
    for needle in NEEDLES:
        if needle.startswith("\n"):
            assert (needle in probe) == any(ln.startswith(needle[1:]) for ln in lines), needle
        else:
            assert (needle in probe) == any(needle in ln for ln in lines), needle
