"""The engine's read entry (Engine.request): the read door's tool calls — read a file in a mode,
search the workspace (cut by the task's cues as a read is), list or read a document, expand an archived original — shaped here and
recorded as one ledger row each, so the MCP door only translates arguments and answers.

Responsible for choosing and running the read transforms (full, outline/signatures, lines, section,
anchored, stubs and deltas through retrieve/reader.py; the task-cut view of retrieve/focus.py; the
intent cut of a long plain text through the pipeline), for the warm workspace index behind search,
and for the one expand of both doors (retrieve/expand.py). Not responsible for the transport, tool
names or client facts (the door resolves the scope and hands it in) nor for media (engine_media.py).
Invariant: every answered request writes exactly one ledger row through Engine.observe (a search or
an expansion has no larger original to compare with: its row counts what it cost, raw = sent); a
request that cannot be served raises RequestError (a ValueError) whose message names the fix;
nothing else raises.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from capsule.ground.types import Observation, Part, Request
from capsule.policy.modes import passive
from capsule.retrieve import focus, read_modes, packer, workspace
from capsule.retrieve.expand import ExpandError, Selection
from capsule.retrieve.reader import Reader, load_text
from capsule.store.stubs import StubStore
from capsule import engine_media
from capsule.observe.content.outline import outline
from capsule.observe.cues import empty
from capsule.observe.pipeline import Emission
from capsule.prompt import surface
from capsule.retrieve.index import WorkspaceIndex
from capsule.store.archive import UnknownHandle, normalise
from capsule.store.sqlite import StoreError

if TYPE_CHECKING:       # the pipeline is imported with the engine, not with the door's tool list
    from capsule.observe.pipeline import Emission

log = logging.getLogger("capsule.engine.read")

REFRESH_EVERY_S = 30.0
MAX_MEDIA_BYTES = 32 << 20     # the model APIs' own request cap
DEFAULT_BUDGET = 800
MAX_K = 50                     # the most files a search shows, and the candidates a task cut chooses from
DOC_SUFFIXES = ("md", "markdown", "mdx", "rst", "txt")


class RequestError(ValueError):
    """A request the engine cannot serve (a path outside the workspace, an unknown handle, a bad
    mode or range); the message names the fix."""


class Reads:
    """The read state of one engine: the stub store and a warm index per workspace root."""

    def __init__(self, engine):
        self.engine = engine
        self.stubs = StubStore()
        self._indexes: dict[Path, list] = {}        # root -> [index, refreshed at, refreshing]
        self._lock = threading.Lock()

    # -- the index, kept warm ------------------------------------------------------------------
    def index(self, root: Path):
        with self._lock:
            slot = self._indexes.setdefault(root, [None, 0.0, False])
            if slot[0] is None:
                slot[0] = WorkspaceIndex(root)
            if slot[0].num_docs() == 0 and not slot[1]:
                try:
                    slot[0].refresh()
                except Exception as exc:  # another process holds the writer: it is building the same index
                    raise RequestError(f"the workspace index is being built elsewhere ({exc}); "
                                       f"retry in a moment or run `capsule index status`") from None
                slot[1] = time.monotonic()
        if time.monotonic() - slot[1] > REFRESH_EVERY_S and not slot[2]:
            slot[2] = True
            threading.Thread(target=self._refresh, args=(slot,), daemon=True).start()
        return slot[0]

    @staticmethod
    def _refresh(slot: list) -> None:
        try:
            slot[0].refresh()
        except Exception:  # another writer holds the index lock, or the tree moved: try next time
            pass
        finally:
            slot[1], slot[2] = time.monotonic(), False

    def warm(self, root: Path) -> None:
        """Open (and if needed build) the index in the background so the first search is warm."""
        def run():
            try:
                self.index(root)
            except Exception:  # reported to the agent by the first search instead
                pass
        threading.Thread(target=run, daemon=True).start()

    def reader(self, root: Path) -> Reader:
        slot = self._indexes.get(root)
        frec = slot[0].meta if slot and slot[0] is not None else None
        return Reader(root, stubs=self.stubs, frecency=frec, languages=self.engine.languages,
                      passive=passive(self.engine.mode))

    # -- the requests --------------------------------------------------------------------------
    def answer(self, req: Request) -> Emission:
        try:
            return getattr(self, "_" + req.tool)(req._replace(root=Path(req.root).resolve()))
        except (ValueError, OSError) as exc:       # WorkspaceError, ReadError, ModeError are ValueErrors
            raise RequestError(str(exc)) from None

    def _row(self, req: Request, raw: str, view: str, transform: str, command: str, started: float,
             path: str | None = None, would: str | None = None, scope: str | None = None,
             handle: str | None = None) -> Emission:
        """The request's one ledger row, through the engine's one entry; the view goes out as it is."""
        obs = Observation(raw.encode("utf-8", "surrogateescape"), command=command, stream="content",
                          scope=scope if scope is not None else req.scope or None, path=path, view=view,
                          would_view=would, transform=transform, intent=req.intent or None, handle=handle,
                          mode="measure" if passive(self.engine.mode) else None,
                          duration_ms=(time.perf_counter() - started) * 1000)
        em = self.engine.observe(obs)
        em.data = obs.view.encode("utf-8", "surrogateescape")   # the asked-for view, even under the master switch
        return em

    def _read(self, req: Request) -> Emission:
        started = time.perf_counter()
        reader = self.reader(req.root)
        rel, source = reader.load(req.target)
        parsed = read_modes.parse(req.mode)
        auto = parsed is None and not passive(self.engine.mode)
        if auto and read_modes.default_mode(rel, source).name == "signatures":
            try:
                em = self._focused(req, rel, source, started)
            except Exception as exc:  # noqa: BLE001 - a task cut that fails serves the plain outline (fail open)
                log.warning("task-cut read of %s failed: %r; the plain outline is served", rel, exc)
                em = None
            if em is not None:
                return em
        if auto and req.intent.strip() and read_modes.default_mode(rel, source).name == "full":
            # A plain text with the step's goal: the pipeline keeps the lines that matter to it (one
            # marker, the original archived behind the footer). No stub: the scope did not get it all.
            return self.engine.observe(Observation(source.encode("utf-8", "surrogateescape"),
                                                   command=f"ctx_read {rel} intent", stream="content", path=rel,
                                                   intent=req.intent.strip(), scope=req.scope or None))
        result = reader.result_for(rel, source, parsed, scope=req.scope, fresh=req.fresh)
        kind = result.kind if result.kind != "full" else result.mode.split(":")[0]
        return self._row(req, result.source, result.text, f"read:{kind}", f"ctx_read {result.path} {result.mode}",
                         started, path=result.path, would=result.would_send)

    def _focused(self, req: Request, rel: str, source: str, started: float) -> Emission | None:
        """The outline with the regions the task points at whole (retrieve/focus.py), or None (no cue
        here, or no outline): the plain outline is served."""
        eng = self.engine
        scopes = list(dict.fromkeys(s for s in (req.scope, eng.scope) if s))
        cue = eng.session_cues(scopes, req.intent, req.prompt, req.edits, rel=rel)
        if not (cue.names or cue.terms or cue.lines):
            return None
        bodies = outline(source, rel, eng.languages, detail="signatures")
        plain = outline(source, rel, eng.languages)
        if not bodies.removals or plain.text == source:
            return None
        stored: list[str] = []

        def archive() -> str:     # the original archived only when a view is cut from it
            stored.append(eng.archive.put(source.encode("utf-8", "surrogateescape"), f"ctx_read {rel}"))
            return stored[0]

        text = focus.view(source, rel, plain.text, bodies, cue, archive)
        if text is None:
            return None
        return self._row(req, source, text, "read:focus", f"ctx_read {rel} focus", started, path=rel,
                         handle=stored[0])

    def _media(self, req: Request) -> Emission:
        """An image or PDF file through the engine's media entry (engine_media.py): its parts (an image
        sized for the model, a PDF's text), the original image when the layer sends it unchanged;
        parts None when the file is not media (the door reads it as text)."""
        real = workspace.resolve(req.root, req.target)
        rel = workspace.relative(req.root, real)
        data = workspace.read_inside(req.root, real, rel, MAX_MEDIA_BYTES)
        table = dict(req.media)
        obs = engine_media.observation(data, door="ctx_read", path=rel, scope=req.scope or None, media_type=None,
                                       model=req.model, api="anthropic", table=table,
                                       context_mode=self.engine.mode, workspace=req.root)
        if obs is None:
            return Emission(b"", 0, 0, "media", "not-media", applied=False)
        em = self.engine.observe(obs)
        if em.parts is None:
            refusal = engine_media.refusal(data, rel, table, self.engine.mode, em.warnings)
            if refusal:
                raise RequestError(refusal)
            em.parts = [Part("image", data=data, media_type=engine_media.mime(data))]
        return em

    def _search(self, req: Request) -> Emission:
        started = time.perf_counter()
        if not req.target.strip():
            raise RequestError("empty query; give words or identifiers to look for")
        k = max(1, min(int(req.k), MAX_K))
        index = self.index(req.root)
        text = None
        try:
            cue = self._search_cues(req)
            if cue is not None:     # the k shown are chosen from every candidate the cues may point at
                text = packer.pack(req.root, index.search(req.target, MAX_K), req.target, budget=DEFAULT_BUDGET,
                                   cue=cue, k=k)
        except Exception as exc:  # noqa: BLE001 - a task cut that fails serves the plain search (fail open)
            log.warning("task-cut search for %r failed: %r; the plain search is served", req.target, exc)
        if text is None:
            text = packer.pack(req.root, index.search(req.target, k), req.target, budget=DEFAULT_BUDGET)
        return self._row(req, text, text, "search", f"ctx_search {req.target}", started)

    def _search_cues(self, req: Request):
        """The session's cues for a search (as a read gets them), or None when there are none."""

        eng = self.engine
        scopes = list(dict.fromkeys(s for s in (req.scope, eng.scope) if s))
        cue = eng.session_cues(scopes, req.intent, req.prompt, req.edits)
        return None if empty(cue) else cue

    def _doc(self, req: Request) -> Emission:
        started = time.perf_counter()
        real = None
        try:
            real = workspace.resolve(req.root, req.target)
        except workspace.WorkspaceError as exc:
            if "outside the workspace" in str(exc):
                raise
        if real is None:
            hits = [h for h in self.index(req.root).search(req.target + " " + req.section, 30)
                    if h.path.rsplit(".", 1)[-1].lower() in DOC_SUFFIXES]
            if not hits:
                raise RequestError(f"no markdown file matches {req.target!r}; give a path or other words")
            real = workspace.resolve(req.root, hits[0].path)
        rel = workspace.relative(req.root, real)
        text = load_text(req.root, real, rel)
        if req.section:
            return self._read(req._replace(target=rel, mode=f"section:{req.section}"))
        heads = read_modes.headings(text)
        if not heads:
            return self._read(req._replace(target=rel, mode="full"))
        listing = "\n".join(f"{'  ' * (lvl - 1)}- {title} (line {i + 1})" for i, lvl, title in heads)
        view = f"{rel} sections (ctx_doc with section=… for one):\n{listing}"
        return self._row(req, text, view, "doc:listing", f"ctx_doc {rel}", started, path=rel)

    def _expand(self, req: Request) -> Emission:
        started = time.perf_counter()
        h = normalise(req.target)
        if not h:
            raise RequestError("give the handle from a [full output: capsule ctx expand '<<ccr:HASH>>'] footer")
        try:
            selection = Selection(self.engine.archive.iter_chunks(h), req.lines.removeprefix("lines:") or None,
                                  req.grep or None)
            data = b"".join(selection)
        except ExpandError:
            raise
        except (UnknownHandle, LookupError, FileNotFoundError, ValueError) as exc:
            raise RequestError(f"no archived output for ccr:{h} ({exc}); it may be past retention") from None
        except StoreError as exc:
            raise RequestError(str(exc)) from None
        problem = selection.problem()
        if problem and selection.pattern is None:
            raise RequestError(problem)
        text = f"capsule: {problem} of ccr:{h}" if problem else data.decode("utf-8", "surrogateescape")
        how = "lines" if req.lines else "grep" if req.grep else "whole"
        return self._row(req, text, text, f"expand:{how}",
                         " ".join(["ctx_expand", h] + ([f"lines={req.lines}"] if req.lines else [])
                                  + ([f"grep={req.grep}"] if req.grep else [])), started)


def tool_surface() -> dict:
    """The read door's tools as the standing-context budget counts them (prompt/surface.py): the door
    lists exactly these."""
    return surface.load()


def tool_arguments(name: str, given: dict) -> dict:
    """One call's arguments checked against tool_surface() (ValueError naming the argument)."""
    return surface.arguments(name, given)
