"""find / fd / rg --files, tree and ls: long listings shown grouped by directory.

Not responsible for search hits (search_stream.py) nor for the footer (the pipeline).
Invariants: find and tree keep every name (issue 25), byte-exact, its directory stated once
(`dir/: a.py b.py`; a one-entry directory keeps the path as printed), so the tool's own lines
follow from the view; only repeated parts fold: a family of numbered names is written as its runs
(`snap_0001.json…snap_0300.json`) and directories of one parent holding the same names are written
once (`pkgs/{a,b}/: names`); `ls -l` columns that are identical on
every entry are stated once above them, other columns stay as printed, and past ls's budget the
entries lose their columns, never their names (a bare-name ls is kept whole); errors, tree's
`N directories, M files` and ls's `total` stay as printed. Anything it cannot read (a name with
a space, an unknown line) gets the plain line budget of the TOML stages.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace

from capsule.observe import keep
from capsule.observe.content import name_runs
from capsule.observe.filters.stages import run_stages
from capsule.observe.filters.streaming import StreamFilter

_ERROR = re.compile(r"^(find|fd|fdfind|rg|tree|ls|du): ")
_TREE_ENTRY = re.compile(r"^((?:[│|]\s\s\s|\s{4})*)(?:├── |└── |\|-- |`-- )(.*)$")
_TREE_SUMMARY = re.compile(r"^\d+ director(?:y|ies)(?:, \d+ files?)?$")
_LONG = re.compile(r"^(?P<mode>[-dlcbpsD][rwxsStTl-]{9}[.+@]?)(?P<links>\s+\d+)(?P<owner>\s+\S+)(?P<group>\s+\S+)"
                   r"(?P<size>\s+\d+(?:,\s+\d+)?|\s+[\d.]+[KMGTP]?)(?P<date>\s+\w{3}\s+\d{1,2}\s+(?:\d{1,2}:\d{2}|\d{4}))"
                   r"(?P<name> .*)$")


class _Listing(StreamFilter):
    """Buffers the lines; on exit builds {directory: [names]} and renders it, or the plain budget."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def feed_line(self, line: str) -> None:
        self.lines.append(line)

    _held: frozenset[int] | None = None
    exit_code: int | None = None

    def on_exit(self, exit_code: int | None) -> None:
        self.exit_code = exit_code
        if not self.render(exit_code):
            self._plain(exit_code)

    def render(self, exit_code: int | None) -> bool:
        raise NotImplementedError

    def _plain(self, exit_code: int | None) -> None:
        spec = replace(self.spec, streaming=None)
        out, removals, _ = run_stages(spec, "\n".join(self.lines), exit_code, self.intent)
        self.out = out.split("\n") if out else []
        self._run.removals = removals

    def _protected(self, lineno: int, text: str) -> bool:
        """What the pipeline's policy check holds (observe/keep.py: a bare name in a tree drawing
        is quoted, not reported); such a line is shown as printed."""
        if self._held is None:
            self._held = keep.protected("\n".join(self.lines), self.exit_code)
        return lineno - 1 in self._held

    def long_enough(self, entries: int) -> bool:
        """Short listings stay as printed: regrouping a few lines saves less than it costs to read."""
        return entries >= int(self.options.get("min_entries", 20))

    def _groups(self, dirs: dict[str, list[tuple]]) -> None:
        """Emit `dir/: names` lines with every name (issue 25: the next step names a file): only
        the repeated parts fold — a family of numbered names is written as its runs
        (content/name_runs.py: `snap_0001.json…snap_0300.json`), and directories of one parent
        that hold the same names are written once (`pkgs/{a,b…d}/: names`). An entry is
        (lineno, name, is_dir[, line as printed if the policy holds it])."""

        written: dict[str, tuple[str, ...]] = {}
        for d, entries in dirs.items():
            shown = [e for e in entries if len(e) == 3]
            written[d] = tuple(name_runs.fold([name + ("/" if is_dir and not name.endswith("/") else "")
                                               for _, name, is_dir in shown]))
        alike: dict[tuple, list[str]] = {}
        for d, names in written.items():
            parent, slash, last = d.rstrip("/").rpartition("/")
            if d and names and slash and last not in (".", ".."):
                alike.setdefault((parent, names), []).append(d)
        done: set[str] = set()
        for d, entries in dirs.items():
            if d in done:
                continue
            held = [e for e in entries if len(e) > 3]
            shown = [e for e in entries if len(e) == 3]
            parent = d.rstrip("/").rpartition("/")[0]
            same = alike.get((parent, written[d]), [])
            if len(same) >= 2 and not any(len(e) > 3 for o in same for e in dirs[o]):
                done.update(same)
                lasts = name_runs.fold(sorted(o.rstrip("/").rpartition("/")[2] for o in same))
                self.emit(f"{parent}/{{{','.join(lasts)}}}/: " + " ".join(written[d]))
                continue
            if len(shown) == 1 or not d:
                for _, name, is_dir in shown:  # alone in its directory, or no directory: as printed
                    self.emit(d + name + ("/" if is_dir and d else ""))
            elif shown:
                self.emit(f"{d}: " + " ".join(written[d]))
            for e in held:
                self.emit(e[3])            # a line the policy holds: as printed


def lift_singletons(dirs: dict[str, list[tuple]]) -> dict[str, list[tuple]]:
    """A directory holding one listed path joins its parent's group as `sub/name`, up to where
    paths meet (`find node_modules -name package.json`: `node_modules/: a/package.json b/…`)."""
    changed = True
    while changed:
        changed = False
        out: dict[str, list[tuple]] = {}
        for d, entries in dirs.items():
            parent, slash, last = d.rstrip("/").rpartition("/")
            if len(entries) == 1 and slash and last not in (".", ".."):
                i, name, is_dir, *held = entries[0]
                out.setdefault(parent + slash, []).append((i, f"{last}/{name}", is_dir, *held))
                changed = True
            else:
                out.setdefault(d, []).extend(entries)
        dirs = {d: sorted(entries) for d, entries in out.items()}
    return dirs


class PathsFilter(_Listing):
    """find / fd / rg --files: one path per line."""

    def render(self, exit_code: int | None) -> bool:
        dirs: dict[str, list[tuple[int, str, bool]]] = {}
        errors: list[str] = []
        for i, line in enumerate(self.lines, 1):
            if _ERROR.match(line):
                errors.append(line)
                continue
            head, slash, name = line.rpartition("/")
            if not line.strip() or not name or any(c.isspace() for c in line):
                return False
            entry = (i, name, False, line) if self._protected(i, line) else (i, name, False)
            dirs.setdefault(head + slash, []).append(entry)
        dirs = lift_singletons(dirs)
        total = sum(len(v) for v in dirs.values())
        if len(dirs.get("", ())) * 2 > total or len(dirs) == total or not self.long_enough(len(self.lines)):
            return False          # mostly bare names, nothing shares a directory, or a short list: as printed
        self._groups(dirs)
        self.cut_here()
        for line in errors:
            self.emit(line)
        return True


class TreeFilter(_Listing):
    """tree: the drawing read back into directories."""

    def render(self, exit_code: int | None) -> bool:
        if not self.lines or not _TREE_SUMMARY.match(self.lines[-1]) or len(self.lines) < 3:
            return False
        root = self.lines[0]
        if any(c.isspace() for c in root) or self.lines[-2].strip():
            return False
        dirs: dict[str, list[tuple[int, str, bool]]] = {}
        stack: list[str] = []
        entries = []
        for i, line in enumerate(self.lines[1:-2], 2):
            m = _TREE_ENTRY.match(line)
            if not m or any(c.isspace() for c in m.group(2)) or not m.group(2) or self._protected(i, line):
                return False
            entries.append((i, len(m.group(1)) // 4, m.group(2)))
        for k, (i, depth, name) in enumerate(entries):
            if depth > len(stack):
                return False
            del stack[depth:]
            is_dir = k + 1 < len(entries) and entries[k + 1][1] > depth
            parent = "/".join([root.rstrip("/"), *stack]) + "/"
            dirs.setdefault(parent, []).append((i, name, is_dir))
            if is_dir:
                stack.append(name)
        if not dirs or not self.long_enough(len(entries)):
            return False
        self.emit(root)
        self._groups(dirs)
        self.cut_here()
        self.emit("")
        self.emit(self.lines[-1])
        return True


class LsFilter(_Listing):
    """ls: long listings (`-l`, `-lR`) with their constant columns stated once; other ls
    output gets the TOML stages (its names are already one short line each)."""

    def render(self, exit_code: int | None) -> bool:
        long = [_LONG.match(line) for line in self.lines]
        entries = [m for m in long if m]
        if entries and self.long_enough(len(entries)):
            return self._factored(long, entries)
        if not entries and len(self.lines) <= int(self.options.get("max_names", 1000)) \
                and all(not _ERROR.match(line) for line in self.lines):
            self.out = list(self.lines)   # bare names, one a line: nothing repeats to fold, every name kept
            return True
        return False

    def _factored(self, long, entries) -> bool:
        """Owner and group when every entry shares them; the modification time every entry shares,
        or that most share (`date_share` percent) with each other date left on its line."""
        fields = [f for f in ("owner", "group") if len({m.group(f).strip() for m in entries}) == 1]
        said = [f"{f} {entries[0].group(f).strip()}" for f in fields]
        date, n = Counter(m.group("date").strip() for m in entries).most_common(1)[0]
        common = None
        if n * 100 >= len(entries) * int(self.options.get("date_share", 60)):
            common = date
            said.append(f"modified {date}" + ("" if n == len(entries) else " unless shown"))
        if not said:
            return False
        said = ", ".join(said)
        budget = int(self.options.get("max_entries", 200))
        cut: list[str] = []
        done_header = False
        seen = 0
        for i, (line, m) in enumerate(zip(self.lines, long)):
            if m is None or self._protected(i + 1, line):
                self.emit(line)
                continue
            seen += 1
            if seen > budget:
                cut.append(m.group("name")[1:] + ("/" if m.group("mode").startswith("d") else ""))
                self.drop(line, "entry beyond the listing budget", i + 1)
                continue
            if not done_header:
                self.emit(f"(every entry below: {said})")
                done_header = True
            self.emit("".join(m.group(f) for f in ("mode", "links", "owner", "group", "size", "date", "name")
                              if f not in fields and not (f == "date" and m.group(f).strip() == common)))
        if cut:      # past the budget the columns go, never a name (issue 25: the next step names a file)
            self.emit(f"({len(cut)} more entries, names only: {' '.join(cut)})")
            self.cut_here()
        return True
