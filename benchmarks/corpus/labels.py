"""Must-keep labelling for the generated corpus: one function per kind of output.

Not responsible for running tools (make_corpus.py does) nor for compressing anything.
Invariant: labels come from the tools' own structured output (junit XML, ruff JSON, eslint
JSON) or from the plain rules written here, never from capsule's filters; every label is a
line of output.txt copied verbatim, listed once, in order of first appearance.
"""

from __future__ import annotations

import ast
import json
import re
import xml.etree.ElementTree as ET

PYTEST_SUMMARY = re.compile(r"^=*\s*(no tests ran|(\d+ (passed|failed|errors?|skipped|deselected|xfailed|xpassed"
                            r"|warnings?|subtests passed)(, )?)+).* in [\d.]+s")
PYTEST_LOC = re.compile(r"^\S+\.py:\d+: \w+")          # `tests/test_x.py:12: AssertionError` (long and line tb)
MYPY_ERROR = re.compile(r"^\S+:\d+(:\d+)?: error: ")
MYPY_SUMMARY = re.compile(r"^(Found \d+ errors? in \d+ files?|Success: no issues found)")
PY_EXC = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning|Iteration|NotFound\w*)(:|$)")
PY_FRAME = re.compile(r'^\s*File "([^"]+)", line \d+')
NODE_EXC = re.compile(r"^(Uncaught )?[A-Z]\w*(Error|Exception)\b.*")
NODE_USER_FRAME = re.compile(r"^\s+at .*\((?!node:)(?!.*node_modules)[^)]*:\d+:\d+\)$|^\s+at (?!node:)(?!.*node_modules)\S+:\d+:\d+$")


def lines_of(output: bytes) -> list[str]:
    return output.decode("utf-8", "surrogateescape").split("\n")


def pick(lines: list[str], keep) -> list[str]:
    """Distinct lines for which keep(line) is true, in order of first appearance."""
    seen: dict[str, None] = {}
    for line in lines:
        if line.strip() and keep(line):
            seen.setdefault(line, None)
    return list(seen)


def every_line(output: bytes) -> list[str]:
    """A bounded read (sed -n a,bp / head -n / tail -n / nl | sed, a small cat): all of it matters."""
    return pick(lines_of(output), lambda _l: True)


def source_structure(output: bytes) -> list[str]:
    """A whole-file cat of a big source file: its def/class lines, so the next read can be exact.

    Python source is read by Python's own parser, so a `def` inside a docstring example is not a definition;
    other languages (or Python that does not parse) fall back to the line pattern."""
    lines = lines_of(output)
    try:
        tree = ast.parse(output.decode("utf-8", "surrogateescape"))
    except (SyntaxError, ValueError):
        return pick(lines, lambda l: re.match(r"^\s*(async\s+def|def|class)\s+\w+", l) is not None)
    starts = {n.lineno for n in ast.walk(tree)
              if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    return pick([line for i, line in enumerate(lines, 1) if i in starts], lambda _l: True)


def pytest(output: bytes, junit: str | None, exit_code: int = 0) -> list[str]:
    """Summary line; for each failed/errored test (per junit XML): its FAILED/ERROR line, E-lines, crash location.

    Exit 2-4 (interrupted, internal error, usage error such as a conftest that fails to import) counts as failed.
    """
    failed: list[str] = []
    if junit:
        try:
            for tc in ET.fromstring(junit).iter("testcase"):
                if tc.find("failure") is not None or tc.find("error") is not None:
                    failed.append(tc.get("name", ""))
        except ET.ParseError:
            pass
    lines = lines_of(output)
    collect_error = any(l.startswith("ERROR ") or "error during collection" in l or "errors during collection" in l
                        for l in lines)
    bad = bool(failed) or collect_error or exit_code in (2, 3, 4)

    def keep(l: str) -> bool:
        if PYTEST_SUMMARY.match(l.strip()):
            return True
        if not bad:
            return False
        if re.match(r"^(FAILED|ERROR) \S", l) or "Interrupted: " in l:
            return True
        if l.startswith("E   ") and l[4:].strip():
            return True
        if PYTEST_LOC.match(l):      # a location in the project, not in the stdlib or a dependency
            return not l.startswith("/") or ("site-packages" not in l and "/lib/python3" not in l)
        return False
    return pick(lines, keep)


def ruff(output: bytes, diagnostics: list[dict], root: str) -> list[str]:
    """Per ruff JSON diagnostic: the line naming its location and the line with its code+message; the summary."""
    lines = lines_of(output)
    wanted_loc, wanted_head = set(), set()
    for d in diagnostics:
        rel = d["filename"][len(root) + 1:] if d["filename"].startswith(root + "/") else d["filename"]
        loc = f"{rel}:{d['location']['row']}:{d['location']['column']}"
        wanted_loc.add(loc)
        wanted_head.add((d.get("code") or "", d["message"]))

    def keep(l: str) -> bool:
        s = l.strip()
        if re.match(r"^(Found \d+ errors?|All checks passed!|\d+ files? would be reformatted)", s):
            return True
        m = re.search(r"(\S+:\d+:\d+)", s)
        if m and m.group(1).lstrip("-> ") in wanted_loc:
            return True
        return any(s.startswith(code) and msg in s for code, msg in wanted_head)
    return pick(lines, keep)


def ruff_statistics(output: bytes) -> list[str]:
    """`--statistics`: every rule row and the summary (the table is the result)."""
    return pick(lines_of(output), lambda l: re.match(r"^\s*\d+\s+\w+\d+", l) is not None
                or l.startswith("Found "))


def unittest(output: bytes) -> list[str]:
    """FAIL:/ERROR: headers, the assertion line, project frames, `Ran N tests` and the OK/FAILED verdict."""
    lines = lines_of(output)
    def project_frame(l: str) -> bool:
        m = PY_FRAME.match(l)
        return bool(m) and "site-packages" not in m.group(1) and "/lib/python3" not in m.group(1)
    return pick(lines, lambda l: re.match(r"^(FAIL|ERROR): \S", l) is not None or PY_EXC.match(l) is not None
                or re.match(r"^(Ran \d+ tests? in|OK\b|FAILED \()", l) is not None or project_frame(l))


def cargo(output: bytes) -> list[str]:
    """Diagnostics with their `-->` locations, failing tests, each panic with the message lines under it,
    and the verdict lines (`test result:`, `error: test failed`, `could not compile`, `Finished`)."""
    lines = lines_of(output)
    after_panic: set[int] = set()
    for i, l in enumerate(lines):
        if "panicked at" in l:
            j = i + 1
            while j < len(lines) and lines[j].strip() and not lines[j].startswith(("note:", "stack backtrace")):
                after_panic.add(j)
                j += 1
    rx = re.compile(r"^(error|warning)(\[\w+\])?: |^\s+--> \S+:\d+:\d+|^test .* \.\.\. FAILED$|panicked at|"
                    r"^test result: |^error: test failed|^error: could not compile|^\s+Finished ")
    seen: dict[str, None] = {}
    for i, l in enumerate(lines):
        if l.strip() and (i in after_panic or rx.search(l)):
            seen.setdefault(l, None)
    return list(seen)


def mypy(output: bytes) -> list[str]:
    return pick(lines_of(output), lambda l: MYPY_ERROR.match(l) is not None or MYPY_SUMMARY.match(l) is not None)


def python_traceback(output: bytes) -> list[str]:
    """The exception line that ends each traceback (any class name), other column-0 `...Error:` lines, and
    the frames in the project's own code (not stdlib/site-packages)."""
    lines = lines_of(output)
    ends, in_tb = set(), False
    for i, l in enumerate(lines):
        if l.startswith("Traceback (most recent call last):"):
            in_tb = True
        elif in_tb and l and not l[0].isspace():
            ends.add(i)
            in_tb = False
    enders = {lines[i] for i in ends}

    def keep(l: str) -> bool:
        if PY_EXC.match(l) or l in enders:
            return True
        m = PY_FRAME.match(l)
        return bool(m) and "site-packages" not in m.group(1) and "/lib/python3" not in m.group(1)
    return pick(lines, keep)


def node_trace(output: bytes) -> list[str]:
    """The `file:line` header, the error line(s) (also a CLI's `error: ...`), the first frame in the project's code."""
    lines = lines_of(output)
    out = pick(lines, lambda l: NODE_EXC.match(l) is not None or re.match(r"^/\S+:\d+$", l) is not None
               or l.startswith(("Node.js v", "error: ")))
    frames = [l for l in lines if NODE_USER_FRAME.match(l)]
    return out + [f for f in frames[:1] if f not in out]


def eslint(output: bytes, results: list[dict]) -> list[str]:
    """Stylish output: every finding row (line:col + message from the JSON run), the file headers, the summary."""
    lines = lines_of(output)
    files = {r["filePath"] for r in results if r["messages"]}
    # stylish drops a message's final period
    rows = {(m.get("line", 0), m.get("column", 0), m["message"].rstrip(".")) for r in results for m in r["messages"]}

    def keep(l: str) -> bool:
        s = l.strip()
        if s in files or s.startswith("✖ "):
            return True
        m = re.match(r"^(\d+):(\d+)\s+(error|warning)\s+(.*)$", s)
        return bool(m) and any(int(m.group(1)) == a and int(m.group(2)) == b and msg in s for a, b, msg in rows)
    return pick(lines, keep)


def regex(output: bytes, pattern: str) -> list[str]:
    rx = re.compile(pattern)
    return pick(lines_of(output), lambda l: rx.search(l) is not None)


def first_match(output: bytes, pattern: str) -> list[str]:
    got = regex(output, pattern)
    return got[:1]


def git_diff(output: bytes, max_changed: int = 200) -> list[str]:
    """File headers always; the +/- lines too when the diff is small enough to act on line by line."""
    lines = lines_of(output)
    changed = [l for l in lines if (l.startswith("+") or l.startswith("-")) and not l.startswith(("+++", "---"))]
    small = len(changed) <= max_changed
    return pick(lines, lambda l: l.startswith("diff --git ") or (small and l in changed and l[1:].strip() != ""))


def json_keys(output: bytes, keys: list[str]) -> list[str]:
    """Lines of a pretty-printed JSON document that hold one of these keys."""
    rx = re.compile(r'^\s*"(' + "|".join(re.escape(k) for k in keys) + r')": ')
    return pick(lines_of(output), lambda l: rx.match(l) is not None)


def parse_json(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return []
