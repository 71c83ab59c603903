"""The subsystems the supervisor runs next to the agent: the warm engine, the control socket kept
listening, the proxy door, the workspace index warm-up, usage ingestion with retention, and the
quota check at session start. Each is started (or skipped) by the plan (policy/plan.py) in core.py.

Not responsible for the agent's process (pid1.py) or its command line (core.py, launch.py).
Invariant: every function here fails open: an error is logged and reported, never raised into the
supervisor, so a broken subsystem means raw output or no measurement, never a dead agent.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio

from capsule.ground import paths
from capsule.policy.manifest import Role

log = logging.getLogger("capsule.supervisor")

PRUNE_INTERVAL_S = 600.0  # the stores' retention passes (capsule.store.retention), at most this often


def warm_engine(state_dir: Path, mode: str, role: Role):
    """An Engine with the role's filters set, warmed (Engine.warm: the whole tokenizer, its stores
    open): the shims' first command pays none of it (what the pipeline loads on first use comes
    after, EngineServer.rehearse). Raises what the engine raises (core.py fails open)."""
    from capsule.engine import Engine  # noqa: PLC0415 - heavy import, only when the engine is on
    from capsule.observe.filters import filter_engine as filter_engine  # noqa: PLC0415

    engine = Engine(state_dir, mode=mode, languages=role.context.languages)
    # Role filter files are named relative to the manifest; their pins come from it.
    filter_engine.set_role_filters([{**e, "path": str(role.path.parent / e["path"])}
                                    for e in role.context.filters_extra])
    engine.defer = True     # the server records after its reply is written (control_server.py)
    engine.warm()
    return engine


async def serve_forever(server) -> None:
    """The control socket, for as long as the agent runs: if serving ever fails, listen again
    (shims fall back to raw meanwhile); the supervisor never exits before its agent."""
    while True:
        try:
            await server.serve()
            return
        except Exception as exc:  # noqa: BLE001
            log.error("control socket failed (%r); listening again", exc)
        while True:
            await anyio.sleep(0.5)
            try:
                await server.listen()
                break
            except Exception as exc:  # noqa: BLE001
                log.error("control socket cannot listen (%r); shims pass raw output", exc)


_UPSTREAM = {"claude": "anthropic_upstream", "opencode": "anthropic_upstream", "gemini": "gemini_upstream"}


def start_proxy(*, kind: str, env: dict[str, str], state_dir: Path, mode: str, shims_on: bool, role: Role,
                workspace: Path, routing, hooks_on: bool = False):
    """The proxy door for the agent's client -> (ProxyServer or None, Redirect or None, info for
    doctor). If it cannot start, the agent keeps its own base URL and the info says why."""
    from capsule.agents import clients  # noqa: PLC0415 - the index warm-up child imports this module too

    if clients.get(kind) is None:
        # No described client, no model API to redirect: the proxy's stack (httpx2, its apps: ~100 ms
        # of CPU, in a thread beside the warming engine) is not loaded at all.
        log.info("proxy not used: agent kind %s has no known model API", kind)
        return None, None, {"state": "not used", "reason": f"agent kind {kind} has no known model API"}
    try:
        from capsule.proxy import redirect  # noqa: PLC0415
        from capsule.proxy.app import Settings  # noqa: PLC0415
        from capsule.proxy.proxy_server import ProxyServer, redact  # noqa: PLC0415
        from capsule.route.stagger import settings_from  # noqa: PLC0415

        target = redirect.upstream(kind, env, workspace)
        if target.skip:
            log.info("proxy not used: %s", target.skip)
            return None, None, {"state": "not used", "reason": target.skip}
        settings = Settings(state_dir=state_dir, mode=mode, shims_on=shims_on, hooks_on=hooks_on,
                            languages=role.context.languages, media=dict(role.context.media),
                            workspace=workspace, routing=routing, agent_kind=kind,
                            stagger=settings_from((role.context.routing or {}).get("stagger") or {}),
                            **{_UPSTREAM.get(kind, "openai_upstream"): target.upstream})
        proxy = ProxyServer(settings).start()
        redirect = redirect.redirect(target, proxy.url, proxy.openai_url)
        log.info("proxy on %s for %s (upstream %s)", proxy.url, kind, redact(target.upstream))
        return proxy, redirect, {"state": "running", "url": proxy.url, "agent": kind,
                                 "upstream": redact(target.upstream)}
    except Exception as exc:  # noqa: BLE001 - no proxy means the agent's normal base URL
        log.error("proxy failed to start (%r); the agent uses its own base URL", exc)
        return None, None, {"state": "failed", "reason": f"could not start: {exc}"}


def warm_index(root: Path) -> None:
    """Build or refresh the workspace search index while the agent starts (core.py calls it once
    the engine serves), so its first ctx_search finds a warm index on disk. In a child process at
    low priority, not a thread: a build is seconds of CPU-bound Python that, beside the control
    socket in this process, held the GIL against every shim's round trip (up to 5 ms per hand-off,
    several per request: bench_shim's door column). pid1 reaps it; it dies with the supervisor; an
    interrupted build leaves only uncommitted segments, which tantivy discards."""
    try:
        subprocess.Popen([sys.executable, "-c", "from capsule.supervisor import subsystems as s; s.build_index()",
                          str(root)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, close_fds=True)
        log.info("workspace index warm-up started: %s", root)
    except OSError as exc:      # the MCP server builds on demand instead
        log.warning("workspace index warm-up failed to start: %r", exc)


def build_index() -> None:
    """The warm-up child (warm_index): sys.argv[1] is the workspace; it logs to the supervisor's log."""
    from capsule.retrieve.index import WorkspaceIndex  # noqa: PLC0415
    from capsule.supervisor.log_setup import setup_logging  # noqa: PLC0415

    try:
        os.nice(10)                 # the agent's own start and its commands come first
    except OSError:
        pass
    setup_logging(paths.state_dir())
    try:
        report = WorkspaceIndex(Path(sys.argv[1])).refresh()
        log.info("workspace index warm: %d files (%d indexed) in %.1f s",
                 report.files, report.indexed, report.seconds)
    except Exception as exc:  # noqa: BLE001 - the MCP server builds on demand instead
        log.warning("workspace index warm-up failed: %r", exc)


def ingest_usage(env: dict[str, str], state_dir: Path, budget_s: float) -> None:
    """Read the agent's new transcript lines into the usage store (capsule.measure.ingest);
    its CLAUDE_CONFIG_DIR / CODEX_HOME are the agent's environment's. A pass stops after
    budget_s (the next one goes on from the stored offsets)."""
    try:
        from capsule.measure import ingest  # noqa: PLC0415
        from capsule.store import retention  # noqa: PLC0415

        report = ingest.ingest_default(env=env, budget_s=budget_s)
        retention.prune_all(state_dir, min_interval_s=PRUNE_INTERVAL_S)   # a batch per store, skipped when busy
        if report.errors:
            log.warning("usage ingestion: %s", "; ".join(report.errors[:3]))
    except Exception as exc:  # noqa: BLE001 - measuring must never disturb the agent
        log.warning("usage ingestion failed: %r", exc)


def degrade_at_start(router, state_dir: Path) -> None:
    """The session's start is a boundary: the quota the proxy saw before decides the launch lanes
    (route/governor.py); every choice goes to the ledger's route log with its reason."""
    if not router.enabled or router.table is None:
        return
    try:
        from capsule.route import quota  # noqa: PLC0415
        from capsule.store import route_rows  # noqa: PLC0415
        from capsule.route import policy as route  # noqa: PLC0415

        db = state_dir / quota.QUOTA_DB
        q = {"windows": []}         # no rate-limit headers seen yet: 0%
        if db.exists():
            store = quota.QuotaStore(db)
            try:
                q = quota.model(store.samples(time.time() - 8 * 86400))
            finally:
                store.close()
        now = time.time()
        q["windows"] = [w for w in q["windows"] if not w.get("resets_at") or w["resets_at"] > now]
        u, window = quota.peak(q)
        calls = None
        if u >= router.table.degrade_at and (state_dir / paths.USAGE_DB).exists():
            from capsule.measure.usage import UsageStore  # noqa: PLC0415

            usage = UsageStore(state_dir / paths.USAGE_DB)
            try:
                calls = usage.calls(since=now - 30 * 86400)     # what a change of model is priced on
            finally:
                usage.close()
        choices = route.degrade_at_start(router, u, (window or {}).get("name"), calls)
        rlog = route_rows.RouteLog(state_dir / paths.LEDGER_DB)
        try:
            for cls, ch in choices:
                rlog.record("decision", session=f"supervisor:{os.getpid()}", task_class=cls, source="supervisor",
                            reason="session start: " + ch.reason,
                            detail={"degraded": ch.degraded, "utilization": u, "window": (window or {}).get("name"),
                                    "sent": {"model": ch.lane.model, "effort": ch.lane.effort},
                                    **({"payoff": ch.payoff} if ch.payoff else {})})
        finally:
            rlog.close()
    except Exception as exc:  # noqa: BLE001 - no quota known: the role's lanes as written
        log.warning("quota at session start unknown (%r); the role's lanes apply", exc)
