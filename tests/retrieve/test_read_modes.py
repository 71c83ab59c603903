"""Read modes and the reader: verbatim full, lines lists, sections, anchors, size gate, errors."""

from __future__ import annotations

import pytest

from capsule.retrieve import read_modes
from capsule.retrieve.read_modes import ModeError
from capsule.retrieve.reader import ReadError, Reader
from capsule.store.stubs import StubStore

BIG = "\n\n".join(f"def handler_{i}(request, response):\n" + "".join(f"    step_{j} = request + {j}\n"
                                                                   for j in range(10)) + "    return step_0\n"
                  for i in range(30))
DOC = "# Title\n\nintro\n\n## Setup\n\nsteps\n\n```\n# not a heading\n```\n\n### Detail\n\nmore\n\n## Usage\n\nuse\n"


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "big.py").write_text(BIG)
    (root / "small.py").write_text("x = 1\n")
    (root / "doc.md").write_text(DOC)
    (root / "blob.bin").write_bytes(b"\x00\x01\x02binary")
    (tmp_path / "secret.txt").write_text("outside\n")
    (root / "link.txt").symlink_to(tmp_path / "secret.txt")
    return root


def test_parse_modes_and_errors():
    assert read_modes.parse("outline").name == "signatures"
    assert read_modes.parse("lines:5,10-20").ranges == ((5, 5), (10, 20))
    assert read_modes.parse(None) is None and read_modes.parse("auto") is None
    for bad in ("bogus", "lines:", "lines:9-3", "lines:a-b", "section:"):
        with pytest.raises(ModeError):
            read_modes.parse(bad)


def test_full_is_byte_exact_including_odd_bytes(ws):
    raw = b"caf\xe9 \xff odd\r\nline two\n"
    (ws / "odd.txt").write_bytes(raw)
    out = Reader(ws).read("odd.txt", "full")
    assert out.encode("utf-8", "surrogateescape") == raw


def test_big_source_defaults_to_signatures_small_to_full(ws):
    r = Reader(ws)
    auto = r.read("big.py")
    assert "def handler_0(request, response):" in auto and "step_5 = request" not in auto
    assert len(auto) < len(BIG) / 3
    assert r.read("small.py") == "x = 1\n"
    assert r.read("big.py", "full") == BIG


def test_signatures_mode_explicit(ws):
    out = Reader(ws).read("big.py", "signatures")
    assert "handler_29" in out and "lines:" in out


def test_lines_list_numbered(ws):
    out = Reader(ws).read("big.py", "lines:1,3-4")
    assert out.splitlines() == ["1| def handler_0(request, response):", "3|     step_1 = request + 1",
                                "4|     step_2 = request + 2"]
    with pytest.raises(ModeError, match="past the end"):
        Reader(ws).read("small.py", "lines:50-60")


def test_section_skips_fenced_headings_and_stops_at_same_level(ws):
    out = Reader(ws).read("doc.md", "section:setup")
    assert out.startswith("## Setup") and "### Detail" in out and "## Usage" not in out
    with pytest.raises(ModeError, match="headings: Title"):
        Reader(ws).read("doc.md", "section:Nope")


def test_anchored_tags_every_line_with_its_hash(ws):
    out = Reader(ws).read("doc.md", "anchored").splitlines()
    assert len(out) == DOC.count("\n")
    n, rest = out[4].split("#", 1)
    tag, text = rest.split("| ", 1)
    assert n == "5" and text == "## Setup" and tag == read_modes.anchor("## Setup") and len(tag) == 4


def test_paths_outside_workspace_are_refused(ws):
    r = Reader(ws)
    for bad in ("../secret.txt", str(ws.parent / "secret.txt"), "link.txt"):
        with pytest.raises(ReadError, match="outside the workspace"):
            r.read(bad)


def test_binary_and_directory_and_missing(ws):
    r = Reader(ws)
    with pytest.raises(ReadError, match="binary"):
        r.read("blob.bin")
    (ws / "sub").mkdir()
    with pytest.raises(ReadError, match="directory"):
        r.read("sub")
    with pytest.raises(ReadError, match="no such file"):
        r.read("missing.py")


def test_reader_stub_per_scope_and_mode(ws, state_dir):
    r = Reader(ws, stubs=StubStore())
    assert r.read("doc.md", "full", scope="conv:1") == DOC
    assert "unchanged" in r.read("doc.md", "full", scope="conv:1")
    assert r.read("doc.md", "anchored", scope="conv:1").startswith("1#")   # other mode: not seen yet
    assert r.read("doc.md", "full", scope="task:x") == DOC
    long_doc = DOC + "".join(f"para {i}\n" for i in range(100))
    (ws / "doc.md").write_text(long_doc)
    assert r.read("doc.md", "full", scope="conv:1") == long_doc    # delta would be longer than the text
    (ws / "doc.md").write_text(long_doc.replace("para 50\n", "para fifty\n"))
    delta = r.read("doc.md", "full", scope="conv:1")
    assert "changed since you read it" in delta and "70| para fifty" in delta and "para 49" not in delta


def test_line_numbers_count_newlines_only(ws):
    (ws / "ff.py").write_text("one\n\x0ctwo\u2028still two\nthree\r\nfour\n")
    r = Reader(ws)
    assert r.read("ff.py", "lines:2-4").splitlines()[0] == "2| \x0ctwo\u2028still two".splitlines()[0]
    assert r.read("ff.py", "lines:3").split("\n") == ["3| three"]
    assert r.read("ff.py", "lines:4").split("\n") == ["4| four"]
    assert r.read("ff.py", "anchored").split("\n")[3].startswith("4#")
