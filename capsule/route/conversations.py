"""The route side of the API door: conversations, their first request, quota headers and 429 answers.

Sees which request opens a conversation (a session, a subagent, a conversation after /clear or a
compaction), classifies it (main, plan, explore, subagent, background), asks the governor for its
lane at that boundary and holds the answer for the whole conversation; reads the rate-limit
headers of every response into the quota store; turns a 429/rejected into one line for the user.
Not responsible for forwarding (proxy/app.py) or deciding (route/governor.py).
Invariant (INV-9): a model or effort is chosen only on a conversation's first request and every
later request of it is sent with the same one; what the client itself changes mid-conversation
(the user's /model) passes and is logged as the user's, never capsule's. Every fault: no change.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from datetime import datetime, timezone

from blake3 import blake3

from capsule.ground import paths
from capsule.ground.wire_json import serialize
from capsule.measure.usage import UsageStore
from capsule.route import governor, subagents
from capsule.route.governor import spend_windows
from capsule.route.lanes import client_effort
from capsule.route.quota import account_of, from_headers, model, parse_when, peak
from capsule.store.quota_rows import QUOTA_DB, QuotaStore
from capsule.store.route_rows import RouteLog

log = logging.getLogger("capsule.proxy")

BILLING_PREFIX = "x-anthropic-billing-header"
SUBAGENT_MARK = "cc_is_subagent=true"
MAX_CONVERSATIONS = 4096


@dataclass
class Conversation:
    key: str
    session: str
    task_class: str
    requests: int = 0
    pin_model: str | None = None        # what capsule sends instead of the client's choice (first request on)
    pin_effort: str | None = None
    client_model: str | None = None     # the client's own last choice
    client_effort: str | None = None
    sent: tuple = ()
    changes: list = field(default_factory=list)


def _system_text(body: dict) -> str:
    sys_ = body.get("system")
    if isinstance(sys_, str):
        return sys_
    if isinstance(sys_, list):
        return "\n".join(b.get("text", "") for b in sys_ if isinstance(b, dict)
                         and not str(b.get("text", "")).startswith(BILLING_PREFIX))
    return ""


def _billing(body: dict) -> str:
    sys_ = body.get("system")
    if isinstance(sys_, list) and sys_ and isinstance(sys_[0], dict):
        text = str(sys_[0].get("text", ""))
        return text if text.startswith(BILLING_PREFIX) else ""
    return ""


def effort_of(api: str, body: dict) -> str | None:
    if api == "anthropic":
        oc = body.get("output_config")
        return oc.get("effort") if isinstance(oc, dict) and isinstance(oc.get("effort"), str) else None
    r = body.get("reasoning")
    return r.get("effort") if isinstance(r, dict) and isinstance(r.get("effort"), str) else None


def thread_key(api: str, session: str, body: dict) -> str:
    """One conversation: its session plus what it opened with (system prompt and first message);
    subagents share their parent's session id, /clear and compaction open with new messages."""

    if api == "anthropic":
        first = _unmarked((body.get("messages") or [None])[0])
        seed = _system_text(body).encode() + b"\0" + serialize(first)
    else:
        first = next((i for i in body.get("input") or [] if isinstance(i, dict) and i.get("role") == "user"), None)
        seed = str(body.get("instructions") or "").encode() + b"\0" + serialize(first)
    return f"{session}/{blake3(seed).hexdigest()[:16]}"


def _unmarked(msg):
    """A message without its cache_control markers: the client moves them along the conversation
    (Claude Code 2.1.197 marks the first user message on call 1 only), the content stays."""
    if not isinstance(msg, dict) or not isinstance(msg.get("content"), list):
        return msg
    return {**msg, "content": [{k: v for k, v in b.items() if k != "cache_control"} if isinstance(b, dict) else b
                               for b in msg["content"]]}


def classify(api: str, body: dict, definitions: dict[str, dict]) -> str:
    """Which task class a conversation's first request belongs to."""
    tools = body.get("tools")
    if api == "anthropic":
        system = _system_text(body)
        if SUBAGENT_MARK in _billing(body):
            for cls, d in definitions.items():
                prompt = d.get("prompt") or ""
                if prompt and prompt[:200] in system:
                    return cls
            return "subagent"
        if not tools:
            return "background"
        return "main"
    if not tools or "CONTEXT CHECKPOINT COMPACTION" in json.dumps(body.get("input") or [])[:200000]:
        return "background"
    return "main"


def _is_new_prompt(api: str, body: dict) -> bool:
    """The last message is the user's own text (not a tool result): a new prompt after a finished turn."""
    if api != "anthropic":
        items = [i for i in body.get("input") or [] if isinstance(i, dict)]
        return bool(items) and items[-1].get("role") == "user"
    msgs = body.get("messages") or []
    if not msgs or not isinstance(msgs[-1], dict) or msgs[-1].get("role") != "user":
        return False
    content = msgs[-1].get("content")
    if isinstance(content, str):
        return True
    return isinstance(content, list) and not any(isinstance(c, dict) and c.get("type") == "tool_result" for c in content)


class RouteSide:
    """One per proxy. `table` is the session's lane table (None: routing off, quota still read)."""

    def __init__(self, state_dir: Path, table=None, agent_kind: str | None = None):
        self.state_dir = Path(state_dir)
        self.table, self.agent_kind = table, agent_kind
        self.conversations: dict[str, Conversation] = {}
        self._lock = threading.Lock()
        self._log = None
        self._quota = None
        self._noticed: set = set()
        self.stats = {"conversations": 0, "pinned": 0, "degraded": 0, "user_changes": 0, "capsule_changes": 0,
                      "rejected": 0}
        defs = {}
        if table is not None and agent_kind == "claude":
            try:
                defs = {cls: subagents.templates()[cls] for cls in subagents.templates()}
            except Exception:  # noqa: BLE001
                defs = {}
        self.definitions = defs

    # ---- stores --------------------------------------------------------------------------------
    def route_log(self):
        if self._log is None:
            self._log = RouteLog(self.state_dir / paths.LEDGER_DB)
        return self._log

    def quota_store(self):
        if self._quota is None:
            self._quota = QuotaStore(self.state_dir / QUOTA_DB)
        return self._quota

    def utilization(self, account: str | None, regime: str = "unknown",
                    session: str | None = None) -> tuple[float, str | None]:
        """The fullest window of this account; with an API key and a role budget, the cost
        engine's spend windows (today, this session) count as windows too."""
        try:
            q = model(self.quota_store().samples(time.time() - 8 * 86400))
            u, w = peak(q, account)
            t = self.table
            if t is not None and regime != "subscription" and (t.budget_usd_day or t.budget_usd_session):
                for sw in spend_windows(t.budget_usd_day, t.budget_usd_session, regime=regime, session=session,
                                        usage_db=self.state_dir / paths.USAGE_DB):
                    if sw["utilization"] >= u:
                        u, w = sw["utilization"], sw
            return u, (w or {}).get("name")
        except Exception as exc:  # noqa: BLE001 - no quota known: no degrade
            log.debug("quota read failed: %r", exc)
            return 0.0, None

    def recorded_calls(self) -> list[dict] | None:
        """The last 30 days of recorded calls: what a lane change is priced on (route/payoff.py)."""
        try:
            store = UsageStore(self.state_dir / paths.USAGE_DB)
            try:
                return store.calls(since=time.time() - 30 * 86400)
            finally:
                store.close()
        except Exception as exc:  # noqa: BLE001 - no history: the change is not priced
            log.debug("usage read failed: %r", exc)
            return None

    # ---- request side ----------------------------------------------------------------------------
    def on_request(self, api: str, body: dict, session: str, headers: dict[str, str]) -> bool:
        """Note the request; apply the conversation's pin. True when `body` was changed."""
        key = thread_key(api, session, body)
        model, effort = body.get("model"), effort_of(api, body)
        account, regime = account_of(api, headers)
        with self._lock:
            conv = self.conversations.get(key)
            first = conv is None
            if first:
                if len(self.conversations) >= MAX_CONVERSATIONS:
                    self.conversations.pop(next(iter(self.conversations)))
                conv = Conversation(key, session, classify(api, body, self.definitions))
                self.conversations[key] = conv
                self.stats["conversations"] += 1
            conv.requests += 1
        if first:
            self._boundary(conv, api, body, account, "conversation start", regime)
        elif _is_new_prompt(api, body):
            self._event("boundary", conv, "user prompt after a finished turn", {"request": conv.requests})
        client_changed = not first and (model != conv.client_model or effort != conv.client_effort)
        if client_changed:
            # The client moved inside its conversation (the user's /model or /effort): theirs passes.
            conv.changes.append({"request": conv.requests, "from": [conv.client_model, conv.client_effort],
                                 "to": [model, effort]})
            self.stats["user_changes"] += 1
            conv.pin_model = conv.pin_effort = None
            self._event("change", conv, "model/effort changed by the client inside its conversation",
                        {"request": conv.requests, "from": {"model": conv.client_model, "effort": conv.client_effort},
                         "to": {"model": model, "effort": effort}}, source="user")
        conv.client_model, conv.client_effort = model, effort
        changed = False
        if conv.pin_model and conv.pin_model != model:
            body["model"] = conv.pin_model
            changed = True
        if conv.pin_effort and effort and conv.pin_effort != effort:
            if api == "anthropic":
                body["output_config"] = {**body["output_config"], "effort": conv.pin_effort}
            else:
                body["reasoning"] = {**body["reasoning"], "effort": conv.pin_effort}
            changed = True
        sent = (body.get("model"), effort_of(api, body))
        if conv.sent and sent != conv.sent and not client_changed:
            self.stats["capsule_changes"] += 1      # never expected; the audit would show it
            self._event("change", conv, "capsule sent another model/effort inside a conversation",
                        {"request": conv.requests, "from": list(conv.sent), "to": list(sent)}, source="capsule")
        conv.sent = sent
        return changed

    def _boundary(self, conv: Conversation, api: str, body: dict, account: str, what: str,
                  regime: str = "unknown") -> None:
        self._event("boundary", conv, what, {"model": body.get("model"), "effort": effort_of(api, body)})
        if self.table is None:
            return
        u, window = self.utilization(account, regime, conv.session)
        calls = self.recorded_calls() if u >= self.table.degrade_at else None
        choice = governor.choose(self.table, conv.task_class, u, window, calls)
        lane = choice.lane
        role_model = lane.model if (choice.degraded or lane.model_from.startswith("role")) else None
        # A read-only class already carries its lane's pins (the --agents definitions), the main lane
        # its launch flags: the proxy steps in only where nothing else did (general subagents) or to degrade.
        wanted = role_model if (choice.degraded or conv.task_class == "subagent") else None
        if wanted and wanted != body.get("model"):
            conv.pin_model = wanted
            self.stats["pinned"] += 1
        if choice.degraded and lane.effort and effort_of(api, body) and lane.effort != effort_of(api, body):
            conv.pin_effort = client_effort(self.agent_kind or "claude", lane.effort)
        self.stats["degraded"] += choice.degraded
        self._event("decision", conv, choice.reason,
                    {"degraded": choice.degraded, "utilization": u, "window": window,
                     "requested": {"model": body.get("model"), "effort": effort_of(api, body)},
                     "sent": {"model": conv.pin_model or body.get("model"),
                              "effort": conv.pin_effort or effort_of(api, body)},
                     **({"payoff": choice.payoff} if choice.payoff else {})})

    def _event(self, kind: str, conv: Conversation, reason: str, detail: dict, source: str = "proxy") -> None:
        try:
            self.route_log().record(kind, session=conv.session, conversation=conv.key, task_class=conv.task_class,
                                    source=source, reason=reason, detail=detail)
        except Exception as exc:  # noqa: BLE001 - logging never blocks the request
            log.debug("route log failed: %r", exc)

    # ---- response side ---------------------------------------------------------------------------
    def on_response(self, api: str, status: int, resp_headers: dict[str, str], req_headers: dict[str, str],
                    session: str | None) -> bool:
        """Quota samples from the headers; True when the answer is a rate-limit rejection."""

        account, regime = account_of(api, req_headers)
        try:
            samples = from_headers(api, resp_headers, account, regime, session)
            self.quota_store().add(samples)
        except Exception as exc:  # noqa: BLE001
            samples = []
            log.debug("quota store failed: %r", exc)
        h = {k.lower(): v for k, v in resp_headers.items()}
        rejected = status == 429 or h.get("anthropic-ratelimit-unified-status") == "rejected"
        if rejected:
            self.stats["rejected"] += 1
            try:
                self._notice(api, account, samples, h, session)
            except Exception as exc:  # noqa: BLE001 - the line is lost, the no-retry answer is not
                log.warning("capsule: %s rate limit reached; not retrying (%s)", api, type(exc).__name__)
        return rejected

    def _notice(self, api: str, account: str, samples, h: dict[str, str], session: str | None) -> None:
        """One line per account, window and reset. Whatever the upstream's numbers say (1e30, nan,
        a reset before 1970), the line is printed and the answer stays marked rejected: the
        caller's x-should-retry: false is the retry-storm protection, it must not depend on them."""
        full = max(samples, key=lambda s: s.utilization, default=None)
        reset = (full.resets_at if full else None) or parse_when(h.get("anthropic-ratelimit-unified-reset")
                                                           or h.get("retry-after"), time.time())
        try:
            when = datetime.fromtimestamp(reset, timezone.utc).strftime("%H:%M UTC") if reset else "an unknown time"
        except (OverflowError, OSError, ValueError):   # parse_when bounds it; a Sample built elsewhere might not
            reset, when = None, "an unknown time"
        window = f"{full.window} window at {100 * full.utilization:.0f}%" if full else "rate limit"
        key = (account, window, round(reset or 0))
        with self._lock:
            if key in self._noticed:
                return
            self._noticed.add(key)
        line = f"capsule: {api} rate limit reached ({window}); it resets at {when}. Not retrying until then."
        log.warning(line)
        try:
            self.route_log().record("notice", session=session, source="proxy", reason=line,
                                    detail={"resets_at": reset, "window": full.window if full else None})
        except Exception:  # noqa: BLE001
            pass

    def close(self) -> None:
        for s in (self._log, self._quota):
            if s is not None:
                try:
                    s.close()
                except Exception:  # noqa: BLE001
                    pass
