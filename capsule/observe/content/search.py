"""Search-result shaping for grep/rg/git grep/find output: deduplicated, context noise (blank
and import lines around a hit) dropped, overlong lines windowed, find listings grouped by folder.

Not responsible for running searches (the retrieve layer does) nor for ranking.
Invariant: a line that matches the query (the command's pattern, else the intent's words)
is never dropped; each kept hit keeps its file, line number and content.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from capsule.observe.transform_types import Context, Removal, TransformResult

TRANSFORM_ID = "search"
LONG_LINE = 300          # content beyond this is windowed around the match
WINDOW = 120

_HIT = re.compile(r"^(?P<path>[^\s:][^:\n]*?)(?P<sep>:)(?P<line>\d+):(?P<text>.*)$")
_NOPATH = re.compile(r"^(?P<path>)(?P<sep>)(?P<line>\d+):(?P<text>.*)$")   # grep -n on one file
_CONTEXT = re.compile(r"^(?P<path>[^\s:][^:\n]*?)(?P<sep>-)(?P<line>\d+)-(?P<text>.*)$")
_BINARY = re.compile(r"^(?:grep: )?(?P<path>.+?): binary file matches$|^Binary file (?P<path2>.+) matches$")
_IMPORT = re.compile(
    r"^\s*(?:import\s|from\s+\S+\s+import\s|#\s*include\s|use\s+[\w:]+|require[\s(]|"
    r"(?:const|let|var)\s+[\w{}\s,]+=\s*require\(|package\s+\w+;?\s*$)")
_VALUED = {"-e", "--regexp", "-f", "--file", "-g", "--glob", "-t", "--type", "-T", "--type-not",
           "-A", "-B", "-C", "--after-context", "--before-context", "--context", "-m",
           "--max-count", "--include", "--exclude", "--exclude-dir", "-d", "--max-depth",
           "--color", "--colors", "-j", "--threads", "--sort", "--type-add", "-M",
           "--max-columns", "-E", "--encoding", "-r", "--replace"}
_TOOLS = {"grep", "egrep", "fgrep", "rg", "ag", "ack", "git"}


@dataclass
class Hit:
    index: int
    path: str
    line: int
    text: str
    context: bool      # a -A/-B/-C context line, not a match


_CONTEXT_SHORT = re.compile(r"^-[A-Za-z]*[ABC]\d*$")
_CONTEXT_LONG = re.compile(r"^--(after-|before-)?context(=\d+)?$")
_RECURSIVE = re.compile(r"^-[A-Za-z]*[rR][A-Za-z]*$|^--recursive$|^--dereference-recursive$")


def asks_to_read(command: str | None) -> bool:
    """Is this search a read of code regions? Context lines asked for (-A/-B/-C/--context, git
    grep -W/--function-context), or grep -n on one named file (not recursive): the agent reads
    those regions, and they are shown like a bounded view (issue 25), not cut like a listing."""
    if not command:
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    for i, w in enumerate(words):
        if w in ("|", "&&", ";", "||"):
            words = words[:i]
            break
    if not words or words[0].rsplit("/", 1)[-1] not in _TOOLS:
        return False
    tool, args = words[0].rsplit("/", 1)[-1], words[1:]
    if tool == "git":
        if args[:1] != ["grep"]:
            return False
        args = args[1:]
        if any(a in ("-W", "--function-context") or re.fullmatch(r"-[A-Za-z]*W[A-Za-z]*", a) for a in args):
            return True
    if any(_CONTEXT_SHORT.match(a) or _CONTEXT_LONG.match(a) for a in args):
        return True
    if tool not in ("grep", "egrep", "fgrep") or any(_RECURSIVE.match(a) for a in args):
        return False
    numbered = any(a in ("-n", "--line-number") or re.fullmatch(r"-[A-Za-z]*n[A-Za-z]*", a) for a in args)
    operands, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in _VALUED:
            skip = True
        elif not a.startswith("-"):
            operands.append(a)
    explicit = any(a in ("-e", "--regexp", "-f", "--file") for a in args)
    files = operands if explicit else operands[1:]
    return numbered and len(files) == 1 and not any(c in files[0] for c in "*?")


def query_of(command: str | None, intent: str | None = None) -> re.Pattern | None:
    """The search pattern of a grep/rg command line, else the intent's words."""
    pattern, ignore_case = None, False
    if command:
        try:
            words = shlex.split(command)
        except ValueError:
            words = []
        for i, w in enumerate(words):
            if w.rsplit("/", 1)[-1] in _TOOLS:
                words = words[i + 1:]
                if words[:1] == ["grep"]:
                    words = words[1:]
                break
        else:
            words = []
        skip = False
        for i, w in enumerate(words):
            if skip:
                skip = False
                continue
            if w in ("-e", "--regexp") and i + 1 < len(words):
                pattern = words[i + 1]
                break
            if w in ("-i", "--ignore-case", "-S", "--smart-case") or (
                    w.startswith("-") and not w.startswith("--") and "i" in w[1:] and
                    w[1:].isalpha()):
                ignore_case = True
            if w in _VALUED:
                skip = True
                continue
            if w.startswith("-"):
                continue
            if w in ("|", "&&", ";"):
                break
            pattern = w
            break
    if pattern:
        flags = re.IGNORECASE if ignore_case else 0
        try:
            return re.compile(pattern.replace("\\|", "|").replace("\\(", "(").replace("\\)", ")")
                              if "\\|" in pattern else pattern, flags)
        except re.error:
            return re.compile(re.escape(pattern), flags)
    if intent:
        words = [w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]{3,}", intent)]
        if words:
            return re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE)
    return None


def _window(text: str, query: re.Pattern | None) -> tuple[str, int]:
    """(shown text, chars cut) for an overlong line: windows around its first matches."""
    if len(text) <= LONG_LINE:
        return text, 0
    spans = [(m.start(), m.end()) for _, m in zip(range(8), query.finditer(text))] \
        if query is not None else []
    if not spans:
        spans = [(0, 0)]
    merged: list[list[int]] = []
    for a, b in spans:
        a, b = max(0, a - WINDOW), min(len(text), b + WINDOW)
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    parts = [text[a:b] for a, b in merged]
    shown = ("…" if merged[0][0] else "") + "…".join(parts) + ("…" if merged[-1][1] < len(text) else "")
    return shown, len(text) - sum(b - a for a, b in merged)


def shape(text: str, ctx: Context) -> TransformResult:
    """Transform entry point."""
    lines = text.split("\n")
    trailing = bool(lines) and lines[-1] == ""
    if trailing:
        lines = lines[:-1]
    hits: list[Hit] = []
    binaries: list[tuple[int, str]] = []
    others: list[int] = []
    for i, ln in enumerate(lines):
        m = _HIT.match(ln) or _CONTEXT.match(ln) or _NOPATH.match(ln)
        if m and ("/" in m.group("path") or "." in m.group("path") or not m.group("path")):
            hits.append(Hit(i, m.group("path"), int(m.group("line")), m.group("text"),
                            m.group("sep") == "-"))
            continue
        b = _BINARY.match(ln)
        if b:
            binaries.append((i, b.group("path") or b.group("path2")))
            continue
        others.append(i)
    if not hits and not binaries:
        if lines and all(_looks_like_path(ln) for ln in lines if ln.strip()):
            return _paths(lines, trailing)
        return TransformResult(text, TRANSFORM_ID, notes=["no search hits recognised"])
    query = query_of(ctx.command, ctx.intent)
    removals: list[Removal] = []
    seen: set[tuple[str, int, str]] = set()
    groups: dict[str, list[tuple[int, str]]] = {}
    for h in hits:
        key = (h.path, h.line, h.text)
        if key in seen:
            removals.append(Removal("duplicate hit", 1, h.index + 1, h.index + 1,
                                    lines[h.index][:120]))
            continue
        seen.add(key)
        matches = query is None or bool(query.search(h.text)) or not h.context
        if h.context and not matches and (not h.text.strip() or _IMPORT.match(h.text)):
            removals.append(Removal("context noise (blank or import line)", 1, h.index + 1,
                                    h.index + 1, lines[h.index][:120]))
            continue
        shown, cut = _window(h.text, query)
        if cut:
            removals.append(Removal(f"{cut} chars of an overlong line", 0, h.index + 1,
                                    h.index + 1, h.text[:120]))
        groups.setdefault(h.path, []).append((h.line, ("-" if h.context else ":") + shown))
    # kept hits stay `path:line:content`, in their original order (agents and the corpus
    # expect that shape); binary-match notices stay as they are
    out: list[str] = []
    kept = {h.index: h for h in hits}
    dropped = {r.start - 1 for r in removals if r.count}
    for i, ln in enumerate(lines):
        if i in dropped:
            continue
        if i in kept:
            h = kept[i]
            shown, _ = _window(h.text, query)
            sep = "-" if h.context else ":"
            out.append(f"{h.path}{sep if h.path else ''}{h.line}{sep}{shown}")
        elif ln.strip() == "--":
            removals.append(Removal("context separator", 1, i + 1, i + 1, "--"))
        elif ln.strip() or i != len(lines) - 1:
            out.append(ln)
    body = "\n".join(out) + ("\n" if trailing else "")
    return TransformResult(body, TRANSFORM_ID, removals=removals,
                           notes=[f"{len(seen)} hits in {len(groups)} files"])
_PATHLIKE = re.compile(r"^\.?\.?/?[\w@.+~-][\w@.+~/ -]*$")


def _looks_like_path(line: str) -> bool:
    return bool(_PATHLIKE.match(line.strip())) and ("/" in line or "." in line)


def _paths(lines: list[str], trailing: bool) -> TransformResult:
    """find / rg --files output: one line per directory listing its entries."""
    dirs: dict[str, list[str]] = {}
    for ln in lines:
        if not ln.strip():
            continue
        head, sep, tail = ln.rpartition("/")
        dirs.setdefault(head + sep, []).append(tail)
    out = []
    for d, names in dirs.items():
        if len(names) == 1:
            out.append(d + names[0])
        else:
            out.append(f"{d} ({len(names)}): " + ", ".join(names))
    if len(out) >= len([ln for ln in lines if ln.strip()]):
        return TransformResult("\n".join(lines) + ("\n" if trailing else ""), TRANSFORM_ID,
                               notes=["paths: nothing to group"])
    return TransformResult("\n".join(out) + ("\n" if trailing else ""), TRANSFORM_ID,
                           notes=[f"{len(lines)} paths in {len(dirs)} directories"])
