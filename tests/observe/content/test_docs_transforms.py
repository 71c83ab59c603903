"""Markdown slicing, HTML -> markdown, extractive prose, sniffing."""

import re

from hypothesis import given, settings, strategies as st

from capsule.observe.content import markdown, prose, sniff
from capsule.observe.transform_types import Context


def _doc():
    parts = ["# Shop reference", "", "Intro line.", ""]
    for name in ("Cart", "Checkout", "Invoice", "Shipping", "Refund", "Coupon"):
        parts += [f"## {name}", "", f"The {name.lower()} component.", "", "```js",
                  f"## not a heading inside a fence ({name})", "```", ""]
        parts += [f"Line {k} about {name.lower()} internals." for k in range(20)] + [""]
    return "\n".join(parts) + "\n"


def test_markdown_keeps_headings_and_the_section_the_intent_names():
    text = _doc()
    result = markdown.slice_markdown(text, Context(intent="what props does the checkout take"))
    for name in ("Cart", "Checkout", "Invoice", "Shipping", "Refund", "Coupon"):
        assert f"## {name}" in result.text
    assert "Line 7 about checkout internals." in result.text
    assert "Line 7 about refund internals." not in result.text
    assert "{ … " in result.text
    kept = [ln for ln in result.text.split("\n")]
    originals = set(text.split("\n"))
    assert all(re.sub(r" \{ … \d+ lines? \}$", "", ln) in originals for ln in kept)


def test_markdown_sections_ignore_fenced_hashes():
    secs = markdown.sections(_doc().split("\n"))
    assert [s.title for s in secs if s.level == 2] == ["Cart", "Checkout", "Invoice", "Shipping",
                                                      "Refund", "Coupon"]
    assert "Line 3 about invoice internals." in markdown.section(_doc(), "invoice")


def test_html_to_markdown_drops_scripts_styles_nav():
    html = """<!doctype html><html><head><title>t</title><style>body{}</style></head><body>
    <nav><a href="/">Home</a> <a href="/docs">Docs</a></nav>
    <h1>Install</h1><p>Run <code>pip install capsule</code> then see
    <a href="https://example.com/guide">the guide</a>.</p>
    <script>alert("x")</script><ul><li>one</li><li>two</li></ul>
    <pre>line 1
  line 2</pre><table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>
    <footer>© corp</footer></body></html>"""
    md = markdown.html_to_markdown(html)
    assert "# Install" in md and "`pip install capsule`" in md
    assert "[the guide](https://example.com/guide)" in md
    assert "- one" in md and "```\nline 1\n  line 2\n```" in md and "| a | b |" in md
    for gone in ("alert", "body{}", "Home", "© corp"):
        assert gone not in md


_SPANS = st.sampled_from(["`make test.`", "https://example.com/a.b?x=1", "src/app/main.py",
                          "v1.2.3", "3.14", "e.g. this", "node_modules/.bin/jest", "42"])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["Alpha", "Beta", "Gamma", "Delta"]), _SPANS),
                min_size=14, max_size=40))
def test_prose_keeps_protected_spans_byte_exact(pairs):
    text = " ".join(f"{w} uses {span} here." for w, span in pairs) + "\n"
    pieces = prose.split_sentences(text.strip())
    # the splitter never cuts inside a span: each sentence holds whole spans
    assert pieces == [f"{w} uses {span} here." for w, span in pairs]
    result = prose.shrink(text, Context(intent="what does Gamma use"))
    kept = prose.split_sentences(result.text.strip())
    assert kept and all(k in text for k in kept)          # byte-exact substrings only
    assert len(kept) < len(pieces)


def test_prose_prefers_the_intent_and_suppresses_near_duplicates():
    filler = [f"Section {k} talks about unrelated matters of style and taste." for k in range(20)]
    text = " ".join(filler[:10] + ["The retry budget is 5 attempts with backoff of 200ms."] + filler[10:]
                    + ["Section 3 talks about unrelated matters of style and taste!"]) + "\n"
    result = prose.shrink(text, Context(intent="what is the retry budget"))
    assert "The retry budget is 5 attempts with backoff of 200ms." in result.text
    assert len(result.text) < len(text) / 2
    assert result.removals


def test_sniff_routes_content():
    cases = {
        b'{"a": [1, 2, 3]}': "json",
        b"id,name,city\n1,a,x\n2,b,y\n3,c,z\n4,d,w\n": "tabular",
        b"# Title\n\nText here.\n\n## Part\n\n- item\n": "markdown",
        b"<!DOCTYPE html><html><body><p>x</p></body></html>": "html",
        b"def f():\n    return 1\n\nclass A:\n    pass\n": "outline",
        b"src/a.py:3:x = 1\nsrc/b.py:9:y = 2\nsrc/c.py:1:z\n": "search",
        b"2026-01-01 10:00:00 INFO a\n2026-01-01 10:00:01 INFO b\n2026-01-01 10:00:02 WARN c\n": "logs",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00": "binary",
        b"[tool]\nname = \"x\"\nversion = 1\n": "toml",
        b"name: web\nports:\n  - 80\n  - 443\n": "yaml",
        b"hello\n": "default",
    }
    for head, want in cases.items():
        assert sniff.sniff(head)[1] == want, (head, sniff.sniff(head))
    assert sniff.sniff(b'{"nodes": 11}\nTraceback (most recent call last):\n  File "x.py"')[1] != "json"
