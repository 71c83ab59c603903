"""Streaming filters for git's long outputs: log (one line per commit), diff/show/log -p
(commit headers here, each file's patch in git_diff.py), and blame (repeated attributions).

Not responsible for git status or remote progress (TOML filters in data/git.toml), nor for which
hunks of a large diff are shown (git_diff.py decides, on the budgets of the filter's `options`).
Invariant: every file header, every commit hash and each commit's `N files changed` total
survives; a line the keep rules pin is never dropped; every dropped line is a Removal.
"""

from __future__ import annotations

import re
from datetime import datetime

from capsule.observe.filters.git_diff import KEEP_META, FileDiff, Hunk, cost, note, start_hunk, waterfill
from capsule.observe.filters.streaming import StreamFilter
from capsule.observe.verbatim import is_verbatim

_COMMIT = re.compile(r"^(\W*\s*)?commit ([0-9a-f]{7,40})(.*)$")
_HEADER_FIELD = re.compile(r"^(\W*\s*)?(Author|Date|Merge|Commit|AuthorDate|CommitDate):\s+(.*)$")
_FILE_META = re.compile(r"^(index [0-9a-f,]+\.\.|similarity index|dissimilarity index|old mode|new mode|deleted file mode|new file mode|rename (from|to) |copy (from|to) |Binary files |GIT binary patch)")
_ONE_FILE_STAT = re.compile(r"^ 1 file changed, ")
_ONELINE = re.compile(r"^[*|/\\ ]*[0-9a-f]{7,40} ")        # --oneline, --graph, reflog entries
_UNIFIED = re.compile(r"^(?:-U|--unified=)(\d+)$")
_LOGS = ("log", "reflog", "whatchanged", "shortlog")
_BOUND = re.compile(r"^(-n\d*|-\d+|--max-count\b.*|--since\b.*|--after\b.*|--until\b.*|--before\b.*|-L.*|.*\.\..*)$")
_STAT_LINE = re.compile(r"^ \S.*? +\| +(?:\d+ ?[+-]*|Bin\b.*)$")
MAX_STAT_FILES = 25   # a commit's --stat beyond this many files: its `N files changed` line says the rest
FULL_HASHES = 3     # the newest commits of a plain log keep their full hash
ABBREV = 12


# git's default date (`Tue Dec 1 08:34:30 2026 +0000`), read without strptime when it is exactly that
# shape: strptime's first call costs ~3 ms of a cold `ctx run` (locale tables, its regexes). Any other
# shape, or values datetime refuses, go to strptime, which decides as before.
_GIT_DATE = re.compile(r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) "
                       r"(\d{1,2}) (\d\d):(\d\d):(\d\d) ([1-9]\d{3}) [+-](?:[01]\d|2[0-3])[0-5]\d")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _short_date(value: str) -> str:
    m = _GIT_DATE.fullmatch(value.strip())
    if m:
        try:
            day = datetime(int(m[6]), _MONTHS.index(m[1]) + 1, int(m[2]), int(m[3]), int(m[4]), int(m[5]))
        except ValueError:
            pass
        else:
            return day.strftime("%Y-%m-%d")
    try:
        return datetime.strptime(value.strip(), "%a %b %d %H:%M:%S %Y %z").strftime("%Y-%m-%d")
    except ValueError:
        return value.strip()


class _Slot(str):
    """A place in the output that one file's patch fills at the end (when the budget is known)."""

    index: int


class GitFilter(StreamFilter):
    """git log / show / diff, with or without patches."""

    ranged_markers = True

    def __init__(self) -> None:
        super().__init__()
        self.commit: dict | None = None     # pending commit header
        self.files: list[FileDiff] = []
        self.file: FileDiff | None = None   # the file whose patch lines are being read
        self.commits = 0
        self.stat_files = 0
        self.listed = 0                     # commits seen (headers or one-line entries)
        self.skipping = False               # past the newest max_commits of an unbounded log
        self._cap: int | None = -1

    def source_lines(self, lines: list[str]) -> set[int]:
        """A patch's hunk lines (from an `@@` header to the next `diff`/`commit` line)."""
        out, inside = set(), False
        for i, line in enumerate(lines):
            if line.startswith("@@"):
                inside = True
            elif line.startswith(("diff ", "commit ")):
                inside = False
            elif inside and line[:1] in ("", " ", "+", "-", "\\"):
                out.add(i)
        return out

    # --- commits ------------------------------------------------------------------------
    def _start_commit(self, m: re.Match) -> None:
        self._end_commit()
        self.commits += 1
        self.stat_files = 0
        self.commit = {"line": self.lineno, "head": f"{m.group(1) or ''}commit {m.group(2)}{m.group(3)}",
                       "hash": m.group(2),
                       "author": "", "date": "", "subject": None, "lines": [], "body": [], "told": set(),
                       "graph": m.group(1) or ""}

    def _end_commit(self) -> None:
        c = self.commit
        if c is None:
            return
        head = c["head"]
        if self.commits > FULL_HASHES and self._abbreviate():
            head = head.replace(c["hash"], c["hash"][:ABBREV], 1)
        parts = [head]
        if c["author"]:
            parts.append(c["author"])
        if c["date"]:
            parts.append(c["date"])
        if c["subject"] is not None:
            parts.append(c["subject"])
        self.emit(" | ".join(parts))
        for _, text in c["body"]:
            self.emit(text)
        for no, text in c["lines"]:
            # the fields and subject the header line carries (and blank lines) are told by it
            told = no in c["told"] or not text.strip()
            self.drop(text, "commit header field / message body", no, told=told)
        self.commit = None

    def _abbreviate(self) -> bool:
        """Plain and --stat logs abbreviate older hashes; patches and unknown commands keep them whole."""
        words = (getattr(self, "command", None) or "").split()
        if not words or "log" not in words:
            return False
        return not any(w in ("-p", "-u", "--patch", "--full-diff") or w.startswith("--format") or
                       w.startswith("--pretty") for w in words)

    def _max_commits(self) -> int | None:
        """How many commits a log shows: all that the command bounded itself to (-n N, -N,
        --max-count, --since/--until, a range A..B, -L), else the newest `max_commits` (a log
        is read from the top; older history is one expand away). Not a log (show, diff): all."""
        if self._cap == -1:
            words = (self.command or "").split()
            at = next((i for i, w in enumerate(words) if w in _LOGS), None)
            bounded = at is None or any(_BOUND.match(w) for w in words[at + 1:])
            self._cap = None if bounded or "max_commits" not in self.options else int(self.options["max_commits"])
        return self._cap

    def _context(self) -> int:
        """Unchanged lines shown around a change: the filter's `context`, or what the command
        asked git for (-U N, --unified=N; -W/--function-context: every line git printed)."""
        context = int(self.options["context"])
        for w in (self.command or "").split():
            m = _UNIFIED.match(w)
            if m:
                context = max(context, int(m.group(1)))
            elif w in ("-W", "--function-context"):
                context = 1 << 30
        return context

    def _listed(self) -> bool:
        """Count one more commit; True when it is beyond what the log shows (skipping starts)."""
        self.listed += 1
        cap = self._max_commits()
        if cap is not None and self.listed > cap:
            self.skipping = True
            self.file = None
            self.cut_here()
        return self.skipping

    # --- patches ------------------------------------------------------------------------
    def _patch_line(self, line: str) -> bool:
        """Take the line into the current file's patch when it belongs there."""
        f = self.file
        if f is None:
            return False
        h = f.hunks[-1] if f.hunks else None
        if h is not None:
            if line.startswith("\\"):
                h.add(self.lineno, line)
                return True
            if h.open() and (line[:1] in (" ", "+", "-") or line == ""):
                # unknown line counts (combined diffs): a ---/+++ line is a header, as git prints it
                if h.old_left >= 0 or not line.startswith(("--- ", "+++ ")):
                    h.add(self.lineno, line)
                    return True
        if line.startswith("@@"):
            f.hunks.append(start_hunk(self.lineno, line))
            return True
        if not f.hunks and (_FILE_META.match(line) or line.startswith(("--- ", "+++ "))):
            f.head.append((self.lineno, line))
            return True
        self.file = None
        return False

    def feed_line(self, line: str) -> None:
        if self.skipping:
            self.keep_if(line, False, f"older commits beyond the newest {self._cap} of an unbounded log")
            return
        if self._patch_line(line):
            return
        m = _COMMIT.match(line)
        if m and not line.startswith((" ", "+", "-")):
            self._end_commit()
            if self._listed():
                self.feed_line(line)
                return
            self._start_commit(m)
            return
        if self.commit is not None:
            f = _HEADER_FIELD.match(line)
            if f and self.commit["subject"] is None:
                key = f.group(2)
                if key == "Author":
                    self.commit["author"] = re.sub(r"\s*<[^>]*>", "", f.group(3))
                elif key in ("Date", "AuthorDate"):
                    self.commit["date"] = _short_date(f.group(3))
                elif key == "Merge":
                    self.commit["head"] += f" (merge {f.group(3)})"
                self.commit["lines"].append((self.lineno, line))
                self.commit["told"].add(self.lineno)
                return
            body = re.sub(r"^[\s|*/\\]*", "", line)
            if self.commit["subject"] is None:
                if not body:
                    self.commit["lines"].append((self.lineno, line))
                    return
                if line.startswith("    ") or line.strip().startswith("|") or self.commit["graph"]:
                    self.commit["subject"] = body
                    self.commit["lines"].append((self.lineno, line))
                    self.commit["told"].add(self.lineno)
                    return
            elif line.startswith("    ") or (not body and not line.startswith("diff ")):
                # a patch's message says why the change was made: whole (git show, log -p); a list
                # of commits (git log) is read by its subjects
                whole = body and self.options.get("message") == "whole"
                self.commit["body" if whole else "lines"].append((self.lineno, line))
                return
            self._end_commit()
        if line.startswith("diff "):
            self.file = FileDiff(self.commits, [(self.lineno, line)])
            slot = _Slot("")
            slot.index = len(self.files)
            self.files.append(self.file)
            self.out.append(slot)
            return
        if not line.strip():
            self.drop(line, "blank line")
            return
        if not self.commits and _ONELINE.match(line) and self._listed():
            self.feed_line(line)
            return
        if self.commits >= 2 and _ONE_FILE_STAT.match(line):
            self.drop(line, "per-commit shortstat of a one-file commit")
            return
        if _STAT_LINE.match(line):
            self.stat_files += 1
            if self.stat_files > MAX_STAT_FILES:
                self.drop(line, f"--stat files beyond {MAX_STAT_FILES} in one commit (its total line stays)")
                return
        self.emit(line)

    def flush(self) -> None:
        self._end_commit()
        if not self.files:
            return
        context = self._context()
        needs = [sum(self._hunk_cost(h, context) for h in f.hunks) for f in self.files]
        full = sum(needs) <= int(self.options["full_tokens"])
        picked: set[tuple[int, int]] = set()
        if full:
            shares = needs
        else:   # the intent's hunks first, then commits share the rest fairly, then each commit's files
            budget = int(self.options["budget_tokens"])
            picked = self._intent_picks(context, int(budget * float(self.options["intent_share"])))
            budget -= sum(self._hunk_cost(self.files[i].hunks[j], context) for i, j in picked)
            needs = [sum(self._hunk_cost(h, context) for j, h in enumerate(f.hunks) if (i, j) not in picked)
                     for i, f in enumerate(self.files)]
            commits = list(dict.fromkeys(f.commit for f in self.files))
            per_commit = waterfill(budget,
                                   [sum(n for f, n in zip(self.files, needs) if f.commit == c) for c in commits])
            shares = [0] * len(self.files)
            for c, part in zip(commits, per_commit):
                idx = [i for i, f in enumerate(self.files) if f.commit == c]
                for i, share in zip(idx, waterfill(part, [needs[i] for i in idx])):
                    shares[i] = share
        held, self.out = self.out, []
        for item in held:
            if isinstance(item, _Slot):
                i = item.index
                self._render(self.files[i], shares[i], context, {j for f, j in picked if f == i})
            else:
                self.out.append(item)
        if not full:
            self.cut_here()     # the one `[N more lines]` marker ends a diff cut to its budget

    @staticmethod
    def _hunk_cost(h: Hunk, context: int) -> int:
        return h.cost(context)

    def _intent_picks(self, context: int, share: int) -> set[tuple[int, int]]:
        """(file, hunk) indices of the hunks that speak most to the intent, within `share` tokens:
        when a diff must be cut, what the agent is after decides first."""
        if not self.intent or share <= 0:
            return set()
        from capsule.observe.content.reflex import relevance  # noqa: PLC0415 - bench_startup "ctx run cold, no engine"

        where = [(i, j) for i, f in enumerate(self.files) for j, _ in enumerate(f.hunks)]
        texts = [" ".join([h.head[1]] + [t for _, t in h.lines]) for f in self.files for h in f.hunks]
        scores = relevance(texts, self.intent)
        out: set[tuple[int, int]] = set()
        for k in sorted((k for k, sc in enumerate(scores) if sc > 0), key=lambda k: (-scores[k], k)):
            i, j = where[k]
            c = self._hunk_cost(self.files[i].hunks[j], context)
            if c <= share:
                out.add((i, j))
                share -= c
        return out

    def _render(self, f: FileDiff, share: int, context: int, picked: set[int]) -> None:
        """One file's patch within its share: the hunks the intent picked, then hunks in order, the
        last one that does not fit shown in part; conflict regions and pinned lines whatever the share."""
        plan: list[int] = []     # per hunk: lines of it to show (-1 every needed line)
        left, stopped = share, False
        for j, h in enumerate(f.hunks):
            if j in picked:
                plan.append(-1)
                continue
            c = self._hunk_cost(h, context)
            if not stopped and c <= left:
                plan.append(-1)
                left -= c
                continue
            if not stopped and left > cost(h.head[1]):
                left -= cost(h.head[1])
                n = 0
                for (_, t), near in zip(h.lines, h.near(context)):
                    if near:
                        if cost(t) > left:
                            break
                        left -= cost(t)
                    n += 1
                plan.append(n)
            else:
                plan.append(0)
            stopped = True
        whole = sum(1 for p in plan if p == -1)
        shown = any(p != 0 for p in plan)
        stated = whole == len(f.hunks)
        for no, text in f.head:
            if not stated and text.startswith(("--- ", "+++ ")):
                self.emit(note(*f.counts(), len(f.hunks), whole, any(p > 0 for p in plan)))
                stated = True
            if text.startswith("diff ") or text.startswith(KEEP_META):
                self.emit(text)
            elif text.startswith("index "):
                self.drop(text, "index line", no)
            elif text.startswith(("--- ", "+++ ")) and not shown and not self.known_verbatim.get(text, False):
                self.drop(text, "file name line of a file with no hunk shown", no, told=True)
            else:       # (a `+++ b/path` the policy holds stays: a big diff keeps its whole file map)
                self.emit(text)
        if not stated:
            self.emit(note(*f.counts(), len(f.hunks), whole, any(p > 0 for p in plan)))
        for h, p in zip(f.hunks, plan):
            self._render_hunk(h, p, context)

    def _render_hunk(self, h: Hunk, plan: int, context: int) -> None:
        forced = h.conflict()
        near = h.near(context)
        if plan == 0 and not any(forced) and not any(no in self.pinned for no, _ in [h.head, *h.lines]):
            last = h.lines[-1][0] if h.lines else h.head[0]     # a hunk's lines are consecutive
            self.drop_block(h.head[0], last, h.head[1], "hunk beyond the diff budget")
            return
        self.emit(h.head[1])
        # past the plan, the lines after the last conflict or pinned line go as one removal
        tail = len(h.lines)
        if plan != -1:
            tail = max(plan, 1 + max((i for i, (no, _) in enumerate(h.lines) if forced[i] or no in self.pinned),
                                     default=-1))
        for i, ((no, text), need) in enumerate(zip(h.lines[:tail], near)):
            if forced[i]:
                self.emit(text)          # a conflict region is what the reader has to resolve
            elif plan != -1 and i >= plan:
                self.drop(text, "rest of a hunk beyond the diff budget", no)
            elif need:
                self.emit(text)
            else:
                self.drop(text, "unchanged context line", no)
        if tail < len(h.lines):
            self.drop_block(h.lines[tail][0], h.lines[-1][0], h.lines[tail][1], "rest of a hunk beyond the diff budget")


class GitBlameFilter(StreamFilter):
    """A commit's attribution (author, date) is printed once, at its first line: later runs of its
    lines start with the commit alone, the rest of a run with the line number alone; every line's
    number and text stay exact. A line that reads like an error (code raising one) or that the
    keep rules pin keeps its whole attribution, so it is found as printed."""

    _BLAME = re.compile(r"^(\^?[0-9a-f]{7,40}(?: [^(\s]\S*)?) +(\(.*?\s(\d+)\)) ?(.*)$")

    def __init__(self) -> None:
        super().__init__()
        self.last = None
        self.seen: set[str] = set()

    def feed_line(self, line: str) -> None:
        m = self._BLAME.match(line)
        if not m:
            self.emit(line)
            self.last = None
            return
        commit, lineno, code = m.group(1), m.group(3), m.group(4)
        if is_verbatim(line) or self.lineno in self.pinned or commit not in self.seen:
            self.emit(line)
        elif commit == self.last:
            self.emit(f"{lineno:>4}) {code}")
        else:
            self.emit(f"{commit} {lineno:>4}) {code}")
        self.seen.add(commit)
        self.last = commit
