"""The read door: an MCP server (official SDK) exposing ctx_read, ctx_search, ctx_doc, ctx_expand.

Responsible for the tool surface only: names, short descriptions, argument shapes, plain-text
answers and errors. The behaviour lives in capsule/retrieve and capsule/store.
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

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server

from capsule.agents import claude, codex
from capsule.prompt import surface
from capsule.ground import switches
from capsule.ground.types import Observation
from capsule.retrieve import modes, packer, workspace
from capsule.retrieve.index import WorkspaceIndex
from capsule.retrieve.reader import Reader, load_text
from capsule.store.stubs import StubStore

SERVER_NAME = "capsule"
REFRESH_EVERY_S = 30.0
DEFAULT_BUDGET = 800
MEDIA_EXTENSIONS = ("png", "jpg", "jpeg", "gif", "webp", "pdf")
MAX_MEDIA_BYTES = 32 << 20     # the model APIs' own request cap


def passive(role_mode: str | None = None) -> bool:
    """Measure/off modes and the measure-only or master switch: count, change nothing unasked.

    The mode is $JACKIN_CTX_MODE, else the role's [context] mode, else active (the embedded default)."""
    if switches.is_on(switches.DISABLE) or switches.is_on(switches.MEASURE_ONLY):
        return True
    mode = os.environ.get(switches.MODE, "").strip().lower() or (role_mode or "")
    return mode in ("off", "measure")


def role_settings() -> tuple[tuple[str, ...], str | None, bool]:
    """(languages, mode, mcp allowed) from the role named by $JACKIN_CTX_ROLE; defaults without one."""
    name = os.environ.get(switches.ROLE)
    if not name:
        return (), None, True
    try:
        from capsule.policy.manifest import load_role

        ctx = load_role(name).context
    except Exception as exc:  # a broken role must not take the read door down; say so once
        print(f"capsule mcp: role {name!r} not loaded ({exc}); using defaults", file=sys.stderr)
        return (), None, True
    return tuple(ctx.languages), ctx.mode, bool(ctx.subsystems.mcp)


class ReadDoor:
    """The state behind the tools: one workspace, one conversation scope, a warm index."""

    def __init__(self, root: Path | str, scope: str | None = None, languages: tuple[str, ...] = (),
                 role_mode: str | None = None):
        self.root = Path(root).resolve()
        self.scope = scope or os.environ.get(switches.SCOPE) or f"conv:{uuid.uuid4().hex[:12]}"
        self.stubs = StubStore()
        self._index: WorkspaceIndex | None = None
        self._index_lock = threading.Lock()
        self._refreshed = 0.0
        self._refreshing = False
        self.languages = languages
        self._engine = None
        self._engine_lock = threading.Lock()
        self._media_engines = threading.local()   # media reads: one engine per worker thread, no shared lock
        self.role_mode = role_mode
        self._media: dict | None = None

    # -- index, kept warm ------------------------------------------------------------------------
    def index(self) -> WorkspaceIndex:
        with self._index_lock:
            if self._index is None:
                self._index = WorkspaceIndex(self.root)
            if self._index.num_docs() == 0 and not self._refreshed:
                try:
                    self._index.refresh()
                except Exception as exc:  # another process holds the writer: it is building the same index
                    raise ToolError(f"the workspace index is being built elsewhere ({exc}); "
                                    f"retry in a moment or run `capsule index status`") from None
                self._refreshed = time.monotonic()
        if time.monotonic() - self._refreshed > REFRESH_EVERY_S and not self._refreshing:
            self._refreshing = True
            threading.Thread(target=self._background_refresh, daemon=True).start()
        return self._index

    def _background_refresh(self) -> None:
        try:
            self._index.refresh()
        except Exception:  # another writer holds the index lock, or the tree moved: try next time
            pass
        finally:
            self._refreshed = time.monotonic()
            self._refreshing = False

    def warm(self) -> None:
        """Open (and if needed build) the index in the background so the first search is warm."""
        def run():
            try:
                self.index()
            except Exception:  # reported to the agent by the first ctx_search instead
                pass
        threading.Thread(target=run, daemon=True).start()

    def reader(self) -> Reader:
        frec = self._index.meta if self._index is not None else None
        return Reader(self.root, stubs=self.stubs, frecency=frec, languages=self.languages,
                      passive=passive(self.role_mode))

    def _observe(self, obs: Observation) -> bytes:
        """One observation through the engine (its one ledger row); the engine fails open."""
        with self._engine_lock:
            if self._engine is None:
                from capsule.engine import Engine  # noqa: PLC0415 - the first read pays for it, not the handshake

                self._engine = Engine(languages=self.languages)
            return self._engine.observe(obs).data

    def _ledger(self, result, scope: str, started: float) -> None:
        """The read as the door shaped it, recorded by the engine; a ledger failure never fails the read."""
        transform = f"read:{result.kind if result.kind != 'full' else result.mode.split(':')[0]}"
        try:
            self._observe(Observation(result.source.encode("utf-8", "surrogateescape"),
                                      command=f"ctx_read {result.path} {result.mode}", stream="content",
                                      scope=scope, path=result.path, view=result.text, would_view=result.would_send,
                                      transform=transform, mode="measure" if passive(self.role_mode) else "standard",
                                      duration_ms=(time.perf_counter() - started) * 1000))
        except Exception:  # noqa: BLE001
            pass

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
        if intent.strip() and mode in ("", "auto"):
            return self._read_for_intent(path, intent.strip())
        scope = self.call_scope(task, meta)
        started = time.perf_counter()
        try:
            result = self.reader().read_result(path, mode, scope=scope, fresh=fresh)
        except (ValueError, OSError) as exc:
            raise ToolError(str(exc)) from None
        self._ledger(result, scope, started)
        return result.text

    def _read_media(self, path: str, scope: str):
        """An image sized to the agent model's family cap, a screenshot of a workspace file as a pointer,
        a PDF as text with page markers; None when the file is not media (the text path answers)."""
        from mcp.types import ImageContent, TextContent

        from capsule import engine_media
        from capsule.observe import media
        from capsule.policy import media as media_policy

        try:
            real = workspace.resolve(self.root, path)
            rel = workspace.relative(self.root, real)
            data = workspace.read_inside(self.root, real, rel, MAX_MEDIA_BYTES)
        except (workspace.WorkspaceError, OSError) as exc:
            raise ToolError(str(exc)) from None
        kind = media.kind_of(None, data)
        if kind is None:
            return None
        ctx_mode = os.environ.get(switches.MODE, "").strip().lower() or self.role_mode or "standard"
        obs = engine_media.observation(data, door="ctx_read", path=rel, scope=scope or None, media_type=None,
                                       model=os.environ.get(switches.AGENT_MODEL), api="anthropic",
                                       table=self._media_table(), context_mode=ctx_mode, workspace=self.root)
        # A decode can take seconds (the media budget bounds it): it runs on this worker thread's own
        # engine, so a text read beside it never waits on the door's engine lock.
        engine = getattr(self._media_engines, "engine", None)
        if engine is None:
            from capsule.engine import Engine  # noqa: PLC0415

            engine = self._media_engines.engine = Engine(languages=self.languages)
        em = engine.observe(obs)
        parts = em.parts
        if parts is None:
            if kind == "pdf":
                policy = media_policy.from_table(self._media_table(), ctx_mode)
                if policy.mode == "on":     # refused by the media layer: its reason, not the mode's
                    why = em.warnings[0] if em.warnings else "its text would cost more than the PDF as it is"
                    raise ToolError(f"{rel}: this PDF is not served by ctx_read ({why}); "
                                    "read it with the client's own Read tool")
                raise ToolError(f"{rel} is a PDF and the media layer is {policy.mode} ({policy.reason}); "
                                "ctx_read serves its text only when [context.media] is on")
            import base64

            mime = media.image.probe(data)[0] if _probe_ok(data) else "image/png"
            return [ImageContent(type="image", data=base64.b64encode(data).decode("ascii"), mime_type=mime)]
        import base64

        return [TextContent(type="text", text=p.text) if p.kind == "text" else
                ImageContent(type="image", data=base64.b64encode(p.data).decode("ascii"), mime_type=p.media_type)
                for p in parts]

    def _media_table(self) -> dict:
        if self._media is None:
            self._media = {}
            name = os.environ.get(switches.ROLE)
            if name:
                try:
                    from capsule.policy.manifest import load_role

                    self._media = dict(load_role(name).context.media)
                except Exception:  # role_settings() already said the role did not load
                    pass
        return self._media

    def _read_for_intent(self, path: str, intent: str) -> str:
        """An auto read with the step's goal: a plain (non-outlined) text goes through the engine with
        the intent, which keeps the lines that matter to it (one marker, the original archived behind
        the footer, ctx_expand brings it back). Such a read records no stub — the scope did not
        receive the whole file."""
        started = time.perf_counter()
        try:
            result = self.reader().read_result(path, "auto", scope="")
        except (ValueError, OSError) as exc:
            raise ToolError(str(exc)) from None
        if result.mode != "full":
            self._ledger(result, "", started)
            return result.text
        data = self._observe(Observation(result.text.encode("utf-8", "surrogateescape"),
                                         command=f"ctx_read {result.path} intent", stream="content",
                                         path=result.path, intent=intent,
                                         mode="measure" if passive(self.role_mode) else "standard"))
        return data.decode("utf-8", "surrogateescape")

    def passive_mode(self) -> bool:
        return passive(self.role_mode)

    def search(self, query: str, k: int = 10, budget: int = DEFAULT_BUDGET) -> str:
        if not query.strip():
            raise ToolError("empty query; give words or identifiers to look for")
        k = max(1, min(int(k), 50))
        ix = self.index()
        return packer.pack(self.root, ix.search(query, k), query, budget=max(100, int(budget)))

    def doc(self, target: str, section: str = "", meta: dict | None = None) -> str:
        real = None
        try:
            real = workspace.resolve(self.root, target)
        except workspace.WorkspaceError as exc:
            if "outside the workspace" in str(exc):
                raise ToolError(str(exc)) from None
        try:
            if real is None:
                hits = [h for h in self.index().search(target + " " + section, 30)
                        if h.path.rsplit(".", 1)[-1].lower() in ("md", "markdown", "mdx", "rst", "txt")]
                if not hits:
                    raise ToolError(f"no markdown file matches {target!r}; give a path or other words")
                real = workspace.resolve(self.root, hits[0].path)
            rel = workspace.relative(self.root, real)
            text = load_text(self.root, real, rel)
        except (ValueError, OSError) as exc:
            raise ToolError(str(exc)) from None
        if section:
            return self.read(rel, f"section:{section}", meta=meta)
        heads = modes.headings(text)
        if not heads:
            return self.read(rel, "full", meta=meta)
        listing = "\n".join(f"{'  ' * (lvl - 1)}- {title} (line {i + 1})" for i, lvl, title in heads)
        return f"{rel} sections (ctx_doc with section=… for one):\n{listing}"

    def expand(self, handle: str, lines: str = "", grep: str = "") -> str:
        try:
            from capsule.store.archive import Archive, normalise
        except ImportError:
            raise ToolError("the archive is not available in this build") from None
        h = normalise(handle)
        if not h:
            raise ToolError("give the handle from a [full output: capsule ctx expand '<<ccr:HASH>>'] footer")
        try:
            data = Archive(readonly=True).get(h)
        except (KeyError, LookupError, FileNotFoundError, ValueError) as exc:
            raise ToolError(f"no archived output for ccr:{h} ({exc}); it may be past retention") from None
        except Exception as exc:  # a corrupt or unreadable archive: say which, never a traceback
            from capsule.store.sqlite import StoreError

            raise ToolError(str(exc) if isinstance(exc, StoreError) else f"the archive failed: {exc!r}") from None
        if data is None:
            raise ToolError(f"no archived output for ccr:{h}; it may be past retention")
        text = data.decode("utf-8", "surrogateescape") if isinstance(data, bytes) else str(data)
        if lines:
            try:
                return modes.lines(text, modes.parse_ranges(lines.removeprefix("lines:")))
            except ValueError as exc:
                raise ToolError(str(exc)) from None
        if grep:
            needle = grep.lower()
            rows = [f"{n}| {line}" for n, line in enumerate(modes.split_lines(text), 1) if needle in line.lower()]
            return "\n".join(rows) if rows else f"no line of ccr:{h} contains {grep!r}"
        return text


def _probe_ok(data: bytes) -> bool:
    from capsule.observe.media import image

    try:
        image.probe(data)
        return True
    except image.MediaError:
        return False


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
        "ctx_search": lambda a, meta: door.search(a["query"], a.get("k", 10)),
        "ctx_doc": lambda a, meta: door.doc(a["target"], a.get("section", ""), meta=meta),
        "ctx_expand": lambda a, meta: door.expand(a["handle"], a.get("lines", ""), a.get("grep", "")),
    }


def build_server(door: ReadDoor) -> Server:
    """The SDK's low-level server with the two tool handlers only: with no resource or prompt
    handler it declares no resources capability, and Claude Code then adds none of its three MCP
    resource tools (~520 tokens on every call, measured on its requests)."""
    listed = surface.load()
    tools = [types.Tool(name=t["name"], description=t["description"], input_schema=t["input_schema"])
             for t in listed["tools"]]
    calls = _calls(door)

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            args = surface.arguments(params.name, params.arguments or {})
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
