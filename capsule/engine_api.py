"""The engine's entry for what the API door sees besides tool results: each conversation's route, the
spawn stagger, the upstream's usage of each call, and the memo of what the door sent.

The proxy door hands in what it read off the wire (the parsed body, headers, the upstream's usage
numbers) and calls these; the decisions and the rows they write live below the engine: route/
conversations.py (boundaries, the pin held for a conversation, quota samples, 429 notices; route and
quota rows through the store), route/stagger.py (who waits for whose cache write), measure/usage.py
(one usage row per call), store/conversation_memo.py (proxy.db). Not responsible for HTTP, for tool results (Engine.observe) or for media
(engine_media.py). Invariant: the door imports this module and ground only for these concerns
(docs/layers.toml [must_not_import]); each call here fails open exactly as the module it reaches.
"""

from __future__ import annotations

from pathlib import Path

from capsule.ground import paths
from capsule.measure.usage import UsageStore, record_usage
from capsule.store.conversation_memo import Memo
from capsule.route.conversations import RouteSide
from capsule.route.stagger import Settings as StaggerSettings
from capsule.route.stagger import Stagger, prefix_key, settings_from


def route_side(state_dir: Path, table=None, agent_kind: str | None = None) -> RouteSide:
    """One per proxy: notes each request (on_request) and response (on_response) of every conversation."""
    return RouteSide(Path(state_dir), table, agent_kind)


def stagger(settings: StaggerSettings | None = None) -> Stagger:
    """The proxy's same-prefix hold (settings: the role's [context.routing.stagger]; None: the defaults)."""
    return Stagger(settings or settings_from({}))


def stagger_key(api: str, body: dict, min_chars: int) -> str | None:
    """The fan-out prefix a request shares with its siblings, or None when too short to wait for."""
    return prefix_key(api, body, min_chars)


def conversation_memo(state_dir: Path) -> Memo:
    """The proxy's memo of each block's rewrite (proxy.db in the state dir): get/put, first writer wins."""
    return Memo(Path(state_dir) / paths.PROXY_DB)


def usage_store(state_dir: Path) -> UsageStore:
    """The usage store beside the ledger: the proxy keeps one open and records every call into it."""
    return UsageStore(Path(state_dir) / paths.USAGE_DB)


def record_call(session: str, agent: str, model: str | None, call_id: str, store: UsageStore | None = None,
                **buckets) -> None:
    """One API call's usage as the upstream counted it (source "proxy": ground truth); see
    measure/usage.py:record_usage for the buckets and the once-per-call rule."""
    record_usage(session, agent, model, call_id, source="proxy", store=store, **buckets)
