"""Lossless means the text survives (issue 10 item 5): every number exactly as written (digits,
exponent, sign of zero), repeated keys, key order; else the lossy tier with its marker."""

import json
import re

from hypothesis import given, settings, strategies as st

from capsule.observe.content import json_crusher, json_text, toon
from capsule.observe.transform_types import Context

# ---------------------------------------------------------------- generated documents (as text)

_int_lit = st.one_of(
    st.integers(-10**6, 10**6).map(str),
    st.integers(10**18, 10**40).map(str),                       # beyond 64 bits
    st.integers(10**18, 10**40).map(lambda n: f"-{n}"),
    st.just("-0"), st.just("0"))
_frac = st.text(alphabet="0123456789", min_size=1, max_size=40)
_dec_lit = st.builds(lambda i, f, neg: f"{'-' if neg else ''}{i}.{f}", st.integers(0, 10**20), _frac, st.booleans())
_exp_lit = st.builds(lambda m, e, E, sign: f"{m}{E}{sign}{e}", st.one_of(_int_lit, _dec_lit),
                     st.integers(0, 999), st.sampled_from("eE"), st.sampled_from(["", "+", "-"]))
_num_lit = st.one_of(_int_lit, _dec_lit, _exp_lit, st.sampled_from(["-0.0", "0.0", "1e999", "-1e999",
                                                                     "1.0E-400", "3.141592653589793238462643383279502884"]))
_escapes = st.sampled_from(["\\u00e9", "\\ud83d\\ude00", "\\n", "\\t", "\\\"", "\\\\", "\\/", "\\u2028", "é", "日本"])
_str_lit = st.lists(st.one_of(_escapes, st.text(alphabet="abc xyz-_.:,", max_size=6)), max_size=4).map(
    lambda parts: '"' + "".join(parts) + '"')
_key_lit = st.sampled_from(['"a"', '"b"', '"ts"', '"id"', '"\\u0061"', '"k.x"', '"error"'])
_scalar_lit = st.one_of(_num_lit, _str_lit, st.sampled_from(["true", "false", "null"]))


def _obj(pairs):
    return "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"


_doc = st.recursive(
    _scalar_lit,
    lambda kids: st.lists(kids, max_size=6).map(lambda xs: "[" + ", ".join(xs) + "]")
    | st.lists(st.tuples(_key_lit, kids), max_size=6).map(_obj),     # repeated keys happen
    max_leaves=25)
_table = st.integers(3, 12).flatmap(lambda n: st.lists(
    st.tuples(_int_lit, _num_lit, _str_lit).map(lambda t: _obj([('"id"', t[0]), ('"v"', t[1]), ('"s"', t[2])])),
    min_size=n, max_size=n).map(lambda rows: "[" + ",\n  ".join(rows) + "]"))


def _assert_text_kept(text: str, out: str, lossless: bool) -> None:
    if not lossless:
        return
    for lit in json_text.numbers(text):
        assert re.search(r"(?<![\d.eE+-])" + re.escape(lit) + r"(?![\d.eE])", out), (lit, out)


@settings(max_examples=300, deadline=None)
@given(_doc)
def test_every_lossless_form_keeps_every_literal(text):
    value = json_crusher.parse(text)
    for form, how in json_crusher.lossless_forms(value, text):
        _assert_text_kept(text, form, True)
        try:
            same = json_text.tokens(form) == json_text.tokens(text)
        except ValueError:
            same = False
        # a JSON form has the very token stream; a TOON form decodes to the same texts
        assert same or toon.strict_equal(toon.decode(form), value), (how, text, form)


@settings(max_examples=200, deadline=None)
@given(st.one_of(_doc, _table))
def test_crush_lossless_emission_keeps_every_number_verbatim(text):
    result = json_crusher.crush(text, Context())
    _assert_text_kept(text, result.text, result.lossless)
    if not result.lossless and result.text != text:
        assert result.removals, "a lossy result names what it removed"


@settings(max_examples=200, deadline=None)
@given(_doc)
def test_json_text_round_trip_is_token_exact(text):
    assert json_text.tokens(json_text.dumps(json_text.loads(text))) == json_text.tokens(text)
    assert json_text.tokens(json_text.dumps(json_text.loads(text), indent=2)) == json_text.tokens(text)


# ---------------------------------------------------------------- the cases, by name


def test_rows_differing_in_the_ninth_decimal_are_not_one_constant():
    text = "[" + ",\n".join('{"id": %d, "ts": 1700000000.1234567%02d, "ok": true}' % (i, i)
                            for i in range(40)) + "]"
    result = json_crusher.crush(text, Context())
    assert "every row also has ts=" not in result.text
    if result.lossless:
        _assert_text_kept(text, result.text, True)
    else:   # sampled: the rows it shows carry their own exact ts, and it says it sampled
        assert result.removals and "1700000000.123456700" in result.text


def test_big_numbers_infinity_and_long_pi_are_written_as_given():
    text = ('{"big": 12345678901234567890.5, "huge": 1e999, "pi": 3.14159265358979323846264338327950288,'
            ' "negzero": -0.0, "intzero": -0, "upper": 1E+5, "id": 123456789012345678901234567890}')
    result = json_crusher.crush(text, Context())
    assert result.lossless
    for lit in ("12345678901234567890.5", "1e999", "3.14159265358979323846264338327950288", "-0.0", "-0",
                "1E+5", "123456789012345678901234567890"):
        assert lit in result.text
    assert "Infinity" not in result.text and "e+19" not in result.text


def test_a_repeated_key_keeps_every_value():
    text = '{"name": "a", "retries": 1, "retries": 2, "tags": ["x", "y"]}'
    result = json_crusher.crush(text, Context())
    assert result.lossless
    assert json_text.tokens(result.text) == json_text.tokens(text)
    assert '"retries": 1' in result.text and '"retries": 2' in result.text


def test_toon_decodes_numbers_with_their_text():
    value = json_text.loads('[{"a": 1.10, "b": -0}, {"a": 1.1, "b": 0}, {"a": 2e3, "b": 7}]')
    encoded = toon.encode(value)
    assert "1.10" in encoded and "-0" in encoded and "2e3" in encoded
    back = toon.decode(encoded)
    assert toon.strict_equal(back, value)
    assert not toon.strict_equal(json_text.loads("[1.10]"), json_text.loads("[1.1]"))


def test_the_proof_is_on_the_text_not_the_floats():
    original = '{"x": 0.30000000000000004441}'
    rewritten = json.dumps(json.loads(original))      # what float round trips produce
    assert json.loads(rewritten) == json.loads(original)
    assert json_text.tokens(rewritten) != json_text.tokens(original)
    forms = json_crusher.lossless_forms(json_crusher.parse(original), original)
    assert forms and all("0.30000000000000004441" in f for f, _ in forms)
