"""The task's cues and the one ranking by them (issue 29.3): what the task points at, read from what
the session said and did, and which of a text's parts those words point at.

Responsible for the cues (exact names, quoted phrases and ranking terms from the intent, the user's last prompt,
the session's failure names and failing frames, what its recent commands searched for or touched,
the paths and identifiers of its recent edits) and for ranking parts of one text against them
(tantivy BM25 over the parts, in memory). Every cut by the task uses it: a read over the size gate
(observe/read_focus.py, every door's), a search with context over its view size (filters/search_focus.py) and the
read door's ctx_search (retrieve/packer.py), the last two through point().
Not responsible for where the cues are stored (observe/salience.py, retrieve/focus.py, the ledger,
the doors' prompt and edit records) nor for what a caller keeps of the parts it ranked.
Invariant: deterministic: the same inputs give the same cues in the same order and the same ranking
(ties broken by position); cues() never raises on any text; no cue means an empty ranking.
"""

from __future__ import annotations

import re
from collections import namedtuple

import tantivy

REGION_BUDGET_TOKENS = 2000     # what the kept regions may take beside what always shows (~ the size gate's 8 KB)
MIN_SHARE = 0.35                # a BM25 hit below this share of the best is noise (a word in passing)
MAX_NAMES = 48                  # exact names kept, first said first
SCAN_CHARS = 8000               # of each text a cue is read from (a prompt, a command, an edit)
# Words of a goal that name no code: they would match every comment.
STOPWORDS = frozenset("""a an and are as at be bug but by can do does doesn down error fail fails failing
fix for from get how i in into is it its make not of on or out please see should that the this to up use
what when where which why with work works wrong you""".split())
WORD = re.compile(r"[A-Za-z0-9_]+")
_HUMP = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# An identifier in prose: snake_case, camelCase, PascalCase with two humps.
IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9]*_[A-Za-z0-9_]+\b|\b[a-z]+[A-Z]\w*\b|\b[A-Z][a-z]+[A-Z]\w*\b")
# What a shell command searched for: grep/rg/ag/ack's pattern, pytest's -k.
_SEARCHED = re.compile(r"(?:\b(?:grep|rg|ag|ack)\b(?:\s+-\S+)*|\s-k)\s+['\"]?([A-Za-z_][\w]*)")
# What a prompt names as code: `quoted` (its last dotted part), a call `name(...)`. (A bare dotted
# `obj.attr` is not one: `self.items`, `os.path` name every other body, and crowd the budget.)
_QUOTED = re.compile(r"`([A-Za-z_][\w.]*)(?:\(\))?`|\b([A-Za-z_]\w{2,})\((?=[\w\s,'\")]*\))")
# The definitions a text makes (`def name`, `class Name`, `function name`, `fn name`).
DEFINES_BEFORE = r"\b(?:def|class|function|fn|func|struct|enum|trait|interface|type|impl)\s+[*&]?"
_DEFINES = re.compile(DEFINES_BEFORE + r"([A-Za-z_]\w*)")
_SUFFIXES = frozenset("py pyi txt toml json jsonl yaml yml md rst js mjs ts tsx jsx html css cfg ini log lock sh rs go "
                      "java rb php cpp hpp csv xml sql".split())     # `focus.py` names a file, not a member
_PATH = re.compile(r"(?:^|[\s'\"=(])((?:/|\.{1,2}/)?(?:[\w.-]+/)*[\w-]+\.[A-Za-z]{1,5})(?=$|[\s'\":)])")

# What a prompt quotes as text: a message, an output line ("✓ Settings saved"), found in a file as written.
_PHRASE = re.compile(r'"([^"\n]{0,120})"|\u201c([^\u201d\n]{0,120})\u201d')
MAX_QUOTES = 8

Cues = namedtuple("Cues", ("names", "terms", "lines", "frames", "paths", "quotes"), defaults=((), (), ()))
"""names: exact names, first said first;  terms: their ranking terms;  lines: hot line numbers of one
file (a read's);  frames: (path, line) of the session's failing frames, newest first;  paths: files
the session touched (edits) or named;  quotes: phrases the intent or the user's prompt quoted."""

NONE = Cues((), (), ())


def split_identifier(word: str) -> list[str]:
    """`getHTTPResponse_code` -> ["get", "http", "response", "code"] (lowercase parts)."""
    return [p.lower() for chunk in word.split("_") for p in _HUMP.findall(chunk)]


def query_terms(query: str) -> list[str]:
    """Lowercase terms of a query: each word whole and its snake/camel parts, in order, unique."""
    terms: list[str] = []
    for word in WORD.findall(query):
        for t in [word.lower(), *split_identifier(word)]:
            if t not in terms:
                terms.append(t)
    return terms


def said_in(text: str) -> list[str]:
    """The names a user's prompt says: identifiers, `quoted` names, calls. (The step's goal gives its
    identifiers only: a docstring-like goal's `f(x)` names a helper, not where to look.)"""
    text = text[:SCAN_CHARS]
    out = IDENT.findall(text)
    for m in _QUOTED.finditer(text):
        name = next(g for g in m.groups() if g).rsplit(".", 1)[-1]
        if name.lower() not in _SUFFIXES:
            out.append(name)
    return out


def quoted_in(text: str) -> list[str]:
    """The phrases a text quotes in double quotes (straight or curly), each stripped, in order."""
    return [p.strip() for m in _PHRASE.finditer(text[:SCAN_CHARS]) for p in m.groups() if p and p.strip()]


def edited_in(edit: str) -> tuple[list[str], list[str]]:
    """(names, paths) an edit record points at: the path it changed (and its stem), the names its new
    text defines and uses."""
    text = edit[:SCAN_CHARS]
    paths = [m.group(1) for m in _PATH.finditer(text)]
    names = _DEFINES.findall(text) + IDENT.findall(text)
    return names, paths


def cues(intent: str | None, names: list[str], commands: list[str], lines: list[int] = (),
         prompt: str | None = None, edits: list[str] = (), frames: list[tuple[str, int]] = ()) -> Cues:
    """The task's pointers: exact names (the intent's and the user's last prompt's identifiers, the
    session's failure names, what its recent commands searched for or named, its recent edits'),
    their ranking terms, a read's hot lines, the session's failing frames, the paths it edited and
    the phrases the intent and the prompt quote.
    `commands` and `edits` newest first."""
    said: list[str] = IDENT.findall((intent or "")[:SCAN_CHARS]) + said_in(prompt or "")
    said += list(names)
    for text in commands:
        text = text[:SCAN_CHARS]
        said += IDENT.findall(text) + _SEARCHED.findall(text)
    paths: list[str] = []
    for text in edits:
        n, p = edited_in(text)
        said += n
        paths += p
    exact = [n for n in dict.fromkeys(said) if len(n) > 2 and n.lower() not in STOPWORDS][:MAX_NAMES]
    words = [w for w in query_terms(" ".join([intent or "", prompt or "", *exact]))
             if len(w) > 2 and w not in STOPWORDS]
    quotes = [q for q in dict.fromkeys(quoted_in(intent or "") + quoted_in(prompt or "")) if len(q) >= 4][:MAX_QUOTES]
    return Cues(tuple(exact), tuple(words), tuple(lines), tuple(frames), tuple(dict.fromkeys(paths)), tuple(quotes))


def empty(cue: Cues | None) -> bool:
    return cue is None or not (cue.names or cue.terms or cue.lines or cue.frames or cue.quotes)


def rank(texts: list[str], cue: Cues, titles: list[str] | None = None) -> list[int]:
    """Indexes of `texts` the cue's terms point at, best first (BM25, ties by position); a part whose
    score is under MIN_SHARE of the best is left out. `titles`: a name per part (a body's function),
    indexed with its text. Identifiers are indexed with their snake/camel parts."""
    if not cue.terms or not texts:
        return []

    schema = tantivy.SchemaBuilder().add_text_field("body").add_integer_field("i", stored=True).build()
    index = tantivy.Index(schema)
    writer = index.writer(15_000_000, 1)
    for i, text in enumerate(texts):
        title = titles[i] if titles else ""
        words = sorted(set(IDENT.findall(text)) | ({title} if title else set()))
        extra = " ".join(p for w in words for p in split_identifier(w))
        writer.add_document(tantivy.Document(body=f"{title} {text} {extra}", i=i))
    writer.commit()
    index.reload()
    searcher = index.searcher()
    query = index.parse_query(" OR ".join(cue.terms), ["body"])
    hits = [(score, searcher.doc(addr)["i"][0]) for score, addr in searcher.search(query, len(texts)).hits]
    if not hits:
        return []
    best = max(s for s, _ in hits)
    return [i for s, i in sorted(hits, key=lambda h: (-h[0], h[1])) if s >= MIN_SHARE * best]


def point(texts: list[str], cue: Cues, where: list[tuple[str, int, int]] | None = None,
          ranked: list[str] | None = None) -> list[tuple[int, str]]:
    """(index, why) of the `texts` the cue points at, best first, each once: those holding a failing
    frame's line (`where[i]`: the text's file and its first and last line numbers), then those holding
    an exact name that singles texts out (telling()), a definition of it first; else what the terms
    point at (rank(), over `ranked[i]` in place of a text when given: a file's parts near the query).
    The one ranking of both cuts of a search (a shell search's match groups, the files of ctx_search)."""
    picked: list[tuple[int, str]] = []
    for path, no in cue.frames:
        for i, (file, lo, hi) in enumerate(where or ()):
            if file and lo <= no <= hi and same_file(path, file):
                picked.append((i, f"a failure's frame {path}:{no}"))
    names = telling(texts, cue)
    if names:
        said = re.compile(r"(?<![\w])(" + "|".join(map(re.escape, names)) + r")(?![\w])")
        order = {n: i for i, n in enumerate(names)}
        scored = []
        for k, text in enumerate(texts):
            held = set(said.findall(text)) if any(n in text for n in names) else ()
            if held:
                first = min(held, key=order.__getitem__)
                defines = re.search(DEFINES_BEFORE + re.escape(first) + r"\b", text) is not None
                scored.append(((order[first], not defines, k), k, f"names {first}"))
        picked += [(k, why) for _, k, why in sorted(scored)]
    if not picked:
        picked = [(i, "matches the task's words") for i in rank(texts if ranked is None else ranked, cue)]
    seen: set[int] = set()
    return [(i, why) for i, why in picked if not (i in seen or seen.add(i))]


def telling(texts: list[str], cue: Cues) -> list[str]:
    """The cue's names that single out texts: found in at most half of them (a name in more tells
    nothing: it is what was searched for)."""
    if not cue.names or not texts:
        return []
    joined = "\n".join(texts)
    out = []
    for n in cue.names:
        if n not in joined:
            continue
        whole = re.compile(rf"(?<![\w]){re.escape(n)}(?![\w])")
        held = sum(1 for t in texts if n in t and whole.search(t))
        if 0 < held <= max(1, len(texts) // 2):
            out.append(n)
    return out


def same_file(a: str, b: str) -> bool:
    """Do two spellings of a path (absolute, ./relative, a suffix of the other) name one file?"""
    f, r = a.replace("\\", "/").lstrip("./"), b.replace("\\", "/").lstrip("./")
    return bool(f and r) and (f == r or f.endswith("/" + r) or r.endswith("/" + f))


def names_in(text: str, cue: Cues) -> list[str]:
    """The cue's exact names that `text` holds as whole words, in the cue's order."""
    return [n for n in cue.names if re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", text)]
