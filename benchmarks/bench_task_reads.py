"""Reads cut by the task (issue 29.3) over generated agent trajectories: one command, one table.

    .venv/bin/python benchmarks/bench_task_reads.py [--modules N]

Where the trajectories come from (said plainly): the public SWE-agent / mini-swe-agent material in
benchmarks/ is kept for outside measurement, so this one generates its own on this machine, from
real code and real failures: the installed Python standard library's modules, copied into a
temporary workspace. Two kinds of step, each "a failure or a goal, then a read of the file":
  - traceback steps: a real call that fails deep inside a stdlib module (run for real, its
    stderr observed by the engine as the agent's failing command), then a plain ctx_read of the
    innermost frame's file. The lines the agent uses next: that frame's function (or +-12 lines).
  - goal steps: a function chosen deterministically in each module; the intent is its docstring's
    first sentence, without the function's name (what a task statement says), or with the name
    (an agent that already knows where to look). The lines used next: that function.
Figures per condition: tokens sent, tokens saved against the whole file, the share of later-used
lines the view shows whole, and bounces (steps whose used lines are not all shown: the agent asks
`ctx expand --lines`, counted with the tokens that expansion costs).
  full     : the whole file (no capsule)
  before   : main before this change: an auto read over the size gate is the outline, whatever the task
  after    : the engine's read entry, with the session's failures and (for goal steps) the intent
  after/no-intent : the same goal steps without the intent (the session's cues only: none here)
  after/prompt : no intent; the user's last prompt names the function (`name`), as the door hands it in
Search steps (searches with context, issue 29.3 item 1): for each goal function, the agent searches
the copied modules for the identifier its body uses most that is common across them (`rg -n -C 4`,
run for real, past the bounded view's 1,000 lines). The lines used next: the output lines of the
goal function's file within its body. Conditions: full (the tool's output), head/tail (a blind cut:
first and last 40 lines), before (no cue: the search filter's plain cut), after/intent,
after/prompt (the name in the user's last prompt), after/intent+name.
ctx_search steps (the read door's search, issue 29.3): the same identifier, asked of ctx_search (k 10,
its 800-token budget). The lines used next: the goal function's lines holding it, each a `path:line`
row. Conditions: full (`rg -n -w`, every hit), before (the search by the query alone: the packer as
main runs it, whose no-cue path this change leaves as it was), after/intent, after/prompt,
after/intent+name. A bounce costs the missing lines' tokens (a `ctx_read lines:A-B`).
Timings are not measured (token and line figures only); same input -> same figures.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

STDLIB = Path(sysconfig.get_paths()["stdlib"])
# Real calls that fail inside a stdlib module (the traceback the agent's command prints).
FAILURES = [
    "import json; json.loads('{\"a\": [1, 2,, 3]}')",
    "import argparse; argparse.ArgumentParser().add_argument('--x', nargs=0)",
    "import textwrap; textwrap.wrap('some words here', width=0)",
    "import shlex; shlex.split('echo \"unterminated')",
    "import ipaddress; ipaddress.ip_network('10.0.0.1/33')",
    "import fractions; fractions.Fraction('1/x')",
    "import statistics; statistics.mean([])",
    "import tomllib; tomllib.loads('a = ')",
    "import configparser; configparser.ConfigParser().read_string('[s]\\nk=1\\nk=2\\n')",
    "import zipfile, io; zipfile.ZipFile(io.BytesIO(b'not a zip'))",
    "import tarfile, io; tarfile.open(fileobj=io.BytesIO(b'not a tar' * 100))",
    "import plistlib; plistlib.loads(b'not a plist')",
    "import datetime; datetime.datetime.strptime('2024-13-01', '%Y-%m-%d')",
    "import email.utils; email.utils.parsedate_to_datetime('not a date')",
    "import string; string.Template('$who likes $').substitute(who='tim')",
    "import calendar; calendar.monthrange(2024, 13)",
    "import gettext; gettext.c2py('n ? 1 :')",
    "import ast; ast.literal_eval('__import__(\"os\")')",
    "import decimal, pydoc; pydoc.render_doc(42, renderer=None)",
    "import urllib.parse; urllib.parse.urlsplit('http://[::1')",
]
GOAL_MODULES = ["argparse.py", "configparser.py", "textwrap.py", "shlex.py", "ipaddress.py", "fractions.py",
                "statistics.py", "tarfile.py", "zipfile/__init__.py", "plistlib.py", "calendar.py", "gettext.py",
                "email/utils.py", "string.py", "ast.py", "pydoc.py", "difflib.py", "inspect.py", "pathlib.py",
                "typing.py", "dataclasses.py", "logging/__init__.py", "subprocess.py", "tempfile.py", "shutil.py",
                "smtplib.py", "imaplib.py", "ftplib.py", "http/client.py", "urllib/parse.py", "csv.py", "pickle.py",
                "json/decoder.py", "json/encoder.py", "heapq.py", "bisect.py", "random.py", "datetime.py",
                "_strptime.py", "locale.py"]
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def functions(source: str) -> list[tuple[str, int, int, str]]:
    """(name, first, last, docstring's first sentence) of each def with a docstring (ast)."""
    import ast

    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node)
            if doc and len(doc.split()) >= 5 and node.end_lineno - node.lineno >= 6:
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                out.append((node.name, first, node.end_lineno, doc.split(".")[0].split("\n\n")[0]))
    return sorted(out, key=lambda f: f[1])


def enclosing(source: str, line: int) -> tuple[int, int]:
    """The innermost def around `line`, else +-12 lines."""
    import ast

    best = None
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno <= line <= node.end_lineno:
            if best is None or node.lineno > best[0]:
                best = (node.lineno, node.end_lineno)
    return best or (max(1, line - 12), line + 12)


class Tally:
    def __init__(self):
        self.steps = self.sent = self.full = self.used = self.kept = self.bounces = self.bounce_tokens = 0

    def add(self, view: str, source: str, used: tuple[int, int], count) -> None:
        lines = source.split("\n")
        shown = set()
        for row in view.split("\n"):
            head, sep, rest = row.partition(": ")
            if sep and head.isdigit() and int(head) <= len(lines) and lines[int(head) - 1] == rest:
                shown.add(int(head))
        if view == source:
            shown = set(range(1, len(lines) + 1))
        want = set(range(used[0], min(used[1], len(lines)) + 1))
        self.steps += 1
        self.sent += count(view)
        self.full += count(source)
        self.used += len(want)
        self.kept += len(want & shown)
        missing = sorted(want - shown)
        if missing:
            self.bounces += 1
            self.bounce_tokens += count("\n".join(lines[missing[0] - 1:missing[-1]]))

    def row(self, name: str) -> str:
        saved = 1 - self.sent / self.full if self.full else 0.0
        with_bounce = 1 - (self.sent + self.bounce_tokens) / self.full if self.full else 0.0
        return (f"| {name:<28} | {self.steps:>5} | {self.sent:>8} | {saved:>6.1%} | {self.kept / max(1, self.used):>7.1%} "
                f"| {self.bounces:>7} | {with_bounce:>12.1%} |")


def search_steps(eng, ws: Path, goals: list, count) -> dict:
    """Searches with context over the copied modules, one per goal function (see the module doc)."""
    from capsule.ground.types import Observation
    from capsule.observe.filters.search_stream import ungroup

    keys = ("search:full", "search:head/tail", "search:before", "search:after/intent", "search:after/prompt",
            "search:after/intent+name")
    tallies = {k: SearchTally() for k in keys}
    texts = {rel: source for rel, _, _, _, _, source in goals}
    for j, (rel, name, first, last, goal, source) in enumerate(goals):
        word = _common_word(source, first, last, name, texts)
        if word is None:
            continue
        args = ["rg", "-n", "-C", "4", "--sort", "path", "-w", word, "."]
        raw = subprocess.run(args, cwd=ws, capture_output=True, text=True).stdout
        if raw.count("\n") <= 1000:
            continue
        cmd = " ".join(args)
        used = {ln for ln in raw.split("\n") if _in_body(ln, rel, first, last)}
        if not used:
            continue
        lines = raw.rstrip("\n").split("\n")
        tallies["search:full"].add(raw, raw, used, count)
        tallies["search:head/tail"].add("\n".join(lines[:40] + [f"[{len(lines) - 80} more lines]"] + lines[-40:]),
                                        raw, used, count)
        for key, intent, prompt in (("search:before", None, None), ("search:after/intent", goal, None),
                                    ("search:after/prompt", None, f"something is off in `{name}`, can you look?"),
                                    ("search:after/intent+name", f"{goal} ({name})", None)):
            view = eng.observe(Observation(raw.encode(), command=cmd, scope=f"s{j}-{key}", intent=intent,
                                           prompt=prompt)).data.decode()
            tallies[key].add(view, raw, used, count, shown=set(ungroup(view)))
    return tallies


def ctx_search_steps(eng, ws: Path, goals: list, count) -> dict:
    """The read door's ctx_search over the copied modules, one per goal function (see the module doc)."""
    from capsule.ground.types import Observation, Request
    from capsule.retrieve import packer

    keys = ("ctx_search:full (rg -n)", "ctx_search:before", "ctx_search:after/intent", "ctx_search:after/prompt",
            "ctx_search:after/intent+name")
    tallies = {k: RowTally() for k in keys}
    texts = {rel: source for rel, _, _, _, _, source in goals}
    index = eng.reads.index(ws)
    for j, (rel, name, first, last, goal, source) in enumerate(goals):
        word = _common_word(source, first, last, name, texts)
        if word is None:
            continue
        lines = source.split("\n")
        used = {f"{rel}:{n}" for n in range(first, last + 1) if re.search(rf"\b{word}\b", lines[n - 1])}
        if not used:
            continue
        raw = subprocess.run(["rg", "-n", "--sort", "path", "-w", word, "."], cwd=ws, capture_output=True,
                             text=True).stdout.replace("./", "")
        tallies["ctx_search:full (rg -n)"].add(raw, raw, used, count, lines)
        plain = packer.pack(ws, index.search(word, 10), word, budget=800)     # main's ctx_search, unchanged
        tallies["ctx_search:before"].add(plain, raw, used, count, lines)
        for key, intent, prompt in (("ctx_search:after/intent", goal, None),
                                    ("ctx_search:after/prompt", "", f"something is off in `{name}`, can you look?"),
                                    ("ctx_search:after/intent+name", f"{goal} ({name})", None)):
            view = eng.request(Observation(request=Request("search", ws, word, scope=f"q{j}-{key}", intent=intent,
                                                           prompt=prompt))).data.decode()
            tallies[key].add(view, raw, used, count, lines)
    return tallies


def _common_word(source: str, first: int, last: int, name: str, texts: dict) -> str | None:
    """The identifier a goal's body uses first that is common across the copied modules."""
    body = "\n".join(source.split("\n")[first - 1:last])
    common = [w for w in dict.fromkeys(re.findall(r"\b[A-Za-z_]\w{3,}\b", body))
              if w != name and sum(t.count(w) for t in texts.values()) >= 150 and w not in ("self", "return")]
    return common[0] if common else None


def _rows_shown(text: str) -> set:
    """`path:line` of each `path:line:…` row an answer shows."""
    return {f"{m.group(1)}:{m.group(2)}" for m in re.finditer(r"^([^:\n]+):(\d+):", text, re.M)}


def _in_body(line: str, rel: str, first: int, last: int) -> bool:
    m = re.match(r"^\./(.+?)[-:](\d+)[-:]", line)
    return bool(m) and m.group(1) == rel and first <= int(m.group(2)) <= last


class SearchTally(Tally):
    def add(self, view: str, raw: str, used: set, count, shown: set | None = None) -> None:
        shown = set(view.split("\n")) if shown is None else shown
        self.steps += 1
        self.sent += count(view)
        self.full += count(raw)
        self.used += len(used)
        self.kept += len(used & shown)
        missing = [ln for ln in raw.split("\n") if ln in used and ln not in shown]
        if missing:
            self.bounces += 1
            self.bounce_tokens += count("\n".join(missing))


class RowTally(Tally):
    """ctx_search answers: a used line is kept when its `path:line` row is shown; a bounce reads the
    missing lines (first to last) of the goal's file."""

    def add(self, view: str, raw: str, used: set, count, lines: list[str]) -> None:
        shown = _rows_shown(view)
        self.steps += 1
        self.sent += count(view)
        self.full += count(raw)
        self.used += len(used)
        self.kept += len(used & shown)
        missing = sorted(int(u.rsplit(":", 1)[1]) for u in used - shown)
        if missing:
            self.bounces += 1
            self.bounce_tokens += count("\n".join(lines[missing[0] - 1:missing[-1]]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--modules", type=int, default=len(GOAL_MODULES))
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-task-reads-"))
    import os

    os.environ["JACKIN_CTX_STATE_DIR"] = str(tmp / "state")
    (tmp / "state").mkdir()
    ws = tmp / "ws"
    ws.mkdir()
    from capsule.engine import Engine
    from capsule.ground.tokens import count
    from capsule.ground.types import Observation, Request
    from capsule.retrieve.reader import Reader

    eng = Engine(mode="standard", scope="bench")
    before = Reader(ws)
    tallies = {k: Tally() for k in ("tb:full", "tb:before", "tb:after", "goal:full", "goal:before",
                                    "goal:after/no-intent", "goal:after/intent", "goal:after/prompt",
                                    "goal:after/intent+name")}
    goals = []
    # Traceback steps: the real failure observed, then a plain read of its innermost stdlib frame's file.
    for i, code in enumerate(FAILURES):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        frames = [(p, int(n)) for p, n, _ in _FRAME.findall(proc.stderr) if p.startswith(str(STDLIB))]
        if proc.returncode == 0 or not frames:
            continue
        path, line = frames[-1]
        rel = str(Path(path).relative_to(STDLIB))
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, ws / rel)
        source = (ws / rel).read_text()
        scope = f"tb{i}"
        eng.observe(Observation(proc.stderr.encode(), command=f"python3 -c {code!r}", stream="stderr",
                                exit_code=proc.returncode, scope=scope))
        used = enclosing(source, line)
        after = eng.request(Observation(request=Request("read", ws, rel, scope=scope, fresh=True))).data.decode()
        tallies["tb:full"].add(source, source, used, count)
        tallies["tb:before"].add(before.read(rel), source, used, count)
        tallies["tb:after"].add(after, source, used, count)
    # Goal steps: one function per module, picked by position (the middle third), intent its docstring.
    for j, rel in enumerate(GOAL_MODULES[:args.modules]):
        src_path = STDLIB / rel
        if not src_path.exists():
            continue
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src_path, ws / rel)
        source = (ws / rel).read_text()
        funcs = functions(source)
        if len(source.split("\n")) < 250 or not funcs:
            continue
        name, first, last, doc = funcs[len(funcs) // 2]
        goal = re.sub(rf"\b{re.escape(name)}\b", "it", doc)
        used = (first, last)
        plain = before.read(rel)
        tallies["goal:full"].add(source, source, used, count)
        tallies["goal:before"].add(plain, source, used, count)
        for key, intent, prompt in (("goal:after/no-intent", "", None), ("goal:after/intent", goal, None),
                                    ("goal:after/prompt", "", f"something is off in `{name}`, can you look?"),
                                    ("goal:after/intent+name", f"{goal} ({name})", None)):
            view = eng.request(Observation(request=Request("read", ws, rel, scope=f"g{j}", intent=intent,
                                                           fresh=True, prompt=prompt))).data.decode()
            tallies[key].add(view, source, used, count)
        goals.append((rel, name, first, last, goal, source))
    tallies.update(search_steps(eng, ws, goals, count))
    tallies.update(ctx_search_steps(eng, ws, goals, count))
    eng.close()
    print("| condition                    | steps | tokens   | saved  | used kept | bounces | saved w/ bounce |")
    print("|------------------------------|-------|----------|--------|-----------|---------|-----------------|")
    for name, t in tallies.items():
        print(t.row(name))
    print(json.dumps({k: vars(v) for k, v in tallies.items()}))
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
