"""`capsule mcp serve|register|unregister|status|forget`: the read door's command group.

Not responsible for the tools (capsule/mcp/mcp_server.py) or agent config formats (capsule/agents/).
Invariant: JACKIN_CTX_NO_MCP keeps the server off and configs untouched (JACKIN_CTX_NO_REGISTER is the output
register's switch, not registration's).
"""

from __future__ import annotations

import json
from pathlib import Path
import sys

from capsule.ground import switches
from capsule.ground.errors import UserError


def register(subparsers) -> None:
    p = subparsers.add_parser("mcp", help="the MCP read door: serve, register with agents")
    sub = p.add_subparsers(dest="mcp_command", metavar="SUBCOMMAND", required=True)

    s = sub.add_parser("serve", help="serve ctx_read/ctx_search/ctx_doc/ctx_expand over stdio")
    s.add_argument("--root", help="workspace root (default: current directory)")
    s.add_argument("--scope", help="read-stub scope for this conversation (default: one per server)")
    s.set_defaults(func=_serve)

    r = sub.add_parser("register", help="register the server in an agent's config (merge, idempotent)")
    r.add_argument("--agent", required=True, choices=["claude", "codex"])
    r.add_argument("--scope", default=None,
                   help="claude: user (~/.claude.json, default) or project (.mcp.json + approval); "
                        "codex: user ($CODEX_HOME/config.toml)")
    r.add_argument("--project", default=".", help="project directory (for project scope and --note project)")
    r.add_argument("--note", choices=["user", "project"], default="user",
                   help="where the read-door note goes: the agent's user file (~/.claude/CLAUDE.md, "
                        "$CODEX_HOME/AGENTS.md; default) or the project's CLAUDE.md / AGENTS.md")
    r.add_argument("--no-note", action="store_true", help="write no note")
    r.set_defaults(func=_register)

    u = sub.add_parser("unregister", help="undo `mcp register`: every file it changed back byte for byte",
                       description="Restore each file `capsule mcp register` changed to the bytes and mode it "
                       "had before the first registration, and remove the files and folders it created; a file "
                       "changed since capsule wrote it is named and left as it is.")
    u.add_argument("--agent", required=True, choices=["claude", "codex"])
    u.set_defaults(func=_unregister)

    st = sub.add_parser("status", help="registration state per agent")
    st.add_argument("--project", default=".")
    st.set_defaults(func=_status)

    f = sub.add_parser("forget", help="purge read stubs (after compaction): one scope or all")
    f.add_argument("--scope", help="scope to purge (default: all)")
    f.add_argument("--hook", action="store_true",
                   help="read a Claude Code hook's JSON on stdin and purge that session's scopes")
    f.set_defaults(func=_forget)


def _serve(args) -> int:
    if switches.is_on(switches.DISABLE) or switches.is_on(switches.NO_MCP):
        print("capsule mcp: off (JACKIN_CTX_NO_MCP or JACKIN_CTX_DISABLE is set)", file=sys.stderr)
        return 0
    from capsule.mcp.mcp_server import serve  # noqa: PLC0415 - bench_startup "capsule --help"

    return serve(args.root, args.scope)


def _register(args) -> int:
    from capsule import agents  # noqa: PLC0415 - bench_startup "capsule --help"

    from capsule.cli import mcp_undo  # noqa: PLC0415 - bench_startup "capsule --help"

    note = False if args.no_note else ("user" if args.note == "user" else True)
    project = Path(args.project).resolve()
    before = mcp_undo.snapshot(mcp_undo.candidates(args.agent, args.scope, project, note, None))
    try:
        result = agents.register(args.agent, scope=args.scope, project=project, note=note)
    except agents.ConfigError as exc:
        raise UserError(str(exc)) from None
    finally:
        mcp_undo.remember(args.agent, before)
    for line in result.lines():
        print(line)
    return 0


def _unregister(args) -> int:
    from capsule.cli import mcp_undo  # noqa: PLC0415 - bench_startup "capsule --help"

    for line in mcp_undo.undo(args.agent):
        print(line)
    return 0


def _status(args) -> int:
    from capsule import agents  # noqa: PLC0415 - bench_startup "capsule --help"

    for agent, state in agents.registration_status(project=args.project).items():
        where = ", ".join(state["locations"]) or "-"
        print(f"{agent}: {'registered' if state['registered'] else 'not registered'} ({where})"
              + (f"; {state['problem']}" if state.get("problem") else ""))
    return 0


def _forget(args) -> int:
    from capsule.agents import claude  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.store.stubs import StubStore  # noqa: PLC0415 - bench_startup "capsule --help"

    store = StubStore()
    session = None
    if args.hook:
        try:
            session = json.loads(sys.stdin.read() or "{}").get("session_id")
        except (ValueError, AttributeError):
            session = None
    if session:
        n = store.purge(claude.conversation_scope(session)) + store.purge(prefix=claude.task_scope(session, ""))
    else:
        n = store.purge(args.scope)   # no session known: purge everything (costs re-sends, never a wrong stub)
    if not args.hook:
        print(f"purged {n} scope(s)")
    return 0
