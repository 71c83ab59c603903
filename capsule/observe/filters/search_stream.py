"""grep / rg / ag output: hits grouped by file, and a cut that is fair across files.

Not responsible for choosing the filter (rules.toml) nor for the footer (the pipeline).
Invariants: every shown hit keeps its line number, separator and text byte-exact, under its
file's path (stated once for a file with several hits; a one-hit file keeps its line as printed);
`ungroup` turns the view back into the tool's own lines. Tool errors (`grep: x: No such file`,
binary-file notices), `--stats` lines and every verbatim-class or pinned line are kept as
printed; a cut (beyond `max_lines` hits) keeps the definitions of the searched name and the
intent's lines, then an equal share of every file's first hits, and names each file whose hits
were cut with its count. Output it cannot parse, and a list of one line per file (-c), gets the
plain line budget of the TOML stages; a list of paths (-l) is delegated to find's (files.toml).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from capsule.observe import markers
from capsule.observe.content import templates
from capsule.observe.content.reflex import relevance
from capsule.observe.content.search import asks_to_read, query_of
from capsule.observe.filters import search_focus
from capsule.observe.filters.stages import INTENT_SHARE, run_stages
from capsule.observe.filters.streaming import StreamFilter
from capsule.observe.guard import budgets
from capsule.observe.verbatim import is_verbatim

_HIT = re.compile(r"^(?P<path>[^\s:][^:]*?):(?P<no>\d+):(?P<text>.*)$")
_CTX = re.compile(r"(?P<sep>[-=])(?P<no>\d+)(?P=sep)")   # `=`: git grep -W's function line
_BARE = re.compile(r"^(?P<no>\d+)(?P<sep>[:=-])(?P<text>.*)$")
_NONUM = re.compile(r"^(?P<path>[^\s:][^:]*?):(?P<text>.*)$")
_ERROR = re.compile(r"^(grep|egrep|fgrep|zgrep|rg|ag|ack|ugrep|git): |^Binary file .+ matches$")
_STATS = re.compile(r"^\d+(\.\d+)? (matches|matched lines|files? contained matches|files? searched"
                    r"|bytes printed|bytes searched|seconds spent searching|seconds)$")
# Where a searched name is defined, in the languages agents grep: `def NAME`, `class NAME`,
# `function NAME`, `fn NAME`, `const NAME =`, `NAME = function`, `NAME = (...) =>`.
_DEF_BEFORE = r"\b(?:def|class|function|fn|func|struct|enum|trait|interface|type|impl|module|macro_rules!|const|let|var|val)\s+[*&]?"
_DEF_AFTER = r"\s*[:=]\s*(?:function\b|async\b|\([^)]*\)\s*=>|lambda\b)"
DEFINITION_SHARE = 0.25   # at most this share of a cut's budget goes to definitions of the searched name
_SHOWN = re.compile(r" \((\d+) (?:matches|match|lines|line), (\d+) shown\)$")


@dataclass
class Entry:
    kind: str          # hit, sep (`--`), error, stats, blank, head (rg --heading file line)
    lineno: int        # 1-based line of the tool's output
    raw: str           # the line as printed
    path: str | None = None
    no: str = ""       # line number in the file, as printed
    sep: str = ":"     # ":" a match, "-" a context line, "=" git grep -W's function line
    text: str = ""


def _looks_like_path(path: str) -> bool:
    return "/" in path or "." in path


def _misc(lineno: int, raw: str) -> Entry | None:
    if not raw.strip():
        return Entry("blank", lineno, raw)
    if _ERROR.match(raw):
        return Entry("error", lineno, raw)
    if _STATS.match(raw):
        return Entry("stats", lineno, raw)
    if raw == "--":
        return Entry("sep", lineno, raw)
    return None


def _prefixed(lines: list[str]) -> list[Entry] | None:
    """`path:N:text` hits (grep -rn, rg -n without a terminal), `path-N-text` context lines."""
    paths = {m.group("path") for m in map(_HIT.match, lines) if m}
    # A context line whose text holds `:N:` (a time, `host:80:x`) reads as a hit of a file named
    # `path-N-text…`: where that name is a known path's context line, it is one.
    paths -= {p for p in paths if any(p[:c.start()] in paths for c in _CTX.finditer(p))}
    if not paths:
        return None
    out = []
    for i, raw in enumerate(lines, 1):
        m = _HIT.match(raw)
        if m and m.group("path") in paths:
            out.append(Entry("hit", i, raw, m.group("path"), m.group("no"), ":", m.group("text")))
            continue
        entry = _misc(i, raw)
        if entry is None:
            for c in _CTX.finditer(raw):      # the path is a known one: `a-1-b.py-3-x` splits right
                if raw[:c.start()] in paths:
                    entry = Entry("hit", i, raw, raw[:c.start()], c.group("no"), c.group("sep"), raw[c.end():])
                    break
        if entry is None:
            return None
        out.append(entry)
    return out


def _headed(lines: list[str]) -> list[Entry] | None:
    """rg --heading: a path line, then `N:text` lines, a blank line between files. Without a
    path line at all: `grep -n` on one file (one group without a name)."""
    out: list[Entry] = []
    path = None
    for i, raw in enumerate(lines, 1):
        m = _BARE.match(raw)
        if m:
            out.append(Entry("hit", i, raw, path, m.group("no"), m.group("sep"), m.group("text")))
            continue
        entry = _misc(i, raw)
        if entry is not None:
            out.append(entry)
            continue
        following = lines[i] if i < len(lines) else ""
        if (i == 1 or not lines[i - 2].strip()) and _BARE.match(following):
            path = raw
            out.append(Entry("head", i, raw, raw))
            continue
        return None
    return out


def _unnumbered(lines: list[str]) -> list[Entry] | None:
    """`path:text` (grep -r without -n): the path must look like one."""
    out = []
    for i, raw in enumerate(lines, 1):
        m = _NONUM.match(raw)
        if m and _looks_like_path(m.group("path")):
            out.append(Entry("hit", i, raw, m.group("path"), "", ":", m.group("text")))
            continue
        entry = _misc(i, raw)
        if entry is None:
            return None
        out.append(entry)
    return out


def parse(lines: list[str]) -> list[Entry] | None:
    for reader in (_prefixed, _headed, _unnumbered):
        entries = reader(lines)
        if entries is not None and any(e.kind == "hit" for e in entries):
            return entries
    return None


def groups_of(entries: list[Entry]) -> list[list[Entry]]:
    """One group per file (its heading, hits and `--` separators, in the tool's order), placed
    where the file first appears; every other entry (errors, stats, blanks) is a group of its own."""
    out: list[list[Entry]] = []
    by_path: dict[str | None, list[Entry]] = {}
    current: list[Entry] | None = None
    for e in entries:
        if e.kind in ("hit", "head"):
            current = by_path.get(e.path)
            if current is None:
                current = by_path[e.path] = [e]
                out.append(current)
            else:
                current.append(e)
        elif e.kind == "sep" and current is not None:
            current.append(e)
        else:
            out.append([e])
    return out


def fair_shares(capacities: list[int], budget: int) -> list[int]:
    """Water-filling: every group gets the same share s (or all it has, if less); what is left
    goes one by one to the first groups that still have more."""
    lo, hi = 0, max(capacities, default=0)
    while lo < hi:                 # the largest s with sum(min(c, s)) <= budget
        mid = (lo + hi + 1) // 2
        if sum(min(c, mid) for c in capacities) <= budget:
            lo = mid
        else:
            hi = mid - 1
    shares = [min(c, lo) for c in capacities]
    left = budget - sum(shares)
    for i, c in enumerate(capacities):
        if left <= 0:
            break
        if c > shares[i]:
            shares[i] += 1
            left -= 1
    return shares


def ungroup(view: str) -> list[str]:
    """The tool's own `path:N:text` lines behind a grouped view (what `path` heading + `N:text`
    stands for); other lines as they are. Inverse of the grouping, used to check it."""
    out, path = [], None
    for line in view.split("\n"):
        if path is not None and (line == "--" or markers.parse(line) is not None):
            # a break between regions of one file, or the marker of lines left out of it: still that file's group
            out.append(line)
            continue
        m = _BARE.match(line)
        if m and path is not None:
            out.append(f"{path}{m.group('sep')}{m.group('no')}{m.group('sep')}{m.group('text')}")
            continue
        h = _HIT.match(line)
        if path is not None and line.startswith(path) and re.match(r"[:-]\d+[:-]", line[len(path):]):
            out.append(line)          # a protected line, kept as printed inside its file's group
            continue
        out.append(line)
        path = _SHOWN.sub("", line) if line.strip() and not h else None
    return out


class SearchFilter(StreamFilter):
    ranged_markers = True

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.folded: set[int] = set()      # hit line numbers a fold's count line stands for
        self.after: dict[int, str] = {}    # a fold's sample line number -> its count line

    def feed_line(self, line: str) -> None:
        self.lines.append(line)

    def source_lines(self, lines: list[str]) -> set[int]:
        """The hits and context lines: the searched files' text, as printed."""
        return {e.lineno - 1 for e in parse(lines) or [] if e.kind == "hit"}

    def on_exit(self, exit_code: int | None) -> None:
        entries = parse(self.lines)
        if entries is None:
            return self._plain(exit_code)
        budget = self.spec.max_lines if self.spec is not None and self.spec.max_lines else 80
        max_files = int(self.options.get("max_files", 150))
        groups = groups_of(entries)
        hits = [e for e in entries if e.kind == "hit"]
        files = [g for g in groups if g[0].kind in ("hit", "head")]
        if not any(e.no for e in hits) and all(len(g) == 1 for g in files):
            return self._plain(exit_code)    # one line per file (-c, -l like): a list, not hits to group
        if self._reads(hits, len(self.lines)):
            keep = {e.lineno for e in hits}         # a bounded view of the regions asked for: whole
            if all(len(g) == 1 or g[0].kind == "head" for g in files) or len(files) > max_files:
                self.out = list(self.lines)
            else:
                self._emit(groups, keep, [])
            return
        if self.cues is not None and any(e.sep != ":" for e in hits):
            # regions past the view's size: the groups the task points at whole (search_focus.py)
            cut = search_focus.cut(self.lines, entries, self.cues(), {e.lineno for e in entries if self._protected(e)})
            if cut is not None:
                self.out, self._run.removals = cut
                return
        self.folded, self.after, outliers = self._fold(hits)
        shown = [e for e in hits if e.lineno not in self.folded]
        files = [g for g in files if any(e.kind == "hit" and e.lineno not in self.folded for e in g)]
        keep = {e.lineno for e in shown} if len(shown) <= budget and len(files) <= max_files \
            else self._choose(shown, files[:max_files], budget, outliers)
        if not self.folded and keep == {e.lineno for e in hits} and len(files) <= max_files \
                and all(len(g) == 1 or g[0].kind == "head" for g in files):
            self.out = list(self.lines)      # nothing to group and nothing cut: as printed
            return
        self._emit(groups, keep, files[max_files:])

    def _reads(self, hits: list[Entry], n_lines: int) -> bool:
        """A search that reads code (content/search.asks_to_read: context asked for, grep -n on
        one file; or hits that name no file, the tool's own one-file form) within the bounded
        view's size (budgets.toml [reads] view_max_lines) is shown whole (issue 25)."""

        if n_lines > budgets()["reads"]["view_max_lines"]:
            return False
        one_file = all(e.path is None and e.no for e in hits)
        return one_file or asks_to_read(self.command)

    # --- folding -------------------------------------------------------------------------
    def _fold(self, hits: list[Entry]) -> tuple[set[int], dict[int, str], set[int]]:
        """Hits sharing a template (content/templates.py) show as their first and one count line;
        the hits that break a template, the protected ones, the definitions of the searched name
        and the lines the intent points at join none. (folded line numbers, count line after a
        sample's line number, outlier line numbers)."""

        if any(e.sep != ":" for e in hits):
            return set(), {}, set()       # context was asked for: the agent reads those regions whole
        exempt = {i for i, e in enumerate(hits) if self._protected(e)}
        defs = {id(e) for e in self._definitions(hits)}
        exempt |= {i for i, e in enumerate(hits) if id(e) in defs}
        texts = [e.text for e in hits]
        named: set[int] = set()
        if self.intent:
            # a hit whose text the intent speaks to joins no fold; a routine hit in a file the
            # intent names folds within that file (its file stays in view with its own count)
            exempt |= {i for i, s in enumerate(relevance(texts, self.intent)) if s > 0}
            named = {i for i, s in enumerate(relevance([e.path or "" for e in hits], self.intent)) if s > 0} - exempt
        folds, outliers = templates.cluster(texts, exempt | named)
        if named:
            more, odd = templates.cluster(texts, set(range(len(hits))) - named)
            folds, outliers = sorted(folds + more, key=lambda f: f.members[0]), outliers | odd
        folded: set[int] = set()
        after: dict[int, str] = {}
        for f in folds:
            members = [hits[m] for m in f.members]
            folded |= {e.lineno for e in members[1:]}
            paths = list(dict.fromkeys(e.path for e in members if e.path is not None))
            where = ""
            if len(paths) > 1:
                shape = templates.describe(paths)
                where = f" in {len(paths)} files" + (f" {shape}" if shape else "")
            elif all(e.no for e in members[1:]):      # one file: where in it
                nos = sorted(int(e.no) for e in members[1:])
                where = f" at lines {nos[0]}…{nos[-1]}"
            noun = "lines" if any(e.sep != ":" for e in members) else "hits"
            after[members[0].lineno] = f.summary(noun, where)
        return folded, after, {hits[i].lineno for i in outliers}

    # --- choosing ------------------------------------------------------------------------
    def _protected(self, e: Entry) -> bool:
        return e.lineno in self.pinned or is_verbatim(e.raw)

    def _definitions(self, hits: list[Entry]) -> list[Entry]:
        """Hits that define the searched name (a symbol hunt's answer is its definition)."""

        query = query_of(self.command)
        if query is None or not re.fullmatch(r"[\w$.]+", query.pattern):
            return []
        name = re.escape(query.pattern)
        found = re.compile(f"{_DEF_BEFORE}{name}\\b|\\b{name}{_DEF_AFTER}", query.flags)
        return [e for e in hits if found.search(e.text)]

    def _choose(self, hits: list[Entry], files: list[list[Entry]], budget: int,
                outliers: set[int] = frozenset()) -> set[int]:
        keep = {e.lineno for e in hits if self._protected(e)}
        keep |= set(self.after)                       # a fold's sample stands for its count line
        keep |= set(sorted(outliers)[:budget // 2])   # the hits that break a template: the ones that differ
        keep |= {e.lineno for e in self._definitions(hits)[:int(budget * DEFINITION_SHARE)]}
        if self.intent:
            scores = relevance([e.raw for e in hits], self.intent)
            ranked = sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: (-scores[i], i))
            keep |= {hits[i].lineno for i in ranked[:int(budget * INTENT_SHARE)]}
        rest = [[e for e in g if e.kind == "hit" and e.lineno not in keep and e.lineno not in self.folded]
                for g in files]
        shares = fair_shares([len(r) for r in rest], max(0, budget - len(keep)))
        for r, share in zip(rest, shares):
            keep |= {e.lineno for e in r[:share]}
        return keep

    # --- emitting ------------------------------------------------------------------------
    def _emit(self, groups: list[list[Entry]], keep: set[int], hidden: list[list[Entry]]) -> None:
        """Groups in the tool's order; the one marker right after the last file's group."""
        hidden_ids = {id(g) for g in hidden}
        last = max((i for i, g in enumerate(groups) if g[0].kind in ("hit", "head")), default=-1)
        for i, g in enumerate(groups):
            if id(g) in hidden_ids:      # past the file budget: no heading; kept lines as printed
                for e in g:
                    if e.lineno in keep or self._protected(e):
                        self.emit(e.raw)
                    else:
                        self.drop(e.raw, "file beyond the file budget", e.lineno)
            elif g[0].kind in ("hit", "head"):
                self._group(g, keep)
            else:
                self.emit(g[0].raw)
            for e in g:                  # after the file's group: a count line would read as a path in it
                if e.lineno in self.after and e.lineno in keep:
                    self.emit(self.after[e.lineno])
            if i == last:
                if hidden:
                    n = sum(1 for g in hidden for e in g if e.kind == "hit")
                    self.emit(f"({len(hidden)} more files with {n} matching lines)")
                self.cut_here()

    def _group(self, g: list[Entry], keep: set[int]) -> None:
        head = g[0] if g[0].kind == "head" else None
        body = g[1:] if head else g
        hits = [e for e in body if e.kind == "hit"]
        path = g[0].path
        if all(e.lineno in self.folded for e in hits):     # every hit is told by a fold's count line
            for e in body:
                self.drop(e.raw, "same template as a shown hit (counted)", e.lineno, told=True)
            if head is not None:
                self.drop(head.raw, "the file's heading (its hits are counted)", head.lineno, told=True)
            return
        hits = [e for e in hits if e.lineno not in self.folded]
        shown = [e for e in hits if e.lineno in keep]
        if len(hits) == 1 and shown and head is None and len(body) == 1:
            self.emit(hits[0].raw)           # one hit: the tool's own line is as short as it gets
            return
        if path is not None:
            title = head.raw if head else path
            if len(shown) < len(hits):
                noun = "lines" if any(e.sep != ":" for e in hits) else "matches"
                if len(hits) == 1:
                    noun = noun[:-2] if noun == "matches" else noun[:-1]
                title += f" ({len(hits)} {noun}, {len(shown)} shown)"
            if head is not None or hits[0].no or len(shown) < len(hits):   # else unnumbered lines as printed
                self.emit(title)
        for k, e in enumerate(body):
            if e.kind == "head":
                self.drop(e.raw, "the file's heading, repeated", e.lineno, told=True)
            elif e.kind == "sep" and (k == 0 or k == len(body) - 1 or body[k + 1].kind != "hit"):
                continue      # a break between files: the next file's heading says it
            elif e.kind == "sep":
                before = any(x.kind == "hit" and x.lineno in keep for x in body[:k][-1:])
                after = any(x.kind == "hit" and x.lineno in keep for x in body[k + 1:k + 2])
                if before and after:
                    self.emit(e.raw)
                else:
                    self.drop(e.raw, "context separator of a cut block", e.lineno)
            elif e.lineno in self.folded:
                self.drop(e.raw, "same template as a shown hit (counted)", e.lineno, told=True)
            elif e.lineno not in keep:
                self.drop(e.raw, "match beyond the fair share of its file", e.lineno)
            elif head is not None or path is None or not e.no or self._protected(e):
                self.emit(e.raw)
            else:
                self.emit(f"{e.no}{e.sep}{e.text}")

    def _plain(self, exit_code: int | None) -> None:
        """Not a search listing this module knows: the TOML stages' line budget (their own
        marker included, so run_stream adds none)."""
        spec = replace(self.spec, streaming=None)
        out, removals, _ = run_stages(spec, "\n".join(self.lines), exit_code, self.intent)
        self.out = out.split("\n") if out else []
        self._run.removals = removals
