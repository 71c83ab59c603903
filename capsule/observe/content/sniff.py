"""Content sniffing: which typed transform fits a text, judged from its first KiB.

Responsible for naming a family and a transform id for content that arrives without a command
rule (piped output, `cat`, MCP reads). Not responsible for command rules (observe/rules).
Invariant: cheap (one pass over <= 1 KiB), deterministic, and "unknown" whenever unsure —
a wrong typed transform costs more than the default one.
"""

from __future__ import annotations

import json
import re

from capsule.observe.content.binary import is_binary, kind_of
from capsule.observe.content.outline import language_for
from capsule.observe.content.tabular import delimiter_of

_TS = re.compile(r"^\s*(?:\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}|\[?\d{2}:\d{2}:\d{2}|"
                 r"\w{3} [ \d]\d \d{2}:\d{2}:\d{2}|\d{2}\.\d{2}\.\d{4} \d{2}:\d{2}|"
                 r"\[?(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL|CRITICAL)\]?[\s:]|"
                 # an access log (Common Log Format, python's http.server): host ident user [date]
                 r"\S+ \S+ \S+ \[\d{1,2}/\w{3}/\d{4}[: ]\d{2}:\d{2}:\d{2}(?: [+-]\d{4})?\] )")
# A file shown with its line numbers (`cat -n`, `nl`, an agent's Read tool: `  12→code`), and an
# editor's window (SWE-agent's `open`/`goto`: `[File: path (N lines total)]`): reads, not data.
_NUMBERED = re.compile(r"^ *\d+(?:\t|→)")
_WINDOW = re.compile(r"^\[File: .+ \(\d+ lines total\)\]$")
_GREP = re.compile(r"^(?:[^\s:]+:\d+[:-]|[^\s:]*\.\w+-\d+-|Binary file |grep: )")
_HTML = re.compile(rb"(?is)^\s*(?:<!doctype html|<html|<head|<body|<!--.*?-->\s*<html)")
_DIAG = re.compile(r"(?i):\d+(?::\d+)?:?\s+(?:error|warning|note|info)\b|\b[A-Z]{1,4}\d{3,4}\b")
_MD_STRONG = re.compile(r"^(?:#{1,6} \S|```|~~~)")
_SYMBOLS = re.compile(r"[{}\[\]()<>=;:/\\|`$*#@]")
_MD = re.compile(r"^(?:#{1,6} \S|```|~~~|\s*[-*] \[[ x]\] |\s*[-*+] \S.*\]\(|\|.*\|\s*$|> \S)")
_YAML = re.compile(r"^(?:---\s*$|%YAML|\s*[\w.\"'/-]+:(?:\s|$)|\s*- \S)")
_TOML = re.compile(r"^(?:\[\[?[\w.\"-]+\]\]?\s*$|[\w.\"-]+\s*=\s*\S)")
_CODE = [
    # a definition names something (`def 12 gather` is a script's progress line, not a def)
    ("python", re.compile(r"^(?:(?:async )?def [A-Za-z_]\w*\s*\(|class \w+[(:]|import \w|from [\w.]+ import |@\w)")),
    ("rust", re.compile(r"^(?:pub )?(?:fn |struct |enum |impl|use \w+::|mod \w+|trait )")),
    ("go", re.compile(r"^(?:package \w+$|func |import \(|type \w+ (?:struct|interface))")),
    ("java", re.compile(r"^(?:package [\w.]+;|import [\w.]+;|public (?:final )?(?:class|interface|enum) )")),
    ("c", re.compile(r"^(?:#include [<\"]|#define |static \w|int main\()")),
    ("javascript", re.compile(r"^(?:import .* from ['\"]|export (?:default |const |function |class )|"
                              r"const \w+ = require\(|module\.exports|function \w+\()")),
    ("ruby", re.compile(r"^(?:require ['\"]|module [A-Z]|class [A-Z]\w*(?: < \w+)?$|def (?:self\.)?[A-Za-z_]\w*[?!=]?(?:\s*\(|\s*$))")),
]


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if len(lines) > 1:
        lines = lines[:-1]       # the last line of a 1 KiB head is usually cut
    return [ln for ln in lines if ln.strip()]


def looks_like_json(head: bytes) -> bool:
    text = head.decode("utf-8", "replace").lstrip()
    if text[:1] not in ("{", "["):
        return False
    dec = json.JSONDecoder()
    try:
        _, end = dec.raw_decode(text)
    except json.JSONDecodeError as exc:
        # a head cut mid-value: the error sits at the cut, or in the cut line
        if "\n" not in text.strip():
            return exc.pos >= len(text) - 120 or exc.msg.startswith("Unterminated string")
        return exc.pos >= len(text.rsplit("\n", 1)[0])
    rest = text[end:].strip()
    if not rest:
        return True
    # NDJSON / a stream of values: the next value must parse too (or be cut by the head)
    try:
        dec.raw_decode(rest)
        return True
    except json.JSONDecodeError as exc:
        return exc.pos >= len(rest.rsplit("\n", 1)[0]) and rest[:1] in "{["


def language_of(text: str) -> str | None:
    """A source language guessed from declaration-shaped lines (shebang first)."""
    lang = language_for(None, text)
    if lang:
        return lang
    votes: dict[str, int] = {}
    for ln in _lines(text)[:60]:
        for name, pat in _CODE:
            if pat.match(ln):
                votes[name] = votes.get(name, 0) + 1
    if not votes:
        return None
    best = max(votes, key=lambda k: (votes[k], k))
    return best if votes[best] >= 2 else None


def sniff(head: bytes) -> tuple[str, str, str]:
    """(family, transform id, reason) for a head of content."""
    head = head[:1024]
    if not head.strip():
        return "unknown", "default", "empty"
    if kind_of(head) or b"\x00" in head:
        return "binary", "binary", "binary magic or NUL byte"
    if is_binary(head):
        return "binary", "binary", "mostly unprintable bytes"
    if looks_like_json(head):
        return "json", "json", "parses as JSON"
    if _HTML.match(head):
        return "html", "html", "HTML document"
    text = head.decode("utf-8", "surrogateescape")
    lines = _lines(text)
    n = len(lines)
    if not n:
        return "unknown", "default", "no lines"
    if _WINDOW.match(lines[0]):
        return "read", "read_view", "an editor window onto a file"
    if n >= 3 and sum(1 for ln in lines if _NUMBERED.match(ln)) >= n * 0.9:
        return "read", "read_file", "a file shown with its line numbers"
    if sum(1 for ln in lines if _GREP.match(ln)) >= max(2, int(n * 0.6)) and \
            sum(1 for ln in lines if _DIAG.search(ln)) < n * 0.3:
        return "search", "search", "file:line: search hits"
    code_lines = sum(1 for ln in lines if any(p.match(ln) for _, p in _CODE))
    if text.startswith("#!") or (code_lines >= 2 and code_lines >= n * 0.2):
        lang = language_of(text)
        if lang:
            return f"source:{lang}", "outline", f"{lang} source"
    if sum(1 for ln in lines if _TS.match(ln)) >= max(3, int(n * 0.5)):
        return "logs", "logs", "timestamped or levelled lines"
    if n >= 3 and delimiter_of(text) not in (None, "|"):
        return "csv", "tabular", "delimited rows of equal width"
    md = sum(1 for ln in lines if _MD.match(ln))
    if md >= 2 and md >= n * 0.15 and any(_MD_STRONG.match(ln) for ln in lines):
        return "markdown", "markdown", "markdown headings/fences/lists"
    if n >= 3 and sum(1 for ln in lines if _TOML.match(ln)) >= n * 0.8 and \
            any(ln.startswith("[") for ln in lines) or (n >= 3 and all(
            _TOML.match(ln) or ln.lstrip().startswith("#") for ln in lines) and
            any(" = " in ln for ln in lines)):
        return "toml", "toml", "TOML tables and key = value lines"
    if n >= 3 and sum(1 for ln in lines if _YAML.match(ln) or ln.lstrip().startswith("#")) >= n * 0.9:
        return "yaml", "yaml", "YAML keys and lists"
    words = len(text.split())
    sentence_lines = sum(1 for ln in lines if re.match(r"^[A-Z][a-z]+[ ,]", ln))
    if n >= 3 and words >= 80 and text.count(". ") >= 3 and \
            sum(len(ln) for ln in lines) / n >= 50 and sentence_lines >= n * 0.4 and \
            len(_SYMBOLS.findall(text)) < len(text) * 0.03:
        return "prose", "prose", "running sentences"
    return "unknown", "default", "no rule matched"
