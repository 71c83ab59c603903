"""The shell-door lexer: reads a command line the way the shell would, without running it.

Responsible for quote-aware splitting into segments (`&&`, `||`, `;`, newlines) and pipe
stages, for spotting what cannot be attested (backticks, `$( )`, `<( )`, redirects into
files, heredocs), and for peeling transparent prefixes (`sudo`, `env`, `VAR=x`,
`docker exec C`, `poetry run` ...) off a stage so the classifier sees the real tool.
Not responsible for choosing a filter (classify.py and observe/rules do).
Invariant: it never rewrites the command; prefixes are reported, kept for execution.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_OPERATORS = ("&&", "||", ";;", ";", "|&", "|", "&", "\n")
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_DURATION = re.compile(r"^\d+(\.\d+)?[smhd]?$")
# Redirects that keep output on the terminal or discard it are attestable.


class LexError(ValueError):
    """An unterminated quote or escape: the line cannot be read safely."""


@dataclass
class Stage:
    """One command of a pipeline: its words, prefixes peeled off, and what was seen."""

    words: list[str]                       # words as the shell would pass them (quotes removed)
    prefix: list[str] = field(default_factory=list)  # transparent prefix words, kept for execution
    redirects: list[str] = field(default_factory=list)

    @property
    def tool(self) -> str:
        return self.words[0].rsplit("/", 1)[-1] if self.words else ""


@dataclass
class Segment:
    """A list of pipe stages joined by `|`; the last stage's output reaches the agent."""

    stages: list[Stage]
    op: str = ""            # operator that ended the segment ("&&", "||", ";", "&", "")

    @property
    def visible(self) -> Stage:
        return self.stages[-1]


@dataclass
class Lexed:
    segments: list[Segment]
    unattestable: list[str] = field(default_factory=list)   # reasons, empty if attestable

    @property
    def attestable(self) -> bool:
        return not self.unattestable


def _tokenize(line: str) -> tuple[list[tuple[str, bool]], list[str]]:
    """Words and operators: (text, is_operator). Also returns unattestable reasons."""
    tokens: list[tuple[str, bool]] = []
    reasons: list[str] = []
    buf: list[str] = []
    in_word = False
    i, n = 0, len(line)

    def flush() -> None:
        nonlocal in_word
        if in_word:
            tokens.append(("".join(buf), False))
            buf.clear()
            in_word = False

    while i < n:
        c = line[i]
        if c == "'":
            j = line.find("'", i + 1)
            if j < 0:
                raise LexError("unterminated single quote")
            buf.append(line[i + 1:j])
            in_word = True
            i = j + 1
            continue
        if c == '"':
            i += 1
            in_word = True
            while True:
                if i >= n:
                    raise LexError("unterminated double quote")
                d = line[i]
                if d == '"':
                    i += 1
                    break
                if d == "\\" and i + 1 < n and line[i + 1] in '"\\$`\n':
                    buf.append(line[i + 1])
                    i += 2
                    continue
                if d == "`":
                    reasons.append("backtick command substitution")
                elif d == "$" and line.startswith("$(", i):
                    reasons.append("$( ) command substitution")
                buf.append(d)
                i += 1
            continue
        if c == "\\":
            if i + 1 >= n:
                raise LexError("trailing backslash")
            if line[i + 1] != "\n":
                buf.append(line[i + 1])
                in_word = True
            i += 2
            continue
        if c == "#" and not in_word:
            break  # comment to end of line
        if c in " \t":
            flush()
            i += 1
            continue
        if c == "`":
            reasons.append("backtick command substitution")
        if c == "$" and line.startswith("$(", i):
            reasons.append("$( ) command substitution")
        if c in "<>" and line.startswith("(", i + 1):
            reasons.append("process substitution")
        if c == "<" and line.startswith("<<", i):
            reasons.append("heredoc")
        if c in "<>" or (c == "&" and line.startswith("&>", i)):
            # a redirect: [n]> target, >> target, &> target, n>&m, < file
            digits = "".join(buf) if in_word and "".join(buf).isdigit() else ""
            if digits:
                buf.clear()
                in_word = False
            flush()
            j = i + 1
            while j < n and line[j] in "<>&":
                j += 1
            op = digits + line[i:j]
            k = j
            while k < n and line[k] in " \t":
                k += 1
            m = k
            while m < n and line[m] not in " \t;&|<>()\n":
                m += 1
            tokens.append((f"\x00R{op} {line[k:m]}", False))
            i = m
            continue
        matched = next((op for op in _OPERATORS if line.startswith(op, i)), None)
        if matched:
            flush()
            tokens.append((matched, True))
            i += len(matched)
            continue
        if c == "(" and not in_word:
            reasons.append("subshell")
        buf.append(c)
        in_word = True
        i += 1
    flush()
    return tokens, reasons


def lex(line: str) -> Lexed:
    """Split a command line into segments and stages. Raises LexError on bad quoting."""
    tokens, reasons = _tokenize(line)
    segments: list[Segment] = []
    stages: list[Stage] = []
    words: list[str] = []
    redirects: list[str] = []

    def end_stage() -> None:
        nonlocal words, redirects
        if words or redirects:
            stages.append(_peel(words, redirects))
        words, redirects = [], []

    for text, is_op in tokens:
        if not is_op:
            if text.startswith("\x00R"):
                redirect = text[2:]
                redirects.append(redirect)
                why = _redirect_problem(redirect)
                if why:
                    reasons.append(why)
                continue
            words.append(text)
            continue
        if text in ("|", "|&"):
            end_stage()
            continue
        end_stage()
        if stages:
            segments.append(Segment(stages, text.strip()))
        stages = []
    end_stage()
    if stages:
        segments.append(Segment(stages, ""))
    if any(seg.op == "&" for seg in segments):
        reasons.append("background job")
    return Lexed(segments, sorted(set(reasons)))


def _redirect_problem(redirect: str) -> str:
    """Why a redirect makes the output unattestable, or "" when it does not."""
    op, _, target = redirect.partition(" ")
    if "<<" in op:
        return "heredoc"
    if ">" not in op:
        return ""          # input from a file does not change where output goes
    if op.endswith("&") and (target.isdigit() or target == "-"):
        return ""          # fd duplication such as 2>&1
    if target in ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"):
        return ""
    return f"output redirected to {target or 'a file'}"


# --- transparent prefixes -------------------------------------------------------------

_SIMPLE_PREFIXES = {"sudo", "env", "time", "nice", "nohup", "command", "exec", "stdbuf", "ionice",
                    "npx", "bunx", "chronic"}
_OPTS_WITH_VALUE = {
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-U", "-r", "-t"},
    "env": {"-u", "-C", "-S", "--unset", "--chdir"},
    "nice": {"-n"},
    "stdbuf": {"-i", "-o", "-e"},
    "ionice": {"-c", "-n"},
    "npx": {"-p", "--package"},
    "timeout": {"-s", "-k", "--signal", "--kill-after"},
    "docker": {"-u", "--user", "-w", "--workdir", "-e", "--env", "--env-file", "--index"},
    "run": {"--with", "--python", "-p", "--env-file", "--directory", "--project", "--package", "--extra",
            "--group", "--with-requirements", "--index", "--env"},
}


def _skip_opts(words: list[str], i: int, tool: str) -> int:
    takes = _OPTS_WITH_VALUE.get(tool, set())
    while i < len(words) and words[i].startswith("-") and words[i] != "--":
        opt = words[i]
        i += 1
        if opt in takes and "=" not in opt:
            i += 1
    if i < len(words) and words[i] == "--" and tool in ("sudo", "env", "npx"):
        i += 1
    return i


def _peel(words: list[str], redirects: list[str]) -> Stage:
    """Strip transparent prefixes; they stay in Stage.prefix for execution."""
    i = 0
    n = len(words)
    while i < n:
        w = words[i]
        base = w.rsplit("/", 1)[-1]
        if _ASSIGN.match(w):
            i += 1
            continue
        if base in _SIMPLE_PREFIXES:
            j = _skip_opts(words, i + 1, base)
            if base == "env":
                while j < n and _ASSIGN.match(words[j]):
                    j += 1
            if j >= n:
                break
            i = j
            continue
        if base == "timeout":
            j = _skip_opts(words, i + 1, "timeout")
            if j < n and _DURATION.match(words[j]):
                j += 1
            if j >= n:
                break
            i = j
            continue
        if base == "docker" and i + 1 < n and words[i + 1] == "exec":
            j = _skip_opts(words, i + 2, "docker")
            if j + 1 < n:
                i = j + 1  # skip container name
                continue
            break
        compose = (base == "docker" and words[i + 1:i + 3] == ["compose", "exec"]) or \
            (base == "docker-compose" and words[i + 1:i + 2] == ["exec"])
        if compose:
            j = _skip_opts(words, i + (3 if base == "docker" else 2), "docker")
            if j + 1 < n:
                i = j + 1  # skip service name
                continue
            break
        if base == "kubectl" and i + 1 < n and words[i + 1] == "exec" and "--" in words[i + 2:]:
            i = words.index("--", i + 2) + 1
            if i >= n:
                break
            continue
        if base in ("poetry", "uv", "pipenv", "hatch", "pdm", "rye") and words[i + 1:i + 2] == ["run"]:
            j = _skip_opts(words, i + 2, "run")
            if j >= n:
                break
            i = j
            continue
        if base == "pnpm" and words[i + 1:i + 2] in (["exec"], ["dlx"]):
            if i + 2 >= n:
                break
            i += 2
            continue
        if base in ("yarn", "bun") and words[i + 1:i + 2] == ["x" if base == "bun" else "dlx"] and i + 2 < n:
            i += 2
            continue
        if base == "direnv" and words[i + 1:i + 2] == ["exec"] and i + 3 < n:
            i += 3
            continue
        break
    return Stage(words=words[i:], prefix=words[:i], redirects=redirects)
