"""The supervisor's orchestration around its PID-1 core (supervisor/pid1.py): registration, the
engine behind the control socket, the proxy, the warm index, usage ingestion, the agent's launch.

Not responsible for reaping, signals or the exit status (pid1.py), for deciding what runs
(policy/plan.py) or for compression (capsule.engine). Invariant: a subsystem that fails to start
is reported in STATUS and never stops the agent; the exit status is the agent's.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from capsule import __version__
from capsule.ground import paths
from capsule.ground import switches
from capsule.policy.manifest import Role
from capsule.prompt import pack, record
from capsule.route import policy as route
from capsule.route import subagents
from capsule.policy import plan as planning
from capsule.supervisor import server
from capsule.supervisor.pid1 import DEFAULT_GRACE_S, FORWARDED, Pid1
from capsule.supervisor.server import EngineServer

log = logging.getLogger("capsule.supervisor")

USAGE_INTERVAL_S = 30.0   # transcript ingestion while the agent runs ($JACKIN_CTX_USAGE_INTERVAL)
USAGE_BUDGET_S = 20.0     # one such pass, at most
PRUNE_INTERVAL_S = 600.0  # the stores' retention passes (capsule.store.retention), at most this often
FINAL_INGEST_S = 5.0      # the pass after the agent exits: its status is returned by then, whatever is left


@dataclass
class Options:
    role: Role
    command: list[str] | None = None          # None: the role's agent
    shim_dir: Path | None = None              # shims first on PATH when shims are on
    grace_s: float = DEFAULT_GRACE_S
    workdir: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    session_config: bool = False              # `up --local`: configure the agent per session, write no user file


def agent_kind(role: Role, command: list[str] | None) -> str:
    if not command:
        return role.agent.kind
    base = os.path.basename(command[0])
    return base if base in ("claude", "codex") else "shell"


def _contract_in_subagents() -> None:
    """The subagent definitions capsule generates (route/subagents.py) carry the prompt layer's
    report contract (prompt/pack.py): wired here, above both layers. Idempotent."""
    if pack.extend_definition not in subagents.EXTENSIONS:
        subagents.EXTENSIONS.append(pack.extend_definition)


class Supervisor:
    def __init__(self, opts: Options):
        self.opts = opts
        self.role = opts.role
        self.switches = switches.Switches.read()
        self.plan = planning.plan(self.role, self.switches)
        self.mode = planning.effective_mode(self.role, self.switches)
        kind = agent_kind(self.role, opts.command)
        self.prompt_run: str | None = None
        self._standing: str | bool | None = None
        if self.plan["register"].on:
            _contract_in_subagents()
        # A command for another client than the role's (a codex command under a claude role) gets
        # no lanes: the role's models are another API's.
        self.router = route.router_for(self.role, enabled=self.plan["routing"].on and kind == self.role.agent.kind,
                                       kind=kind,
                                       env={**os.environ, **self.role.agent.env, **opts.env},
                                       argv=list(opts.command or self.role.agent.command))
        self.state_dir = paths.state_dir()
        self._degrade_at_start()
        self.conflicts = _probe_conflicts() if self.plan["shims"].on else []
        if self.conflicts:  # INV-8: one shell-rewrite path; capsule steps back and says why
            self.plan["shims"] = planning.Decision("shims", False, f"conflict (INV-8): {self.conflicts[0]}")
        self.socket_path = paths.socket_path()
        if self.socket_path.exists() and server.ping(self.socket_path, 0.3):
            # Another live supervisor owns this state dir's socket (two `up --local` sessions): keep
            # it, serve our own next to it; the agent finds ours through $JACKIN_CTX_SOCKET.
            self.socket_path = self.socket_path.with_name(f"engine-{os.getpid()}.sock")
        self.pid1 = Pid1(opts.grace_s)
        self.started = time.monotonic()
        self.ready_s: float | None = None
        self.engine = None
        self.server: EngineServer | None = None
        self.registration: dict[str, str] = {}
        self.proxy = None                          # capsule.proxy.server.ProxyServer when running
        self.proxy_info: dict = {}                 # what doctor shows: url and upstream, or why not
        self.redirect = None                       # capsule.proxy.clients.Redirect for the agent
        self.session_dir: Path | None = None

    # ---- lifecycle -------------------------------------------------------------------
    def run(self) -> int:
        return anyio.run(self._main)

    @property
    def agent_pid(self) -> int | None:
        return self.pid1.agent_pid

    async def _main(self) -> int:
        self.pid1.prepare()
        async with anyio.create_task_group() as tg:
            with anyio.open_signal_receiver(*FORWARDED, signal.SIGCHLD) as signals:
                self._register_agents()  # before the socket answers: "ready" means configured
                if self.plan["engine"].on:
                    await self._start_engine()
                    tg.start_soon(self._serve_engine)
                if self.plan["proxy"].on:
                    await anyio.to_thread.run_sync(self._start_proxy)
                self.ready_s = time.monotonic() - self.started
                log.info("ready in %.0f ms: role=%s mode=%s socket=%s", self.ready_s * 1000,
                         self.role.name, self.mode, self.socket_path if self.server else "-")
                self._spawn_agent()
                self._warm_index()
                tg.start_soon(self.pid1.on_signals, signals)
                tg.start_soon(self.pid1.reap_periodically)
                if self.plan["engine"].on:
                    tg.start_soon(self._ingest_usage_periodically)
                self.pid1.reap()
                await self.pid1.done.wait()
                tg.cancel_scope.cancel()
        if self.plan["engine"].on:  # the agent's last lines: one more pass after it exits, within a budget
            with anyio.move_on_after(FINAL_INGEST_S + 1.0):   # never holds the agent's exit status back
                await anyio.to_thread.run_sync(self._ingest_usage, FINAL_INGEST_S, abandon_on_cancel=True)
        await self.pid1.stop_stragglers()
        if self.server is not None:
            self.server.close()
        if self.proxy is not None:
            self.proxy.stop()
        if self.prompt_run is not None:
            try:
                record.end(self.state_dir, self.prompt_run)
            except Exception:  # noqa: BLE001 - a missing record is "unrecorded" in ctx usage, never a failure
                pass
        if self.session_dir is not None:
            from capsule.agents import session  # noqa: PLC0415

            session.finish(self.session_dir)
        if self.engine is not None:
            try:
                self.engine.close()
            except Exception:  # noqa: BLE001
                pass
        code = self.pid1.exit_status()
        log.info("agent exited with %d", code)
        return code

    async def _start_engine(self) -> None:
        from capsule.engine import Engine  # noqa: PLC0415 - heavy import, only when the engine is on

        def warm():
            engine = Engine(self.state_dir, mode=self.mode, languages=self.role.context.languages)
            engine.defer = True     # the server records after its reply is written (server.py)
            from capsule.observe.filters import engine as filter_engine  # noqa: PLC0415

            # Role filter files are named relative to the manifest; their pins come from it.
            filter_engine.set_role_filters([{**e, "path": str(self.role.path.parent / e["path"])}
                                            for e in self.role.context.filters_extra])
            engine.archive, engine.ledger  # open the stores now, not on the first command
            from capsule.ground import tokens  # noqa: PLC0415
            from capsule.observe.classify import classify  # noqa: PLC0415
            tokens.count("warm up the tokenizer")
            classify("git status", b"")
            return engine

        try:
            self.engine = await anyio.to_thread.run_sync(warm)
        except Exception as exc:  # noqa: BLE001 - a broken engine means raw output, not a dead agent
            log.error("engine failed to start (%r); shims will pass raw output", exc)
            self.engine = None
        self.server = EngineServer(self.socket_path, self.engine, self.status)
        await self.server.listen()

    def _start_proxy(self) -> None:
        """The proxy door, then the agent pointed at it; if it cannot start, the agent keeps its
        own base URL and `doctor` shows why (fail open)."""
        kind = agent_kind(self.role, self.opts.command)
        try:
            from capsule.proxy import clients  # noqa: PLC0415
            from capsule.proxy.app import Settings  # noqa: PLC0415
            from capsule.proxy.server import ProxyServer, redact  # noqa: PLC0415

            target = clients.upstream(kind, self.agent_env())
            if target.skip:
                self.proxy_info = {"state": "not used", "reason": target.skip}
                log.info("proxy not used: %s", target.skip)
                return
            settings = Settings(state_dir=self.state_dir, mode=self.mode, shims_on=self.plan["shims"].on,
                                languages=self.role.context.languages, media=dict(self.role.context.media),
                                workspace=Path(self.opts.workdir or Path.cwd()),
                                routing=self.router.table if self.router.enabled else None, agent_kind=kind,
                                stagger=_stagger_settings(self.role),
                                **({"anthropic_upstream": target.upstream} if kind == "claude"
                                   else {"openai_upstream": target.upstream}))
            self.proxy = ProxyServer(settings).start()
            self.redirect = clients.redirect(target, self.proxy.url, self.proxy.openai_url)
            self.proxy_info = {"state": "running", "url": self.proxy.url, "agent": kind,
                               "upstream": redact(target.upstream)}
            log.info("proxy on %s for %s (upstream %s)", self.proxy.url, kind, redact(target.upstream))
        except Exception as exc:  # noqa: BLE001 - no proxy means the agent's normal base URL
            self.proxy, self.redirect = None, None
            self.proxy_info = {"state": "failed", "reason": f"could not start: {exc}"}
            log.error("proxy failed to start (%r); the agent uses its own base URL", exc)

    async def _serve_engine(self) -> None:
        """The control socket, for as long as the agent runs: if serving ever fails, listen again
        (shims fall back to raw meanwhile); the supervisor never exits before its agent."""
        while True:
            try:
                await self.server.serve()
                return
            except Exception as exc:  # noqa: BLE001
                log.error("control socket failed (%r); listening again", exc)
            while True:
                await anyio.sleep(0.5)
                try:
                    await self.server.listen()
                    break
                except Exception as exc:  # noqa: BLE001
                    log.error("control socket cannot listen (%r); shims pass raw output", exc)

    def _warm_index(self) -> None:
        """Build or refresh the workspace search index while the agent starts, so its first
        ctx_search finds a warm index on disk. A daemon thread: it never delays shutdown, and
        an interrupted build leaves only uncommitted segments, which tantivy discards."""
        if not self.plan["mcp"].on:
            return
        root = Path(self.opts.workdir or Path.cwd())

        def build():
            try:
                from capsule.retrieve.index import WorkspaceIndex  # noqa: PLC0415

                report = WorkspaceIndex(root).refresh()
                log.info("workspace index warm: %d files (%d indexed) in %.1f s",
                         report.files, report.indexed, report.seconds)
            except Exception as exc:  # noqa: BLE001 - the MCP server builds on demand instead
                log.warning("workspace index warm-up failed: %r", exc)

        threading.Thread(target=build, name="capsule-index-warm", daemon=True).start()

    def _ingest_usage(self, budget_s: float = USAGE_BUDGET_S) -> None:
        """Read the agent's new transcript lines into the usage store (capsule.measure.ingest);
        its CLAUDE_CONFIG_DIR / CODEX_HOME are the agent's environment's. A pass stops after
        budget_s (the next one goes on from the stored offsets)."""
        try:
            from capsule.measure import ingest  # noqa: PLC0415

            report = ingest.ingest_default(env=self.agent_env(), budget_s=budget_s)
            from capsule.store import retention  # noqa: PLC0415

            retention.prune_all(self.state_dir, min_interval_s=PRUNE_INTERVAL_S)   # a batch per store, skipped when busy
            if report.errors:
                log.warning("usage ingestion: %s", "; ".join(report.errors[:3]))
        except Exception as exc:  # noqa: BLE001 - measuring must never disturb the agent
            log.warning("usage ingestion failed: %r", exc)

    async def _ingest_usage_periodically(self) -> None:
        try:
            interval = float(os.environ.get(switches.USAGE_INTERVAL) or USAGE_INTERVAL_S)
        except ValueError:
            interval = USAGE_INTERVAL_S
        while True:
            # Sleep first: the agent's start (and the index warm-up) gets the CPU, not us.
            await anyio.sleep(max(interval, 0.1))
            await anyio.to_thread.run_sync(self._ingest_usage, abandon_on_cancel=True)

    def _register_agents(self) -> None:
        """Register capsule's MCP read door with the agent (capsule.agents), when plan and switches allow."""
        kind = agent_kind(self.role, self.opts.command)
        if self.opts.session_config:
            self._prepare_session(kind)
            return
        if not self.plan["register"].on or kind not in ("claude", "codex"):
            return
        try:
            from capsule import agents  # noqa: PLC0415

            # the note goes to the agent's user-level file (its home in the container), not the workspace
            result = agents.register(kind, project=self.opts.workdir or Path.cwd(), env=self.agent_env(), note="user",
                                     note_text=self._standing_text())
            self.registration = {kind: "; ".join(result.lines())}
        except Exception as exc:  # noqa: BLE001 - registration failing must not stop the agent
            log.warning("MCP registration for %s failed: %r", kind, exc)
            self.registration = {kind: f"failed: {exc}"}

    def _prepare_session(self, kind: str) -> None:
        """`up --local`: the agent's MCP server, hooks and note come from its command line and
        files in the state dir (capsule.agents.session); the user's config and repo stay untouched."""
        if kind not in ("claude", "codex"):
            return
        try:
            from capsule.agents import session  # noqa: PLC0415

            self.session_dir = session.prepare(self.state_dir)
            self.registration = {kind: f"session-scoped ({self.session_dir})"
                                 if self.plan["register"].on else self.plan["register"].reason}
        except Exception as exc:  # noqa: BLE001 - configuration failing must not stop the agent
            log.warning("session configuration for %s failed: %r", kind, exc)
            self.registration = {kind: f"failed: {exc}"}
            self.session_dir = None

    def _record_run(self) -> None:
        """Which register this agent run has, for `ctx usage` by register (prompt/record.py)."""
        kind = agent_kind(self.role, self.opts.command)
        if kind not in ("claude", "codex") or not self.plan["register"].on:
            return
        try:
            self.prompt_run = record.start(self.state_dir, agent=kind, cwd=os.getcwd(), role=self.role.name,
                                           output=dict(self.role.context.output), text=self._standing_text() or "")
        except Exception as exc:  # noqa: BLE001
            log.warning("prompt run record failed: %r", exc)

    def _standing_text(self) -> str | None:
        """The role's standing instructions (register pack, prompt/pack.py), made once per run (a
        session start is a task boundary: the codebook is pinned here, never inside it); None on
        failure, when the agent gets the plain read-door note (fail open)."""
        if self._standing is not None:      # False: it failed once; "" is a legitimately empty text
            return None if self._standing is False else self._standing
        try:
            from capsule.prompt import codebook  # noqa: PLC0415 - reads the ledger, only with codebook = true

            legend = ""
            if pack.settings(self.role.context.output)[2]:
                codebook.pin_from_ledger(self.role, self.state_dir)
                legend = codebook.legend(self.role, self.state_dir)
            self._standing = pack.standing_text(self.role.context.output, read_door=self.plan["mcp"].on,
                                                legend=legend)
            return self._standing
        except Exception as exc:  # noqa: BLE001
            log.warning("standing instructions failed: %r; the read-door note alone is sent", exc)
            self._standing = False
            return None

    def _session_argv(self, cmd: list[str]) -> list[str]:
        if self.session_dir is None:
            return cmd
        from capsule import shims  # noqa: PLC0415
        from capsule.agents import session  # noqa: PLC0415

        kind = agent_kind(self.role, self.opts.command)
        try:
            text = self._standing_text()
            if kind == "claude":
                return session.claude_argv(cmd, self.session_dir, self.state_dir, mcp=self.plan["register"].on,
                                           intent=self.plan["engine"].on and self.plan["shims"].on,
                                           python=shims.shim_python(), boundaries=self.plan["engine"].on,
                                           instructions=text)
            if kind == "codex":
                return session.codex_argv(cmd, self.state_dir, self.agent_env(), mcp=self.plan["register"].on,
                                          instructions=text)
        except Exception as exc:  # noqa: BLE001
            log.warning("session flags for %s failed: %r; the agent runs without them", kind, exc)
        return cmd

    # ---- the agent -------------------------------------------------------------------
    def agent_command(self) -> list[str]:
        # The role's lanes apply to the role's agent and to a claude/codex command given on the
        # command line alike; a model or effort the user put there wins (route/policy.py).
        cmd, _ = self.router.launch(list(self.opts.command or self.role.agent.command), {})
        return self._with_proxy_args(cmd)

    def _with_proxy_args(self, cmd: list[str]) -> list[str]:
        if self.redirect is None or not self.redirect.args:
            return cmd
        from capsule.proxy.clients import insert_args  # noqa: PLC0415

        return insert_args(cmd, self.redirect.args)

    def agent_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(self.role.agent.env)
        env.update(self.opts.env)
        env[switches.STATE_DIR] = str(self.state_dir)
        env[switches.MODE] = self.mode
        env[switches.ROLE] = str(self.role.path)
        _, env = self.router.launch([], env)
        if self.plan["engine"].on:
            env[switches.SOCKET] = str(self.socket_path)
        if self.redirect is not None:
            env.update(self.redirect.env)
        shim_dir = str(self.opts.shim_dir) if self.opts.shim_dir else None
        parts = [p for p in env.get("PATH", os.defpath).split(":") if p and p != shim_dir]
        if shim_dir and self.plan["shims"].on:
            parts.insert(0, shim_dir)
        env["PATH"] = ":".join(parts)
        if agent_kind(self.role, self.opts.command) == "codex":
            # Codex's output cap depends on its model; the shims forward this to the engine.
            from capsule.agents import codex  # noqa: PLC0415

            model = codex.model_of(self.agent_command(), env)
            if model:
                env[switches.AGENT_MODEL] = model
        # The marker says "every command is an agent tool call"; Claude Code and Codex mark their
        # own tool calls, and their internal commands must stay raw, so only a shell agent gets it.
        kind = agent_kind(self.role, self.opts.command)
        env.pop(switches.AGENT_OUT, None)  # never inherit another session's "agent's view"
        if kind == "shell":
            env[switches.AGENT_MARKER] = "shell"
        else:
            env.pop(switches.AGENT_MARKER, None)
        if shim_dir and self.plan["shims"].on:
            _agent_view_env(kind, Path(shim_dir), env)
        # INV-1: Claude Code otherwise sends its first request before capsule's MCP server is
        # connected and adds the ctx_* tools from the second on: the tools change mid-session and
        # the whole prompt cache is rewritten (seen with a fake API; tests/measure/test_inv1_prefix.py).
        if kind == "claude" and self.plan["mcp"].on:
            env.setdefault("MCP_CONNECTION_NONBLOCKING", "0")
        return env

    def _spawn_agent(self) -> None:
        cmd = self._session_argv(self.agent_command())
        env = self.agent_env()
        if self.opts.workdir:
            os.chdir(self.opts.workdir)
        self._record_run()
        path = _which(cmd[0], env["PATH"])
        if path is None:
            log.error("agent command not found: %s", cmd[0])
            hint = ""
            if os.path.basename(cmd[0]) in ("claude", "codex"):
                hint = ("; install it (npm install -g @anthropic-ai/claude-code / @openai/codex), or build the "
                        "image with --build-arg AGENT_CLIS=\"@anthropic-ai/claude-code @openai/codex\"")
            print(f"capsule: agent command not found: {cmd[0]}{hint}", file=sys.stderr)
            self.pid1.failed_to_start(127 << 8)
            return
        self.pid1.spawn(path, cmd, env)

    def status(self) -> dict:
        return {
            "version": __version__,
            "pid": os.getpid(),
            "role": self.role.name,
            "role_path": str(self.role.path),
            "mode": self.mode,
            "agent_pid": self.agent_pid,
            "reaped": self.pid1.reaped,
            "uptime_s": round(time.monotonic() - self.started, 3),
            "ready_ms": round((self.ready_s or 0) * 1000, 1),
            "engine": self.engine is not None,
            "subsystems": {k: v.as_dict() for k, v in self.plan.items()},
            "registration": self.registration,
            "conflicts": self.conflicts,
            "proxy": {**self.proxy_info, **({"stats": dict(self.proxy.proxy.stats),
                                             "route": dict(self.proxy.proxy.route.stats)} if self.proxy else {})},
            "state_dir": str(self.state_dir),
            "routing": self.routing_status(),
        }

    def _degrade_at_start(self) -> None:
        """The session's start is a boundary: the quota the proxy saw before decides the launch lanes
        (route/governor.py); every choice goes to the ledger's route log with its reason."""
        if not self.router.enabled or self.router.table is None:
            return
        try:
            from capsule.measure import quota, route_log  # noqa: PLC0415

            db = self.state_dir / quota.QUOTA_DB
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
            choices = route.degrade_at_start(self.router, u, (window or {}).get("name"))
            log = route_log.RouteLog(self.state_dir / paths.LEDGER_DB)
            try:
                for cls, ch in choices:
                    log.record("decision", session=f"supervisor:{os.getpid()}", task_class=cls, source="supervisor",
                               reason="session start: " + ch.reason,
                               detail={"degraded": ch.degraded, "utilization": u, "window": (window or {}).get("name"),
                                       "sent": {"model": ch.lane.model, "effort": ch.lane.effort}})
            finally:
                log.close()
        except Exception as exc:  # noqa: BLE001 - no quota known: the role's lanes as written
            log_ = logging.getLogger("capsule.supervisor")
            log_.warning("quota at session start unknown (%r); the role's lanes apply", exc)

    def routing_status(self) -> dict:
        table = self.router.table
        if table is None:
            return {}
        return {"on": self.router.enabled, "agent": self.router.agent_kind, **table.as_dict(),
                "launch": {k: v for k, v in vars(self.router.current).items() if v and k != "agents_json"}}


def _stagger_settings(role):
    from capsule.proxy.stagger import settings_from  # noqa: PLC0415

    return settings_from((role.context.routing or {}).get("stagger") or {})


# The file each client's tool shell sources before a call (see shims/shim_template/agent_env.sh).
ENV_FILE_VAR = {"claude": "CLAUDE_ENV_FILE", "codex": "BASH_ENV"}


def _agent_view_env(kind: str, shim_dir: Path, env: dict[str, str]) -> None:
    """Tell the shims which output is the agent's own view (issue 9: only the agent's view changes).

    Claude Code and Codex start a shell per tool call: their env file records that call's
    stdout/stderr identity (and keeps the shims first on PATH). A shell agent's view is the
    stdout/stderr it was launched with. Session-scoped: nothing is written outside the shim dir.
    """
    from capsule import shims  # noqa: PLC0415

    var = ENV_FILE_VAR.get(kind)
    env_file = shim_dir / shims.ENV_FILE
    if var is None:
        try:
            ids = [os.fstat(fd) for fd in (1, 2)]
        except OSError:
            return
        env[switches.AGENT_OUT] = "launch " + " ".join(f"{st.st_dev}:{st.st_ino}" for st in ids)
        return
    if not env_file.is_file():
        return
    previous = env.get(var)
    if previous and previous != str(env_file):
        env[switches.CHAIN_ENV] = previous  # the user's own file still runs, first
    env[var] = str(env_file)


def _probe_conflicts() -> list[str]:
    from capsule.shims import conflicts  # noqa: PLC0415

    env = dict(os.environ)
    try:
        return conflicts.hook_conflicts(env) + [f"{t} on PATH: {h}" for t in conflicts.REWRITERS
                                                for h in conflicts.which_all(t, env.get("PATH", ""))]
    except Exception as exc:  # noqa: BLE001 - the probe must not stop the agent
        log.warning("conflict probe failed: %r", exc)
        return []


def _which(name: str, path: str) -> str | None:
    if "/" in name:
        return name if os.access(name, os.X_OK) else None
    for d in path.split(":"):
        cand = os.path.join(d or ".", name)
        if os.access(cand, os.X_OK) and not os.path.isdir(cand):
            return cand
    return None


class _QuietStderr(logging.StreamHandler):
    """The supervisor's stderr log: a failed write (closed terminal) is dropped, never a traceback."""

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802
        pass


def setup_logging(state_dir: Path, verbose: bool = False) -> None:
    from capsule.ground.log_handlers import QuietFileHandler  # noqa: PLC0415

    handlers: list[logging.Handler] = [_QuietStderr(sys.stderr)]
    try:
        handlers.append(QuietFileHandler(state_dir / paths.LOG_FILE))
    except OSError:
        pass
    for h in handlers:
        h.setFormatter(logging.Formatter("capsule[%(process)d] %(levelname)s %(name)s: %(message)s"))
    handlers[0].setLevel(logging.INFO if verbose else logging.WARNING)
    root = logging.getLogger("capsule")
    root.setLevel(logging.INFO)
    for h in handlers:
        root.addHandler(h)
