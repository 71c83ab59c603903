"""The proxy door's HTTP side: an ASGI app that forwards every request to the model API upstream.

Not responsible for finding tool results (rewrite.py), reading usage (usage.py) or running a
server (server.py). Paths under /openai go to the OpenAI upstream (Codex), under /gemini to the
Gemini API upstream (Gemini CLI), the rest to Anthropic's.
Invariant (fail open): headers, credentials, status and response bytes pass through untouched and
are never logged or stored; a request body changes only when its tool results were rewritten, and
any fault on the way (engine, memo, parse) forwards the original body instead.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2
from blake3 import blake3

from capsule import engine_api, engine_media
from capsule.engine import Engine
from capsule.ground.types import Observation, Part
from capsule.proxy import wire_media as proxy_media
from capsule.proxy import bodies, rewrite, target, usage_tap

log = logging.getLogger("capsule.proxy")

OPENAI_PREFIX = "/openai"
GEMINI_PREFIX = "/gemini"
PREFIXES = {"openai": OPENAI_PREFIX, "gemini": GEMINI_PREFIX}
ANTHROPIC_DEFAULT = "https://api.anthropic.com"
TRANSCRIPT_ONLY = ("opencode", "gemini")   # clients whose usage the proxy does not record (see _record)
OPENAI_DEFAULT = "https://api.openai.com/v1"
GEMINI_DEFAULT = "https://generativelanguage.googleapis.com"
HOP_BY_HOP = {b"host", b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"te",
              b"upgrade", b"trailer", b"content-length", b"proxy-authorization"}
TIMEOUT = httpx2.Timeout(connect=15.0, read=900.0, write=120.0, pool=30.0)


@dataclass
class Settings:
    state_dir: Path
    anthropic_upstream: str = ANTHROPIC_DEFAULT
    openai_upstream: str = OPENAI_DEFAULT
    gemini_upstream: str = GEMINI_DEFAULT
    mode: str | None = None          # the engine's mode; None: its default
    shims_on: bool = False           # shell-tool results belong to the shims (INV-8)
    hooks_on: bool = False           # Claude Code's native reads belong to the hook door (shims/hook_door.py)
    languages: tuple[str, ...] = ()
    routing: object = None           # the session's lane table (capsule.route.lanes.Table); None: no pins
    agent_kind: str | None = None
    stagger: object = None           # capsule.route.stagger.Settings; None: the defaults
    media: dict | None = None        # the role's [context.media] table (None: follows `mode`)
    workspace: Path | None = None    # where a screenshot's source file may be found (None: no pointers)
    engine_budget_ms: int | None = None   # the engine's time per request (None: apis.toml's engine_budget_ms)


class Proxy:
    def __init__(self, settings: Settings):
        self.settings = settings
        self.memo = engine_api.conversation_memo(Path(settings.state_dir))
        self._usage_store = None
        self._usage_lock = threading.Lock()
        # One engine per worker thread, no lock around the engine: one conversation's long transform
        # never holds another's request (issue 24); engine_threads bounds how many run at once.
        self._local = threading.local()
        self._engines: list = []
        self._engines_lock = threading.Lock()
        self._limiter = anyio.CapacityLimiter(rewrite.limit("engine_threads"))
        self._client: httpx2.AsyncClient | None = None
        self.route = engine_api.route_side(Path(settings.state_dir), settings.routing, settings.agent_kind)
        self.stagger = engine_api.stagger(settings.stagger)
        self.stats = {"requests": 0, "rewritten": 0, "blocks_shrunk": 0, "usage_rows": 0, "fail_open": 0,
                      "upstream_errors": 0, "refused": 0, "media_changed": 0, "client_gone": 0, "too_large": 0, "over_budget": 0}

    # ---- ASGI --------------------------------------------------------------------------------------
    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    await self.aclose()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        self.stats["requests"] += 1
        path = scope.get("path", "/")
        raw_path = scope.get("raw_path") or path.encode("utf-8", "surrogateescape")
        api = next((a for a, pre in PREFIXES.items()
                    if raw_path == pre.encode() or raw_path.startswith(pre.encode() + b"/")), "anthropic")
        try:
            url = self._upstream_url(api, raw_path, scope.get("query_string", b""))
        except target.BadTarget as exc:   # never sent on: a target naming another host would take the key with it
            self.stats["refused"] += 1
            log.warning("proxy: refused a request target (%s)", exc)
            await _error(send, api, f"capsule proxy: {exc}", status=400)
            return
        declared = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        try:
            body = await bodies.read(receive, declared, bodies.cap(rewrite.limit("max_request_bytes")))
        except bodies.ClientGone as exc:      # a truncated body is never sent on
            self.stats["client_gone"] += 1
            log.info("proxy: client went away before its request was complete (%s); nothing forwarded", exc)
            return
        except bodies.TooLarge as exc:
            self.stats["too_large"] += 1
            log.warning("proxy: refused a %s-byte request body (over the cap)", exc)
            await _error(send, api, "capsule proxy: request body over the proxy's byte cap "
                         f"(${bodies.MAX_REQUEST_ENV})", status=413)
            return
        headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() not in HOP_BY_HOP]
        hmap = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in headers}
        sub = path[len(PREFIXES[api]):] if api in PREFIXES else path
        session = None
        info: dict = {}
        tap_usage = scope.get("method") == "POST" and rewrite.handles(api, sub, "usage")
        if scope.get("method") == "POST" and rewrite.handles(api, sub, "rewrite"):
            # Gemini: no lanes or fan-out stagger (its model is in the path; neither reads it there)
            body, session = await self._maybe_rewrite(api, body, hmap, route=tap_usage and api != "gemini", info=info)
        key = info.get("prefix") if tap_usage else None
        lead = await self.stagger.enter(key)
        try:
            await self._forward(scope.get("method", "GET"), url, headers, body, send, api,
                                session if tap_usage else None, hmap, on_start=lambda: self.stagger.started(key, lead))
        finally:
            self.stagger.started(key, lead)

    def _upstream_url(self, api: str, raw_path: bytes, query: bytes) -> httpx2.URL:
        if api in PREFIXES:
            upstream = self.settings.openai_upstream if api == "openai" else self.settings.gemini_upstream
            sub = raw_path[len(PREFIXES[api]):]
            if not sub:
                return httpx2.URL(upstream).copy_with(query=query or None)
            return target.upstream_url(upstream, sub, query)
        return target.upstream_url(self.settings.anthropic_upstream, raw_path, query)

    # ---- request side --------------------------------------------------------------------------------
    async def _maybe_rewrite(self, api: str, body: bytes, hmap: dict[str, str],
                             route: bool = False, info: dict | None = None) -> tuple[bytes, str | None]:
        if hmap.get("content-encoding", "identity").lower() not in ("", "identity"):
            return body, None
        if len(body) > rewrite.limit("max_body_bytes"):
            return body, None
        try:
            parsed = rewrite.parse(body)
        except (Exception, RecursionError):  # noqa: BLE001 - not JSON, nested past any limit, ...: untouched
            return body, None
        if not isinstance(parsed, dict):
            return body, None
        try:
            session = rewrite.conversation(api, parsed, hmap)
        except Exception:  # noqa: BLE001
            session = "unknown"
        routed = False
        if route and info is not None and self.stagger.settings.enabled:
            try:
                info["prefix"] = engine_api.stagger_key(api, parsed, self.stagger.settings.min_prefix_chars)
            except Exception:  # noqa: BLE001 - no key: never held
                info["prefix"] = None
        if route:
            try:   # the conversation's boundary and pin (INV-9: chosen on its first request, held)
                routed = await anyio.to_thread.run_sync(self.route.on_request, api, parsed, session, hmap)
            except Exception as exc:  # noqa: BLE001 - fail open: no pin
                log.warning("proxy routing failed (%r); request forwarded without a pin", exc)
        try:
            budget_s = (self.settings.engine_budget_ms or rewrite.limit("engine_budget_ms")) / 1000
            with anyio.move_on_after(budget_s) as budget:
                new = await anyio.to_thread.run_sync(self._rewrite_within, budget_s, api, parsed, session,
                                                     limiter=self._limiter, abandon_on_cancel=True)
            if budget.cancelled_caught:
                # What the engine finished is in the memo; the rest is claimed as sent raw, for good,
                # so this request and every later one send the same bytes (INV-1).
                self.stats["over_budget"] += 1
                log.warning("proxy: engine work on a request passed its budget; unfinished results sent as they came")
                new = await anyio.to_thread.run_sync(self._memo_only, api, body, session)
        except Exception as exc:  # noqa: BLE001 - fail open: the client's own bytes go upstream
            self.stats["fail_open"] += 1
            log.warning("proxy rewrite failed (%r); request forwarded unchanged", exc)
            return body, session
        if new is None and routed:
            new = rewrite.serialize(parsed)
        if new is None:
            return body, session
        self.stats["rewritten"] += 1
        return new, session

    def _rewrite_within(self, budget_s: float, api: str, parsed: dict, session: str) -> bytes | None:
        """_rewrite_sync with the request's budget as the media deadline: the wait above abandons this
        worker at budget_s, and its image and PDF work (engine_media.deadline) stops there too
        instead of decoding on beside the next wave's workers."""
        with engine_media.deadline(budget_s):
            return self._rewrite_sync(api, parsed, session)

    def _memo_only(self, api: str, body: bytes, session: str) -> bytes | None:
        """The request as the memo has it: a fresh parse (the abandoned worker still holds the
        first), stored rewrites applied, every block without one claimed as sent unchanged."""
        return self._rewrite_sync(api, rewrite.parse(body), session, engine=False)

    def _rewrite_sync(self, api: str, parsed: dict, session: str, engine: bool = True) -> bytes | None:
        def shrink(call: rewrite.Call, text: str) -> str:
            found = self.memo.get(api, session, call.call_id, text)
            if found is not self.memo.MISSING:
                return text if found is None else found
            if not engine:
                stored = self.memo.put(api, session, call.call_id, text, None)
                return text if stored is None else stored
            out = rewrite.engine_view(call, text, lambda c, t: self._observe(c, t, session))
            stored = self.memo.put(api, session, call.call_id, text, None if out == text else out)
            if stored is not None:
                self.stats["blocks_shrunk"] += 1
            return text if stored is None else stored

        def media(blob: proxy_media.Blob):
            found = self.memo.get(api, session, MEDIA_CALL, blob.b64)
            if found is not self.memo.MISSING:
                return None if found is None else _parts(found)
            parts = self._media(blob, parsed.get("model"), session) if engine else None
            stored = self.memo.put(api, session, MEDIA_CALL, blob.b64, None if parts is None else _parts_json(parts))
            if stored is not None:
                self.stats["media_changed"] += 1
            return None if stored is None else _parts(stored)

        def pdf_pages(read: proxy_media.PdfPages):
            digest = blake3("\0".join(read.b64).encode("ascii", "replace")).hexdigest()
            key = f"pdf-pages\0{read.path}\0{read.pages}\0{digest}"
            found = self.memo.get(api, session, MEDIA_CALL, key)
            if found is not self.memo.MISSING:
                return None if found is None else _parts(found)
            parts = self._pdf_pages(read, parsed.get("model"), session) if engine else None
            stored = self.memo.put(api, session, MEDIA_CALL, key, None if parts is None else _parts_json(parts))
            if stored is not None:
                self.stats["media_changed"] += 1
            return None if stored is None else _parts(stored)

        media_changed = api != "gemini" and proxy_media.rewrite(api, parsed, media, pdf_pages)
        out = rewrite.rewrite(api, parsed, shrink, shims_on=self.settings.shims_on, hooks_on=self.settings.hooks_on)
        return rewrite.serialize(parsed) if out is None and media_changed else out

    def _pdf_pages(self, read: proxy_media.PdfPages, model, session: str):
        """A PDF page range the client sent as page images: the pages' text from the file itself, read
        only inside the workspace (the path comes from the request: hostile until checked)."""
        root = self.settings.workspace
        if root is None or not engine_media.pdf_as_text(self.settings.media, self.settings.mode):
            return None
        data = engine_media.workspace_file(root, read.path, rewrite.limit("max_body_bytes"))
        if data is None:
            return None
        images = [proxy_media.decode(proxy_media.Blob("image/jpeg", b, read.path, "anthropic")) for b in read.b64]
        if any(i is None for i in images):
            return None
        obs = engine_media.observation(data, door="proxy", path=read.path, scope=session,
                                       media_type="application/pdf",
                                       model=model if isinstance(model, str) else None, api="anthropic",
                                       table=self.settings.media, context_mode=self.settings.mode,
                                       workspace=root, pages=read.pages, sent_images=images)
        return None if obs is None else self.engine().observe(obs).parts

    def _media(self, blob: proxy_media.Blob, model, session: str):
        """One image or PDF through Engine.observe (a media Observation), at its first sight in the conversation."""
        if not engine_media.layer_on(self.settings.media, self.settings.mode):
            return None
        data = proxy_media.decode(blob)
        if data is None:
            return None
        obs = engine_media.observation(data, door="proxy", path=blob.path, scope=session,
                                       media_type=blob.media_type,
                                       model=model if isinstance(model, str) else None, api=blob.api,
                                       table=self.settings.media, context_mode=self.settings.mode,
                                       workspace=self.settings.workspace)
        return None if obs is None else self.engine().observe(obs).parts

    def _observe(self, call: rewrite.Call, text: str, session: str) -> str:
        """One observation through the engine (classify → transform → guard → archive → ledger)."""
        try:
            raw = text.encode("utf-8")
        except UnicodeEncodeError:
            return text
        try:
            engine = self.engine()
            out = engine.observe(Observation(raw, command=call.command, exit_code=call.exit_code,
                                             intent=call.intent, scope=session, path=call.path, stream="stdout",
                                             prompt=call.prompt, edits=call.edits))
            return out.data.decode("utf-8")
        except Exception as exc:  # noqa: BLE001 - the engine fails open; so does the door
            log.warning("proxy: engine failed on a %s result (%r); sent unchanged", call.tool or "tool", exc)
            return text

    def engine(self):
        """This worker thread's engine (an Engine is not shared between threads; each has its own
        store connections, and WAL lets them write at once)."""
        found = getattr(self._local, "engine", None)
        if found is None:
            found = self._local.engine = Engine(self.settings.state_dir, mode=self.settings.mode,
                                                languages=self.settings.languages)
            with self._engines_lock:
                self._engines.append(found)
        return found

    # ---- response side -------------------------------------------------------------------------------
    async def _forward(self, method, url, headers, body, send, api, session, hmap=None, on_start=None) -> None:
        if self._client is None:
            self._client = httpx2.AsyncClient(timeout=TIMEOUT, follow_redirects=False)
        try:
            request = httpx2.Request(method, url, headers=headers, content=body)
            response = await self._client.send(request, stream=True)
        except Exception as exc:  # noqa: BLE001 - unreachable upstream: say so in the API's own shape
            self.stats["upstream_errors"] += 1
            log.warning("proxy: upstream %s unreachable: %s", api, type(exc).__name__)
            await _error(send, api, f"capsule proxy: upstream unreachable ({type(exc).__name__})")
            return
        rejected = False
        if session:
            try:
                rejected = await anyio.to_thread.run_sync(self.route.on_response, api, response.status_code,
                                                          dict(response.headers), hmap or {}, session)
            except Exception as exc:  # noqa: BLE001 - quota is measurement; a 429 still says "do not retry"
                rejected = response.status_code == 429
                log.debug("proxy quota read failed: %r", exc)
        tap = None
        if session and response.status_code == 200:
            tap = usage_tap.Tap(api, session, response.headers.get("content-type", ""),
                            response.headers.get("content-encoding", ""))
        try:
            out_headers = [(k, v) for k, v in response.headers.raw if k.lower() not in HOP_BY_HOP - {b"content-length"}]
            if rejected and response.status_code == 429:
                # One clear line was printed with the reset time; the client's SDK is told not to retry
                # (both SDKs honour x-should-retry), so a rejected window is not hammered.
                out_headers = [(k, v) for k, v in out_headers if k.lower() != b"x-should-retry"]
                out_headers.append((b"x-should-retry", b"false"))
            await send({"type": "http.response.start", "status": response.status_code, "headers": out_headers})
            async for chunk in response.aiter_raw():
                if on_start is not None:    # the first bytes of the answer: its cache entry now exists
                    on_start()
                    on_start = None
                if tap is not None:
                    tap.feed(chunk)
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            if tap is not None:   # recorded before the stream's end (a Content-Length client may stop reading sooner)
                await anyio.to_thread.run_sync(self._record, tap)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await response.aclose()

    def _record(self, tap: usage_tap.Tap) -> None:
        try:
            row = tap.result()
            # OpenCode stores each call under its own message id, not the API's: its database is
            # the usage source (capsule/measure/transcripts/opencode_transcript.py), a proxy row would count twice.
            if row is not None and self.settings.agent_kind not in TRANSCRIPT_ONLY:
                with self._usage_lock:
                    if self._usage_store is None:
                        self._usage_store = engine_api.usage_store(Path(self.settings.state_dir))
                    usage_tap.record(row, store=self._usage_store)
                self.stats["usage_rows"] += 1
        except Exception as exc:  # noqa: BLE001 - usage is measurement; the answer already went out
            log.warning("proxy: usage not recorded (%r)", exc)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def close(self) -> None:
        for closer in (self.memo.close, self.route.close, *(getattr(e, "close", None) for e in self._engines),
                       getattr(self._usage_store, "close", None)):
            if closer is not None:
                try:
                    closer()
                except Exception:  # noqa: BLE001
                    pass


# status -> (Anthropic's error type, OpenAI's error code, Google's status)
ERRORS = {400: ("invalid_request_error", "invalid_request_target", "INVALID_ARGUMENT"),
          413: ("request_too_large", "request_too_large", "INVALID_ARGUMENT"),
          502: ("api_error", "upstream_unreachable", "UNAVAILABLE")}
MEDIA_CALL = "media"     # the memo's call id for image and PDF blocks (keyed by their base64 text)


def _parts_json(parts) -> str:
    return json.dumps([{"kind": p.kind, "text": p.text, "media_type": p.media_type,
                        "data": base64.b64encode(p.data).decode("ascii")} for p in parts])


def _parts(stored: str):
    return [Part(d["kind"], d["text"], base64.b64decode(d["data"]), d["media_type"]) for d in json.loads(stored)]


async def _error(send, api: str, message: str, status: int = 502) -> None:
    """An error in the API's own shape: 502 upstream unreachable, 400 a target capsule refuses, 413 a
    body over the byte cap."""
    kind, code, google = ERRORS[status]
    if api == "anthropic":
        payload = {"type": "error", "error": {"type": kind, "message": message}}
    elif api == "gemini":
        payload = {"error": {"code": status, "message": message, "status": google}}
    else:
        payload = {"error": {"type": "server_error" if status >= 500 else "invalid_request_error",
                             "message": message, "param": None, "code": code}}
    data = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})
