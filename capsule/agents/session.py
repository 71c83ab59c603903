"""Session-scoped configuration for `capsule up --local`: the agent learns about capsule from its
command line and from files in capsule's state dir, never from the user's own config.

Claude Code: `--mcp-config` (the read door, state dir pinned), `--settings` (compaction hooks that
purge read stubs, the Bash-intent hook, the tool allow), `--append-system-prompt` (the read-door note).
Codex: `-c` overrides (`mcp_servers.capsule.*`, `developer_instructions`).
Not responsible for user- or project-scope registration (claude.py, codex.py: `capsule mcp register`).
Invariant: nothing outside the state dir is written; the session dir is removed when the session
ends, and a dead session's dir on the next start.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import time
import tomllib
from pathlib import Path
import sys

from capsule.agents import claude, codex, notes
from capsule.agents.common import MARKER_KEY, MARKER_VALUE, SERVER_NAME, server_command
from capsule.ground import switches
from capsule.ground import paths, processes
import capsule

SESSIONS_DIR = "sessions"
INTENT_RETENTION_S = 24 * 3600     # recorded Bash descriptions and prompts of past sessions, hook-door answers
HOOK_MEMO_DIR = "hook-memo"        # in the state dir: the hook door's answer per tool call and content
HOOK_TEMPLATE = Path(__file__).with_name("hook_template") / "intent_hook.py"
BOUNDARY_TEMPLATE = Path(__file__).with_name("hook_template") / "boundary_hook.py"
TOOL_TEMPLATE = Path(__file__).with_name("hook_template") / "tool_hook.py"
TOOL_HOOK_TIMEOUT_S = 60
# Claude Code's task boundaries (all in 2.1.197's hook list), each logged to the ledger; the model
# switch events are 2.1.332's (2.1.197 ignores hook events it does not know, checked).
BOUNDARY_EVENTS = ("SessionStart", "UserPromptSubmit", "SubagentStart", "PreCompact", "SessionEnd",
                   "PreModelSwitch", "PostModelSwitch")
# Claude Code subcommands take no session flags (they configure, they do not converse).
CLAUDE_SUBCOMMANDS = frozenset({"mcp", "config", "doctor", "update", "install", "migrate-installer",
                                "setup-token", "plugin", "agents", "auth"})


# The intent hook's PreToolUse tools: Bash (each call's goal), the edit tools (the task's cues).
INTENT_MATCHER = "Bash|Edit|MultiEdit|Write|NotebookEdit"


def sessions_root(state_dir: Path) -> Path:
    return Path(state_dir) / SESSIONS_DIR


def intents_dir(state_dir: Path) -> Path:
    return sessions_root(state_dir) / "intents"


def prepare(state_dir: Path) -> Path:
    """A fresh dir for this supervisor's session; dirs of dead sessions (SIGKILL) are removed."""
    root = sessions_root(state_dir)
    root.mkdir(parents=True, exist_ok=True)
    for d in root.iterdir():
        if d.name.isdigit() and not processes.alive(int(d.name)):
            shutil.rmtree(d, ignore_errors=True)
    cutoff = time.time() - INTENT_RETENTION_S
    # the hook door's answers (shims/hook_door.py MEMO_DIR) only matter inside a session: a resumed
    # one replays its transcript, which holds the answer Claude Code got
    for f in [*intents_dir(state_dir).glob("*.jsonl"), *(Path(state_dir) / HOOK_MEMO_DIR).glob("*/*.json")]:
        try:
            if f.stat().st_mtime < cutoff:
                f.unlink()
        except OSError:
            pass
    here = root / str(os.getpid())
    shutil.rmtree(here, ignore_errors=True)
    here.mkdir(mode=0o700)
    return here


def finish(session_dir: Path | None) -> None:
    if session_dir is not None:
        shutil.rmtree(session_dir, ignore_errors=True)


def _hook_command(session_dir: Path, state_dir: Path, python: str) -> str:
    script = session_dir / "intent_hook.py"
    # the hook redacts what it keeps with capsule's own pass: it needs capsule's import path (-IS drops it)
    # (an editable install puts capsule on the path through a site hook, which -IS never runs: name
    # the folder that holds the package itself too)
    home = str(Path(capsule.__file__).resolve().parent.parent)
    where = [home] + [p for p in sys.path if p and os.path.isdir(p) and p != home]
    text = (HOOK_TEMPLATE.read_text(encoding="utf-8").replace("@INTENTS_DIR@", repr(str(intents_dir(state_dir))))
            .replace("@IMPORT_PATH@", repr(where)).replace("@STATE_DIR@", repr(str(state_dir))))
    script.write_text(text, encoding="utf-8")
    return shlex.join([python, "-IS", str(script)])     # a shell runs it: a path is data, never code


def _boundary_command(session_dir: Path, state_dir: Path, python: str) -> str:
    script = session_dir / "boundary_hook.py"
    text = BOUNDARY_TEMPLATE.read_text(encoding="utf-8").replace(
        "@BOUNDARIES@", repr(str(Path(state_dir) / paths.BOUNDARIES_FILE)))
    script.write_text(text, encoding="utf-8")
    return shlex.join([python, "-IS", str(script)])


def _tool_hook_command(session_dir: Path, state_dir: Path, python: str, engine_python: str) -> str:
    script = session_dir / "tool_hook.py"
    values = {"@SOCKET@": str(paths.socket_path()), "@PYTHON@": engine_python, "@STATE_DIR@": str(state_dir),
              "@SOCKET_ENV@": switches.SOCKET, "@STATE_ENV@": switches.STATE_DIR}
    text = TOOL_TEMPLATE.read_text(encoding="utf-8")
    for k, v in values.items():
        text = text.replace(k, repr(v))
    script.write_text(text, encoding="utf-8")
    return shlex.join([python, "-IS", str(script)])


def _binary_at(argv: list[str], name: str) -> int | None:
    """Where the agent's own binary is in `argv` (a wrapper such as `npx claude` comes first)."""
    return next((i for i, word in enumerate(argv) if os.path.basename(word) == name), None)


def claude_argv(argv: list[str], session_dir: Path, state_dir: Path, *, mcp: bool, intent: bool,
                python: str, boundaries: bool = False, instructions: str | None = None,
                tool_hook: bool = False, statusline: bool = False) -> list[str]:
    """`argv` (claude …) with the session flags right after the binary; `instructions` (the role's
    compiled standing text, prompt/pack.py; None: the read-door note alone when mcp is on) goes in
    --append-system-prompt, after any text the user gave that flag. `tool_hook`: the hook door
    (PostToolUse on Read, Grep, Glob, WebFetch and MCP tools: capsule/shims/hook_door.py)."""
    at = _binary_at(argv, "claude")
    if at is None:
        return list(argv)
    if at:
        return argv[:at] + claude_argv(argv[at:], session_dir, state_dir, mcp=mcp, intent=intent, python=python,
                                       boundaries=boundaries, instructions=instructions, tool_hook=tool_hook,
                                       statusline=statusline)
    first = next((a for a in argv[1:] if not a.startswith("-")), None)
    if first in CLAUDE_SUBCOMMANDS:
        return list(argv)
    settings: dict = {}
    flags: list[str] = []
    if mcp:
        command, args = server_command()
        servers = {SERVER_NAME: {"type": "stdio", "command": command, "args": args,
                                 "env": {MARKER_KEY: MARKER_VALUE, switches.STATE_DIR: str(state_dir)}}}
        (session_dir / "mcp.json").write_text(json.dumps({"mcpServers": servers}, indent=2), encoding="utf-8")
        settings["permissions"] = {"allow": [claude.TOOL_PERMISSION]}
        claude.merge_forget_hooks(settings)
        flags += ["--mcp-config", str(session_dir / "mcp.json")]
    if intent:
        hook = {"type": "command", "command": _hook_command(session_dir, state_dir, python), "timeout": 5}
        hooks = settings.setdefault("hooks", {})
        hooks.setdefault("PreToolUse", []).append({"matcher": INTENT_MATCHER, "hooks": [hook]})
        hooks.setdefault("UserPromptSubmit", []).append({"hooks": [hook]})
    if boundaries:
        hook = {"type": "command", "command": _boundary_command(session_dir, state_dir, python), "timeout": 5}
        hooks = settings.setdefault("hooks", {})
        for event in BOUNDARY_EVENTS:
            hooks.setdefault(event, []).append({"hooks": [hook]})
    if tool_hook:
        hook = {"type": "command", "command": _tool_hook_command(session_dir, state_dir, python, sys.executable),
                "timeout": TOOL_HOOK_TIMEOUT_S}
        settings.setdefault("hooks", {}).setdefault("PostToolUse", []).append(
            {"matcher": claude.HOOK_MATCHER, "hooks": [hook]})
    if statusline:    # the role asks for it ([agent] statusline = true): this session's only
        command, args = server_command()
        line = [command, *args[:-2], "statusline"] if args[-2:] == ["mcp", "serve"] else [command, "statusline"]
        settings["statusLine"] = {"type": "command", "command": shlex.join(line), "padding": 0}
    if settings:
        (session_dir / "settings.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
        flags += ["--settings", str(session_dir / "settings.json")]
    rest = list(argv[1:])
    text = (notes.NOTE if mcp else "") if instructions is None else instructions
    if text:
        if "--append-system-prompt" in rest:   # one flag: the user's text, then ours
            i = rest.index("--append-system-prompt")
            if i + 1 < len(rest):
                rest[i + 1] = f"{rest[i + 1]}\n\n{text}"
        else:
            flags += ["--append-system-prompt", text]
    return [argv[0], *flags, *rest]


def _toml(value) -> str:
    return json.dumps(value)   # a JSON string or list of strings is valid TOML


def codex_argv(argv: list[str], state_dir: Path, env=None, *, mcp: bool, instructions: str | None = None) -> list[str]:
    """`argv` (codex …) with `-c` overrides right after the binary; `instructions` (as for Claude
    Code) after the user's own developer_instructions."""
    at = _binary_at(argv, "codex")
    if not mcp or at is None:
        return list(argv)
    if at:
        return argv[:at] + codex_argv(argv[at:], state_dir, env, mcp=mcp, instructions=instructions)
    command, args = server_command()
    key = f"mcp_servers.{SERVER_NAME}"
    flags = ["-c", f"{key}.command={_toml(command)}", "-c", f"{key}.args={_toml(args)}",
             "-c", f"{key}.required=true", "-c", f'{key}.default_tools_approval_mode="approve"',
             "-c", f"{key}.env.{MARKER_KEY}={_toml(MARKER_VALUE)}",
             "-c", f"{key}.env.{switches.STATE_DIR}={_toml(str(state_dir))}"]
    theirs = ""
    try:
        theirs = tomllib.loads(codex.config_path(env).read_text(encoding="utf-8")).get("developer_instructions") or ""
    except (OSError, tomllib.TOMLDecodeError):
        pass
    text = (notes.NOTE if mcp else "") if instructions is None else instructions
    note = f"{theirs}\n\n{text}" if isinstance(theirs, str) and theirs and text else (text or theirs)
    if note:
        flags += ["-c", f"developer_instructions={_toml(note)}"]
    return [argv[0], *flags, *argv[1:]]
