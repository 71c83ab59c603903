"""QUOTA: the account's rate-limit windows, read from the headers the proxy sees on every response.

Per account and window: utilization (0-1), status, reset time, burn rate, projected exhaustion,
and each session's share (the utilization rises its own responses carried). Anthropic unified
(`anthropic-ratelimit-unified-*`, subscription logins), Anthropic classic (`anthropic-ratelimit-
{requests,tokens,input-tokens,output-tokens}-*`, API keys), OpenAI (`x-ratelimit-*`), and Codex
rollout `rate_limits` events (read with the rollout: measure/transcripts/codex_transcript.py). Acting on it:
route/governor.py.
The samples are stored through capsule/store/quota_rows.py.
Invariant: only what the headers say is stored (never a credential: the account is a hash of
it); a header that does not parse is skipped, never guessed; a number from outside is finite and
in range before it is stored (capsule.ground.numbers: nan, inf, 1e300 or a 400-digit reset are "does
not parse"), and rows stored before that rule are skipped on read; a read is bounded (the newest
READ_ROWS samples at most; the retention pass keeps a month); the same samples give the same model.
"""

from __future__ import annotations

import os
import re
import time
from datetime import datetime

from blake3 import blake3

from capsule.ground.errors import UserError
from capsule.ground.numbers import bounded
from capsule.policy.manifest import ManifestError
from capsule.store.quota_rows import (MAX_UTILIZATION, QUOTA_DB, READ_ROWS, TIME_MAX,  # noqa: F401 - the rows' API
                                      QuotaStore, Sample)

UNIFIED = "anthropic-ratelimit-unified-"
CLASSIC = re.compile(r"^anthropic-ratelimit-(requests|tokens|input-tokens|output-tokens)-(limit|remaining|reset)$")
OPENAI = re.compile(r"^x-ratelimit-(limit|remaining|reset)-(requests|tokens)$")
BURN_SAMPLES = 12          # burn rate: the slope over the window's last N samples
MAX_COUNT = 1e15           # requests / tokens a limit or a remainder can name
MAX_STATUS = 40            # a status is a word ("allowed_warning"); a longer header is cut


def account_of(api: str, headers: dict[str, str]) -> tuple[str, str]:
    """(account, regime) from the request's credential: a hash, never the credential itself."""

    key = headers.get("x-api-key") or ""
    auth = headers.get("authorization") or ""
    token = key or auth.removeprefix("Bearer ").strip()
    if not token:
        return f"{api}:anonymous", "unknown"
    regime = "api_key"
    if auth and not key and api == "anthropic" and token.startswith("sk-ant-oat"):
        regime = "subscription"       # an OAuth token: a Claude subscription login
    return f"{api}:{blake3(token.encode()).hexdigest()[:12]}", regime


def _num(v: str | None, lo: float = 0.0, hi: float = MAX_COUNT) -> float | None:
    return None if v is None else bounded(v, lo, hi)


def _status(v: str | None) -> str | None:
    return v[:MAX_STATUS] if isinstance(v, str) else None


def parse_when(v: str | None, now: float) -> float | None:
    """Epoch seconds, an RFC 3339 time, or an OpenAI duration (`6m0s`, `1.5s`, `20ms`)."""
    if not isinstance(v, str) or len(v) > 64:
        return None
    n = _num(v, -TIME_MAX, TIME_MAX)
    if n is not None:
        return bounded(n if n > 1e9 else now + n, 0.0, TIME_MAX)
    try:
        return bounded(datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp(), 0.0, TIME_MAX)
    except (ValueError, OverflowError, OSError):
        pass
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", v)
    if parts and "".join(a + b for a, b in parts) == v:
        return bounded(now + sum(float(a) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[u] for a, u in parts),
                       0.0, TIME_MAX)
    return None


def from_headers(api: str, headers: dict[str, str], account: str, regime: str, session: str | None,
                 now: float | None = None) -> list[Sample]:
    """Every window a response's headers describe (lower-case names)."""
    now = time.time() if now is None else now
    h = {k.lower(): v for k, v in headers.items()}
    out: list[Sample] = []
    overall = h.get(UNIFIED + "status")
    windows = sorted({k[len(UNIFIED):].rsplit("-", 1)[0] for k in h
                      if k.startswith(UNIFIED) and k.endswith("-utilization")})
    for w in windows:
        u = _num(h.get(f"{UNIFIED}{w}-utilization"), 0.0, MAX_UTILIZATION)
        if u is None:
            continue
        out.append(Sample(now, account, "subscription", api, w[:MAX_STATUS], u,
                          _status(h.get(f"{UNIFIED}{w}-status") or overall),
                          parse_when(h.get(f"{UNIFIED}{w}-reset"), now), session))
    if out:
        return out
    classic: dict[str, dict[str, str]] = {}
    for k, v in h.items():
        m = CLASSIC.match(k) if api == "anthropic" else OPENAI.match(k)
        if m:
            kind, field = (m.group(1), m.group(2)) if api == "anthropic" else (m.group(2), m.group(1))
            classic.setdefault(kind, {})[field] = v
    for kind, f in sorted(classic.items()):
        limit, remaining = _num(f.get("limit")), _num(f.get("remaining"))
        if not limit or remaining is None:
            continue
        u = min(max(1.0 - remaining / limit, 0.0), 1.0)
        out.append(Sample(now, account, regime if regime != "unknown" else "api_key", api, kind, u,
                          "rejected" if remaining <= 0 else "allowed", parse_when(f.get("reset"), now), session))
    return out


def model(samples: list[Sample], now: float | None = None) -> dict:
    """The quota picture: `windows` (latest per account+window, burn rate, projection) and
    `sessions` (share of each window's rise since the first sample of its current period)."""
    now = (samples[-1].ts if samples else time.time()) if now is None else now
    by: dict[tuple[str, str], list[Sample]] = {}
    for s in samples:
        by.setdefault((s.account, s.window), []).append(s)
    windows, shares = [], {}
    for (account, name), rows in sorted(by.items()):
        last = rows[-1]
        period = [r for r in rows if r.resets_at == last.resets_at] if last.resets_at else rows
        tail = period[-BURN_SAMPLES:]
        span = tail[-1].ts - tail[0].ts
        burn = (tail[-1].utilization - tail[0].utilization) / span * 3600 if span > 0 else None
        projected = None
        if burn and burn > 0 and last.utilization < 1:
            at = last.ts + (1 - last.utilization) / burn * 3600
            projected = at if not last.resets_at or at < last.resets_at else None
        elif last.utilization >= 1:
            projected = last.ts
        rise: dict[str, float] = {}
        for prev, cur in zip(period, period[1:]):
            if cur.utilization > prev.utilization:
                rise[cur.session or "(unknown)"] = rise.get(cur.session or "(unknown)", 0.0) + cur.utilization - prev.utilization
        total = sum(rise.values())
        for sess, r in rise.items():
            shares.setdefault(sess, {})[f"{account}/{name}"] = round(r / total, 4) if total else 0.0
        windows.append({"account": account, "regime": last.regime, "api": last.api, "name": name,
                        "utilization": round(last.utilization, 4), "status": last.status, "resets_at": last.resets_at,
                        "burn_per_hour": round(burn, 4) if burn is not None else None,
                        "projected_exhausted_at": projected, "samples": len(rows), "updated": last.ts})
    sessions = [{"session": s, "share": round(sum(v.values()) / len(v), 4), "by_window": v}
                for s, v in sorted(shares.items())]
    regimes = sorted({w["regime"] for w in windows})
    return {"regime": regimes[0] if len(regimes) == 1 else ("mixed" if regimes else "unknown"),
            "windows": windows, "sessions": sessions, "now": now}


def peak(q: dict, account: str | None = None) -> tuple[float, dict | None]:
    """The fullest window (of one account, or any): what the degrade threshold is compared with."""
    best, found = 0.0, None
    for w in q["windows"]:
        if account and w["account"] != account:
            continue
        if w["utilization"] >= best:
            best, found = w["utilization"], w
    return best, found


def picture(role_arg: str | None = None, now: float | None = None) -> dict:
    """The quota model of every stored sample; with a role (or $JACKIN_CTX_ROLE), its spend budget's
    windows from the cost engine too (`capsule ctx quota`). A bad role raises UserError (one line)."""
    store = QuotaStore()
    try:
        q = model(store.samples(), now=now)
    finally:
        store.close()
    role = role_arg or os.environ.get("JACKIN_CTX_ROLE")
    if role:
        from capsule.route import governor  # noqa: PLC0415 - bench_startup "capsule ctx report"

        try:
            q["windows"] += governor.budget_windows(role, now or time.time(), regime=q["regime"])
        except ManifestError as exc:        # a bad role is the user's input: one line, exit 2
            raise UserError(str(exc)) from None
    return q
