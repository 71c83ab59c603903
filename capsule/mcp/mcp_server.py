"""The read door: an MCP server (official SDK) exposing ctx_read, ctx_search, ctx_doc, ctx_expand.

Responsible for the tool surface only: names, short descriptions, argument shapes, plain-text
answers and errors, and the client facts (the call's scope, the role). Every tool call is one
Request to the engine (Engine.request, capsule/engine_read.py), which shapes the answer and writes
its one ledger row; images and PDFs go to the engine's media entry (engine_media.py).
Invariant: every tool answers plain text and every anticipated failure is an isError result whose
message names the fix; the server lists exactly data/tools.toml (mcp/surface.py) and declares the
tools capability only, so no client adds resource tools for it (standing context, INV-6).
"""

from __future__ import annotations

import os
import sys
import threading
import time
import uuid
from pathlib import Path
import base64

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.types import ImageContent, TextContent

from capsule import agents
from capsule.agents import claude, codex
from capsule.engine_read import tool_arguments, tool_surface
from capsule.ground import switches
from capsule.ground.types import Observation, Request
from capsule.agents import intent_log as intents, session
from capsule.engine import Engine
from capsule.engine_read import RequestError

SERVER_NAME = "capsule"
MEDIA_EXTENSIONS = ("png", "jpg", "jpeg", "gif", "webp", "pdf")


def role_settings() -> tuple[tuple[str, ...], str | None, bool]:
    """(languages, mode, mcp allowed) from the role named by $JACKIN_CTX_ROLE; defaults without one."""
    name = os.environ.get(switches.ROLE)
    if not name:
        return (), None, True
    try:
        ctx = agents.role_context(name)
    except Exception as exc:  # a broken role must not take the read door down; say so once
        print(f"capsule mcp: role {name!r} not loaded ({exc}); using defaults", file=sys.stderr)
        return (), None, True
    return tuple(ctx.languages), ctx.mode, bool(ctx.subsystems.mcp)


class ReadDoor:
    """The door's state: one workspace, one conversation scope, one warm engine."""

    def __init__(self, root: Path | str, scope: str | None = None, languages: tuple[str, ...] = (),
                 role_mode: str | None = None):
        self.root = Path(root).resolve()
        self.scope = scope or os.environ.get(switches.SCOPE) or f"conv:{uuid.uuid4().hex[:12]}"
        self.languages = languages
        self.role_mode = role_mode
        self._engine = None
        self._engine_lock = threading.Lock()
        self._made_lock = threading.Lock()
        self._media_engines = threading.local()   # media reads: one engine per worker thread, no shared lock
        self._media: dict | None = None

    @property
    def engine(self):
        """The door's one engine, made by the first call (or warm()), not at the handshake."""
        with self._made_lock:
            if self._engine is None:
                self._engine = Engine(languages=self.languages, role_mode=self.role_mode)
            return self._engine

    def warm(self) -> None:
        """The engine and the workspace index made in the background, so the first search is warm."""
        threading.Thread(target=lambda: self.engine.reads.warm(self.root), daemon=True).start()

    def _media_engine(self):
        found = getattr(self._media_engines, "engine", None)
        if found is None:
            found = self._media_engines.engine = Engine(languages=self.languages, role_mode=self.role_mode)
        return found

    def _ask(self, tool: str, target: str, **kw) -> str:
        """One tool call through the engine; its text answer. A request the engine cannot serve is
        the tool's isError answer."""
        try:
            with self._engine_lock:
                em = self.engine.request(Observation(request=Request(tool, self.root, target, **kw)))
        except RequestError as exc:
            raise ToolError(str(exc)) from None
        return em.data.decode("utf-8", "surrogateescape")

    # -- tools -----------------------------------------------------------------------------------
    def call_scope(self, task: str = "", meta: dict | None = None) -> str:
        """The stub scope of one call: an explicit task, the agent's own conversation, subagent or
        context window (Codex: from _meta; Claude Code: from its transcripts), else this server's scope.
        "" means unknown: the read goes out in full and nothing is recorded."""
        if task:
            return f"task:{task}"
        scope = codex.call_scope(meta)
        if scope:
            return scope
        if os.environ.get(claude.SESSION_ENV):
            return claude.call_scope((meta or {}).get(claude.TOOL_USE_META)) or ""
        return self.scope

    def read(self, path: str, mode: str = "auto", fresh: bool = False, task: str = "",
             meta: dict | None = None, intent: str = ""):
        """The read's text; for an image or PDF file, MCP content blocks (capsule/engine_media.py)."""
        if mode in ("", "auto", "full") and path.rsplit(".", 1)[-1].lower() in MEDIA_EXTENSIONS:
            blocks = self._read_media(path, self.call_scope(task, meta))
            if blocks is not None:
                return blocks
        prompt, edits = self._said()
        return self._ask("read", path, mode=mode or "auto", fresh=bool(fresh), scope=self.call_scope(task, meta),
                         intent=intent.strip(), prompt=prompt, edits=edits)

    def _said(self) -> tuple[str | None, tuple[str, ...]]:
        """The task's cues Claude Code's hook kept for this session (its last prompt, its edits)."""
        sid = os.environ.get(claude.SESSION_ENV)
        if not sid:
            return None, ()
        return intents.said(session.intents_dir(self.engine.state_dir), sid)

    def _read_media(self, path: str, scope: str):
        """An image sized to the agent model's family cap, a screenshot of a workspace file as a pointer,
        a PDF as text with page markers, as MCP content blocks; None when the file is not media."""

        req = Request("media", self.root, path, scope=scope, model=os.environ.get(switches.AGENT_MODEL),
                      media=tuple(self._media_table().items()))
        try:
            # A decode can take seconds (the media budget bounds it): it runs on this worker thread's
            # own engine, so a text read beside it never waits on the door's engine lock.
            parts = self._media_engine().request(Observation(request=req)).parts
        except RequestError as exc:
            raise ToolError(str(exc)) from None
        if parts is None:
            return None
        return [TextContent(type="text", text=p.text) if p.kind == "text" else
                ImageContent(type="image", data=base64.b64encode(p.data).decode("ascii"), mime_type=p.media_type)
                for p in parts]

    def _media_table(self) -> dict:
        if self._media is None:
            self._media = {}
            name = os.environ.get(switches.ROLE)
            if name:
                try:
                    self._media = dict(agents.role_context(name).media)
                except Exception:  # role_settings() already said the role did not load
                    pass
        return self._media

    def search(self, query: str, k: int = 10, meta: dict | None = None) -> str:
        """Ranked hits; those the task's cues point at first, as a read's regions (the same cues)."""
        prompt, edits = self._said()
        return self._ask("search", query, k=k, scope=self.call_scope("", meta), prompt=prompt, edits=edits)

    def doc(self, target: str, section: str = "", meta: dict | None = None) -> str:
        return self._ask("doc", target, section=section, scope=self.call_scope("", meta))

    def expand(self, handle: str, lines: str = "", grep: str = "") -> str:
        return self._ask("expand", handle, lines=lines, grep=grep)


def _wire(text):
    """JSON-RPC carries Unicode only: bytes that were not UTF-8 (kept as surrogates) become U+FFFD.
    Content blocks (a media read) pass as they are."""
    if not isinstance(text, str):
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _meta(params: types.CallToolRequestParams) -> dict:
    meta = params.meta
    if meta is not None and not isinstance(meta, dict):
        meta = meta.model_dump(by_alias=True, exclude_none=True)
    return meta if isinstance(meta, dict) else {}


def _calls(door: ReadDoor) -> dict:
    """Tool name -> handler(arguments, meta) -> text; the names and arguments are data/tools.toml's."""
    return {
        "ctx_read": lambda a, meta: door.read(a["path"], a.get("mode", "auto"), a.get("fresh", False),
                                              a.get("task", ""), meta=meta, intent=a.get("intent", "")),
        "ctx_search": lambda a, meta: door.search(a["query"], a.get("k", 10), meta=meta),
        "ctx_doc": lambda a, meta: door.doc(a["target"], a.get("section", ""), meta=meta),
        "ctx_expand": lambda a, meta: door.expand(a["handle"], a.get("lines", ""), a.get("grep", "")),
    }


def build_server(door: ReadDoor) -> Server:
    """The SDK's low-level server with the two tool handlers only: with no resource or prompt
    handler it declares no resources capability, and Claude Code then adds none of its three MCP
    resource tools (~520 tokens on every call, measured on its requests)."""
    listed = tool_surface()
    tools = [types.Tool(name=t["name"], description=t["description"], input_schema=t["input_schema"])
             for t in listed["tools"]]
    calls = _calls(door)

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            args = tool_arguments(params.name, params.arguments or {})
            text = await anyio.to_thread.run_sync(calls[params.name], args, _meta(params))
        except (ToolError, ValueError) as exc:
            return types.CallToolResult(content=[types.TextContent(type="text", text=_wire(str(exc)))], is_error=True)
        except Exception as exc:  # noqa: BLE001 - an unanticipated failure is still an answer, never a hang
            return types.CallToolResult(content=[types.TextContent(type="text", text=f"{params.name} failed: {exc!r}")],
                                        is_error=True)
        if isinstance(text, list):      # an image or a PDF read: MCP content blocks (engine_media.py)
            return types.CallToolResult(content=text)
        return types.CallToolResult(content=[types.TextContent(type="text", text=_wire(text))])

    return Server(SERVER_NAME, instructions=listed["instructions"] or None,
                  on_list_tools=list_tools, on_call_tool=call_tool)


async def _run_stdio(server: Server) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def serve(root: Path | str | None = None, scope: str | None = None) -> int:
    languages, role_mode, allowed = role_settings()
    if not allowed:
        print("capsule mcp: off (the role's [context] subsystems turn mcp off)", file=sys.stderr)
        return 0
    door = ReadDoor(root or os.getcwd(), scope=scope, languages=languages, role_mode=role_mode)
    door.warm()
    anyio.run(_run_stdio, build_server(door))
    return 0
