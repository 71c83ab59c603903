"""Which lines of a real tool output the agent used next, and whether an emission kept them
(benchmarks/bench_traffic.py, issue 29).

Not responsible for reading trajectories or running the engine. The measure, said once:
  - the agent's next steps are its reasoning, text and tool-call inputs after the output, up to and
    including its next two tool calls or the end of its turn (the data file's `next`);
  - a line of the output is *used* when the next steps quote it (its whitespace-collapsed text, at
    least MIN_CHARS long, appears in theirs: an Edit's old_string, a pasted error; a diff line without
    its `+`/`-`), or name at least
    TOKENS_FOR_USE of its distinctive tokens: identifier-like words (a digit, `_`, `.`, `/`, `:` or
    `-` inside, or camelCase; at least 4 characters) found on at most RARE_LINES lines of this output
    and not in the task statement (a word the task already gave is no sign the agent read this line);
  - a used line is *kept* when the emission shows it whole on a line of its own (whitespace
    collapsed; a grouped search view counts as its `path:N:text` lines, a numbered view's `N: text`
    as its text).
Invariant: pure functions of strings; the same inputs give the same answer.
"""

from __future__ import annotations

import re

MIN_CHARS = 12        # shorter lines (`}`, `return`, `ok`) say nothing about what was read
TOKENS_FOR_USE = 2    # one shared word is chance; two are a reference
RARE_LINES = 2        # a token on more lines than this is the output's furniture, not a pointer
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
TOKEN = re.compile(r"[A-Za-z0-9_]+(?:[./:-][A-Za-z0-9_]+)*")
CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")


def norm(line: str) -> str:
    return " ".join(ANSI.sub("", line).replace("\r", "").split())


def distinctive(token: str) -> bool:
    if len(token) < 4:
        return False
    return bool(re.search(r"[0-9_./:-]", token) and re.search(r"[A-Za-z]", token)) or bool(CAMEL.search(token))


def tokens(text: str) -> set[str]:
    return {t for t in TOKEN.findall(text) if distinctive(t)}


def used_lines(output: str, later: list[str], intent: str | None = None) -> list[str]:
    """The output's lines the later steps used (see the module header), in output order, each once."""
    lines = output.split("\n")
    per_line = [tokens(line) for line in lines]
    seen_on: dict[str, int] = {}
    for toks in per_line:
        for t in toks:
            seen_on[t] = seen_on.get(t, 0) + 1
    told = tokens(intent or "")
    later_text = norm("\n".join(later))
    later_tokens = tokens("\n".join(later))
    used, done = [], set()
    for line, toks in zip(lines, per_line):
        flat = norm(line)
        if len(flat) < MIN_CHARS or flat in done:
            continue
        rare = {t for t in toks if seen_on[t] <= RARE_LINES and t not in told}
        if _quoted(flat, later_text) or len(rare & later_tokens) >= TOKENS_FOR_USE:
            used.append(line)
            done.add(flat)
    return used


def _quoted(flat: str, later_text: str) -> bool:
    """The line, or a diff line's text without its `+`/`-` (an agent pastes the code, not the
    diff's marker), appears in the later steps."""
    if flat in later_text:
        return True
    if flat[:1] in "+-" and not flat.startswith(("+++", "---")):
        body = norm(flat[1:])
        return len(body) >= MIN_CHARS and body in later_text
    return False


NUMBERED = re.compile(r"^\s*\d+(?::|→|\t)\s?(.*)$")    # an outline's or a numbered view's `N: text`


def emitted_lines(emitted: str) -> set[str]:
    shown = {norm(line) for line in emitted.split("\n")}
    shown |= {norm(m.group(1)) for m in map(NUMBERED.match, emitted.split("\n")) if m}
    try:    # a grouped search view states a file's path once above its `N:text` hits
        from capsule.observe.filters.search_stream import ungroup  # noqa: PLC0415 - the capsule under test's own
    except ImportError:
        return shown
    return shown | {norm(line) for line in ungroup(emitted)}


def kept(used: list[str], emitted: str) -> list[bool]:
    shown = emitted_lines(emitted)
    return [norm(line) in shown for line in used]


def head_tail(text: str, head: int, tail: int) -> str:
    """The blind cut the salience model replaces: first and last lines, one count line between."""
    lines = text.split("\n")
    if len(lines) <= head + tail:
        return text
    return "\n".join(lines[:head] + [f"[{len(lines) - head - tail} more lines]"] + lines[-tail:])
