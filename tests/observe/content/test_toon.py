"""TOON round trip: decode(encode(x)) == x over nested, mixed, unicode and delimiter data,
with every cell delimiter, constant and derived columns, and flattened nested objects."""

import re

import pytest
from hypothesis import given, settings, strategies as st

from capsule.observe.content import toon

_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
_tricky = st.sampled_from(["", " ", "a,b", "k: v", "-", "- x", "true", "null", "0", "007", "1e5",
                           "-3", ".5", '"q"', "back\\slash", "[1]", "{x}", "#c", "tab\tx",
                           "line\nbreak", "ünï", "日本語", "🙂", "a b", "x:y,z", "\u2028",
                           "a;b", "k=v", "x.y", "} every row also has a=1", "; q is the same as r",
                           " is the first 4 characters of ", "a\tb c,d;e", "2024-07-10"])
_prims = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) \
    | _text | _tricky
_keys = _text | _tricky
_json = st.recursive(
    _prims,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(_keys, children, max_size=5),
    max_leaves=30,
)
_delims = st.sampled_from(toon.DELIMITERS)
_rows = st.lists(st.fixed_dictionaries({"id": st.integers(), "name": _text | _tricky,
                                        "ok": st.booleans(), "score": _prims}),
                 min_size=1, max_size=8)


@st.composite
def _tables(draw):
    """Arrays of records shaped like real tool output: some columns constant, some copying or
    prefixing another, nested objects, keys that need quoting, rows lacking a key."""
    n = draw(st.integers(1, 14))
    keys = draw(st.lists(_keys, min_size=1, max_size=6, unique=True))
    nested = draw(st.lists(st.sampled_from(["meta", "status", "spec_x"]), max_size=2, unique=True))
    sub = {k: draw(st.lists(st.sampled_from(["os", "phase", "a_b", "n1"]), min_size=1,
                            max_size=3, unique=True)) for k in nested}
    constant = {k: draw(_prims) for k in keys if draw(st.booleans())}
    rows = []
    for i in range(n):
        row = {}
        for k in keys:
            row[k] = constant[k] if k in constant else draw(_prims)
        for k in nested:
            if k not in row:
                row[k] = {s: draw(_prims) for s in sub[k]}
        stamp = draw(_text | _tricky) + f"{i:06d}-07-10"
        row["stamp"] = stamp
        row["stamp_day"] = stamp[:len(stamp) - 6]   # a prefix column (fixed length or not)
        row["copy"] = row["stamp"]
        if draw(st.integers(0, 3)) == 0:   # some rows lack a key (sparse tables)
            row.pop(draw(st.sampled_from(keys + nested)), None)
        rows.append(row)
    return draw(st.sampled_from([rows, {"items": rows, "page": 1}, [rows, {"x": rows}]]))


@settings(max_examples=400, deadline=None)
@given(_json, _delims)
def test_round_trip_any_json(value, delim):
    text = toon.encode(value, delim)
    assert toon.strict_equal(toon.decode(text), value), text


@settings(max_examples=300, deadline=None)
@given(_tables(), _delims)
def test_round_trip_tables_with_stated_columns(value, delim):
    text = toon.encode(value, delim)
    assert toon.strict_equal(toon.decode(text), value), text


@settings(max_examples=150, deadline=None)
@given(_rows, _delims)
def test_uniform_rows_are_tabular(rows, delim):
    text = toon.encode({"items": rows}, delim)
    header = text.split("\n")[0]
    assert header.startswith(f"items[{len(rows)}]{{")
    fields = header[header.index("{") + 1:header.index("}:")]
    stated = header[header.index("}:") + 2:]
    # a stated value may hold ", " itself (score=", "): the names are the identifiers before `=`
    named = fields.split(delim) + re.findall(r'(?:^|, )([A-Za-z_]\w*)=', stated.replace(" every row also has ", ""))
    assert sorted(named) == ["id", "name", "ok", "score"]
    assert len(text.split("\n")) == len(rows) + 1
    assert toon.strict_equal(toon.decode(text), {"items": rows})


def test_shapes_follow_the_spec():
    assert toon.encode({"tags": ["a", "b,c", 1]}) == 'tags[3]: a,"b,c",1'
    assert toon.encode({"u": [{"k": 1, "v": "x"}, {"k": 2, "v": "y"}]}) == "u[2]{k,v}:\n1,x\n2,y"
    assert toon.encode({"m": [1, {"a": 1}]}) == "m[2]:\n  - 1\n  - a: 1"
    assert toon.encode({"s": "true", "n": "12", "e": ""}) == 's: "true"\nn: "12"\ne: ""'
    # quoted only when ambiguous: versions, timestamps and ':' in cells read back as strings
    assert toon.encode({"r": [{"v": "1.0.2", "t": "2026-03-01T08:00:00Z"}]}) == \
        "r[1]{v,t}:\n1.0.2,2026-03-01T08:00:00Z"
    assert toon.encode(["a:b"]) == '[1]: a:b' and toon.encode([["x"], "a:b"]).endswith('- "a:b"')
    # a nested table's rows sit at its header's indentation
    assert toon.encode({"a": {"u": [{"k": 1}, {"k": 2}]}, "z": 0}) == "a:\n  u[2]{k}:\n  1\n  2\nz: 0"


def test_delimiters_quote_only_what_they_split():
    rows = [{"name": "Wonka Confiserie", "note": "partial, see credit note", "n": i} for i in range(2)]
    assert toon.encode(rows, "\t").split("\n")[1] == "Wonka Confiserie\tpartial, see credit note\t0"
    assert toon.encode(rows, " ").split("\n")[1] == '"Wonka Confiserie" "partial, see credit note" 0'
    assert toon.encode(rows, ",").split("\n")[1] == 'Wonka Confiserie,"partial, see credit note",0'
    with pytest.raises(ValueError):
        toon.encode(rows, ";")


def test_columns_equal_in_every_row_are_stated_once():
    rows = [{"id": i, "currency": "EUR", "error": None, "n": "1"} for i in range(4)]
    text = toon.encode({"data": rows}, " ")
    assert text.split("\n")[0] == 'data[4]{id}: every row also has currency=EUR, error=null, n="1"'
    assert text.split("\n")[1:] == ["0", "1", "2", "3"]
    assert toon.strict_equal(toon.decode(text), {"data": rows})
    # types stay apart: 1, 1.0 and True are not the same value
    mixed = [{"a": 1, "b": i} for i in range(3)] + [{"a": 1.0, "b": 9}]
    assert "every row" not in toon.encode(mixed) and toon.round_trips(mixed)
    # fewer than CONSTANT_MIN_ROWS rows: written per row
    assert toon.encode([{"a": 1, "b": 2}, {"a": 1, "b": 3}]) == "[2]{a,b}:\n1,2\n1,3"


def test_copy_and_prefix_columns_are_stated_once():
    rows = [{"number": f"INV-{i:04d}", "issued": f"2024-0{1 + i % 9}-1{i % 10}",
             "month": f"2024-0{1 + i % 9}", "ref": f"INV-{i:04d}"} for i in range(10)]
    text = toon.encode(rows, "\t")
    assert text.split("\n")[0] == ("[10]{number\tissued}: month is the first 7 characters of issued; "
                                   "ref is the same as number")
    assert text.split("\n")[1] == "INV-0000\t2024-01-10"
    assert toon.strict_equal(toon.decode(text), rows)
    # below DERIVED_MIN_ROWS a coincidence is not worth a sentence
    assert "characters" not in toon.encode(rows[:5])


def test_nested_uniform_objects_flatten_into_dotted_columns():
    pods = [{"name": f"web-{i}", "status": {"phase": "Running" if i else "Pending", "ip": f"10.0.0.{i}"},
             "a.b": i} for i in range(3)]
    text = toon.encode({"items": pods})
    assert text.split("\n")[0] == 'items[3]{name,status.phase,status.ip,"a.b"}:'
    assert text.split("\n")[1] == "web-0,Pending,10.0.0.0,0"
    assert toon.strict_equal(toon.decode(text), {"items": pods})
    # a value that is a nested object in one row and a primitive in another: no table
    clash = [{"m": {"a": 1}, "n": 1}, {"m": 2, "n": 1}]
    assert "{" not in toon.encode(clash).split("\n")[0] and toon.round_trips(clash)


def test_rows_lacking_keys_leave_the_cell_empty_and_say_so():
    pkgs = [{"name": f"p{i}", "version": f"1.{i}.0"} for i in range(4)]
    pkgs[2]["editable_project_location"] = "/work/main"
    pkgs[3]["status"] = {"phase": "ok"}
    text = toon.encode(pkgs, "\t")
    assert text.split("\n")[0] == ("[4]{name\tversion\teditable_project_location\tstatus.phase}: "
                                   "an empty cell means the row lacks that key")
    assert text.split("\n")[1:] == ["p0\t1.0.0\t\t", "p1\t1.1.0\t\t", "p2\t1.2.0\t/work/main\t", "p3\t1.3.0\t\tok"]
    assert toon.strict_equal(toon.decode(text), pkgs)
    assert toon.encode([{"a": ""}, {"a": "", "b": 1}], ",") == \
        '[2]{a,b}: an empty cell means the row lacks that key\n"",\n"",1'
    # space-separated rows have no visible empty cell: such rows stay a list
    assert "lacks" not in toon.encode(pkgs, " ") and toon.round_trips(pkgs)
    # mostly-empty unions stay a list too
    scattered = [{f"k{i}": i} for i in range(6)]
    assert "{" not in toon.encode(scattered).split("\n")[0] and toon.round_trips(scattered)


def test_strict_equal_tells_types_apart():
    assert not toon.strict_equal(1, True)
    assert not toon.strict_equal(1, 1.0)
    assert not toon.strict_equal([1], [1, 2])
    assert toon.strict_equal({"a": [1.5, None]}, {"a": [1.5, None]})


def test_malformed_text_raises():
    for bad in ["a[3]: 1,2", "a[2]{x,y}:\n1", "a: 1\n    b: 2", "a:\n  - x",
                "[2]{x}: every row also has y\n1\n2", "[2]{x}: z is the same as q\n1\n2",
                "[2]{x}: junk\n1\n2", "[1]{x;y}:\n1;2", "[2]{x,y}:\n1,2\n1,2,3",
                "[1]{x}: y is the first 3 characters of x\n5"]:
        with pytest.raises(toon.ToonError):
            toon.decode(bad)
