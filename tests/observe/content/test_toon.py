"""TOON round trip: decode(encode(x)) == x over nested, mixed, unicode and delimiter data."""

from hypothesis import given, settings, strategies as st

from capsule.observe.content import toon

_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
_tricky = st.sampled_from(["", " ", "a,b", "k: v", "-", "- x", "true", "null", "0", "007", "1e5",
                           "-3", ".5", '"q"', "back\\slash", "[1]", "{x}", "#c", "tab\tx",
                           "line\nbreak", "ünï", "日本語", "🙂", "a b", "x:y,z", "\u2028"])
_prims = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) \
    | _text | _tricky
_keys = _text | _tricky
_json = st.recursive(
    _prims,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(_keys, children, max_size=5),
    max_leaves=30,
)
_rows = st.lists(st.fixed_dictionaries({"id": st.integers(), "name": _text | _tricky,
                                        "ok": st.booleans(), "score": _prims}),
                 min_size=1, max_size=8)


@settings(max_examples=400, deadline=None)
@given(_json)
def test_round_trip_any_json(value):
    text = toon.encode(value)
    assert toon.strict_equal(toon.decode(text), value), text


@settings(max_examples=150, deadline=None)
@given(_rows)
def test_uniform_rows_are_tabular(rows):
    text = toon.encode({"items": rows})
    header = text.split("\n")[0]
    assert header.startswith(f"items[{len(rows)}]{{") and header.endswith("}:")
    assert sorted(header[header.index("{") + 1:-2].split(",")) == ["id", "name", "ok", "score"]
    assert len(text.split("\n")) == len(rows) + 1
    assert toon.strict_equal(toon.decode(text), {"items": rows})


def test_shapes_follow_the_spec():
    assert toon.encode({"tags": ["a", "b,c", 1]}) == 'tags[3]: a,"b,c",1'
    assert toon.encode({"u": [{"k": 1, "v": "x"}, {"k": 2, "v": "y"}]}) == "u[2]{k,v}:\n  1,x\n  2,y"
    assert toon.encode({"m": [1, {"a": 1}]}) == "m[2]:\n  - 1\n  - a: 1"
    assert toon.encode({"s": "true", "n": "12", "e": ""}) == 's: "true"\nn: "12"\ne: ""'
    # quoted only when ambiguous: versions, timestamps and ':' in cells read back as strings
    assert toon.encode({"r": [{"v": "1.0.2", "t": "2026-03-01T08:00:00Z"}]}) == \
        "r[1]{v,t}:\n  1.0.2,2026-03-01T08:00:00Z"
    assert toon.encode(["a:b"]) == '[1]: a:b' and toon.encode([["x"], "a:b"]).endswith('- "a:b"')


def test_strict_equal_tells_types_apart():
    assert not toon.strict_equal(1, True)
    assert not toon.strict_equal(1, 1.0)
    assert not toon.strict_equal([1], [1, 2])
    assert toon.strict_equal({"a": [1.5, None]}, {"a": [1.5, None]})


def test_malformed_text_raises():
    import pytest
    for bad in ["a[3]: 1,2", "a[2]{x,y}:\n  1", "a: 1\n    b: 2", "a:\n  - x"]:
        with pytest.raises(toon.ToonError):
            toon.decode(bad)
