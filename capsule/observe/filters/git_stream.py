"""Streaming filters for git's long outputs: log (one line per commit), diff/show/log -p
(headers and changed lines with one line of context), and blame (repeated attributions).

Not responsible for git status or remote progress (TOML filters in data/git.toml).
Invariant: every changed line (+/-) up to the diff budget, every file header, every hunk
header, every commit hash and each commit's `N files changed` total survives; a diff cut for length carries the single
`[N more lines]` marker at the cut.
"""

from __future__ import annotations

import re
from datetime import datetime

from capsule.observe.filters.streaming import StreamFilter

_COMMIT = re.compile(r"^(\W*\s*)?commit ([0-9a-f]{7,40})(.*)$")
_HEADER_FIELD = re.compile(r"^(\W*\s*)?(Author|Date|Merge|Commit|AuthorDate|CommitDate):\s+(.*)$")
_FILE_META = re.compile(r"^(index [0-9a-f,]+\.\.|similarity index|dissimilarity index|old mode|new mode|deleted file mode|new file mode)")
_ONE_FILE_STAT = re.compile(r"^ 1 file changed, ")
_STAT_LINE = re.compile(r"^ \S.*? +\| +(?:\d+ ?[+-]*|Bin\b.*)$")
MAX_DIFF_LINES = 600
MAX_STAT_FILES = 25   # a commit's --stat beyond this many files: its `N files changed` line says the rest
FULL_HASHES = 3     # the newest commits of a plain log keep their full hash
ABBREV = 12
CONTEXT = 1


def _short_date(value: str) -> str:
    try:
        return datetime.strptime(value.strip(), "%a %b %d %H:%M:%S %Y %z").strftime("%Y-%m-%d")
    except ValueError:
        return value.strip()


class GitFilter(StreamFilter):
    """git log / show / diff, with or without patches."""

    def __init__(self) -> None:
        super().__init__()
        self.commit: dict | None = None     # pending commit header
        self.hunk: list[tuple[int, str]] = []
        self.in_diff = False
        self.emitted_diff = 0
        self.cut = False
        self.commits = 0
        self.stat_files = 0

    # --- commits ------------------------------------------------------------------------
    def _start_commit(self, m: re.Match) -> None:
        self._end_commit()
        self.commits += 1
        self.stat_files = 0
        self.commit = {"line": self.lineno, "head": f"{m.group(1) or ''}commit {m.group(2)}{m.group(3)}",
                       "hash": m.group(2),
                       "author": "", "date": "", "subject": None, "lines": [], "graph": m.group(1) or ""}

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
        for no, text in c["lines"]:
            self.drop(text, "commit header field / message body", no)
        self.commit = None

    def _abbreviate(self) -> bool:
        """Plain and --stat logs abbreviate older hashes; patches and unknown commands keep them whole."""
        words = (getattr(self, "command", None) or "").split()
        if not words or "log" not in words:
            return False
        return not any(w in ("-p", "-u", "--patch", "--full-diff") or w.startswith("--format") or
                       w.startswith("--pretty") for w in words)

    # --- hunks --------------------------------------------------------------------------
    def _flush_hunk(self) -> None:
        if not self.hunk:
            return
        changed = [i for i, (_, t) in enumerate(self.hunk) if t[:1] in "+-" or t.startswith("\\")]
        near = set()
        for i in changed:
            near.update(range(i - CONTEXT, i + CONTEXT + 1))
        for i, (no, text) in enumerate(self.hunk):
            self._diff_line(no, text, i in near or text[:1] in "+-")
        self.hunk = []

    def _diff_line(self, no: int, text: str, keep: bool) -> None:
        if self.cut and keep:
            if text.startswith(("diff ", "--- ", "+++ ", "@@")):
                self.emit(text)     # beyond the budget the diff keeps its structure: files, hunk ranges
                return
            self.drop(text, f"diff beyond {MAX_DIFF_LINES} lines", no)
            return
        if keep:
            self.emit(text)
            self.emitted_diff += 1
            if self.emitted_diff >= MAX_DIFF_LINES:
                self.cut = True
                self.cut_here()
        else:
            self.drop(text, "unchanged context line", no)

    def feed_line(self, line: str) -> None:
        m = _COMMIT.match(line)
        if m and not line.startswith((" ", "+", "-")):
            self._flush_hunk()
            self.in_diff = False
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
                return
            body = re.sub(r"^[\s|*/\\]*", "", line)
            if self.commit["subject"] is None:
                if not body:
                    self.commit["lines"].append((self.lineno, line))
                    return
                if line.startswith("    ") or line.strip().startswith("|") or self.commit["graph"]:
                    self.commit["subject"] = body
                    self.commit["lines"].append((self.lineno, line))
                    return
            elif line.startswith("    ") or (not body and not line.startswith("diff ")):
                self.commit["lines"].append((self.lineno, line))
                return
            self._end_commit()
        if line.startswith("diff ") or line.startswith("--- ") or line.startswith("+++ "):
            self._flush_hunk()
            self.in_diff = True
            self._diff_line(self.lineno, line, True)
            return
        if self.in_diff and _FILE_META.match(line):
            self._flush_hunk()
            self.keep_if(line, line.startswith(("deleted file", "new file", "similarity", "rename")), "index line")
            return
        if self.in_diff and line.startswith("@@"):
            self._flush_hunk()
            self._diff_line(self.lineno, line, True)
            return
        if self.in_diff and line[:1] in (" ", "+", "-", "\\") or (self.in_diff and line == ""):
            if line == "":
                self.hunk.append((self.lineno, " "))
                self.hunk[-1] = (self.lineno, line)
            else:
                self.hunk.append((self.lineno, line))
            return
        self._flush_hunk()
        self.in_diff = line.startswith(("rename ", "copy ", "Binary files"))
        if not line.strip():
            self.drop(line, "blank line")
            return
        if self.commits >= 2 and _ONE_FILE_STAT.match(line):
            self.drop(line, "per-commit shortstat of a one-file commit")
            return
        if not self.in_diff and _STAT_LINE.match(line):
            self.stat_files += 1
            if self.stat_files > MAX_STAT_FILES:
                self.drop(line, f"--stat files beyond {MAX_STAT_FILES} in one commit (its total line stays)")
                return
        if self.cut:
            self.keep_if(line, False, f"diff beyond {MAX_DIFF_LINES} lines")
        else:
            self.emit(line)

    def flush(self) -> None:
        self._flush_hunk()
        self._end_commit()


class GitBlameFilter(StreamFilter):
    """Consecutive lines from the same commit: the attribution is printed once."""

    _BLAME = re.compile(r"^(\^?[0-9a-f]{7,40}) (\(.*?\s(\d+)\)) ?(.*)$")

    def __init__(self) -> None:
        super().__init__()
        self.last = None

    def feed_line(self, line: str) -> None:
        m = self._BLAME.match(line)
        if not m:
            self.emit(line)
            self.last = None
            return
        commit, lineno, code = m.group(1), m.group(3), m.group(4)
        if commit == self.last:
            self.emit(f"{lineno:>4}) {code}")
        else:
            self.emit(line)
        self.last = commit
