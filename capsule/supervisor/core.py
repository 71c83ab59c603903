"""The supervisor's orchestration around its PID-1 core (supervisor/pid1.py): the order things start
and stop in, registration with the agent, the agent's command line and environment, STATUS.

Not responsible for reaping, signals or the exit status (pid1.py), for how each subsystem runs
(subsystems.py: engine, control socket, proxy, index, usage), for deciding what runs
(policy/plan.py) or for compression (capsule.engine). Invariant: a subsystem that fails to start
is reported in STATUS and never stops the agent; the exit status is the agent's.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from capsule import __version__
from capsule.agents import clients
from capsule.ground import paths
from capsule.ground import switches
from capsule.policy.manifest import Role
from capsule.prompt import pack, record
from capsule.route import policy as route
from capsule.route import subagents
from capsule.policy import plan as planning
from capsule.supervisor import control_server, subsystems
from capsule.supervisor.launch import agent_kind, agent_view_env, mark, probe_conflicts, which
from capsule.supervisor.pid1 import DEFAULT_GRACE_S, FORWARDED, Pid1
from capsule.supervisor.control_server import EngineServer

log = logging.getLogger("capsule.supervisor")

SESSION_ONLY = ("opencode", "gemini")   # clients configured by their session's environment alone
USAGE_INTERVAL_S = 30.0   # transcript ingestion while the agent runs ($JACKIN_CTX_USAGE_INTERVAL)
USAGE_BUDGET_S = 20.0     # one such pass, at most
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
        subsystems.degrade_at_start(self.router, self.state_dir)
        self.conflicts = probe_conflicts() if self.plan["shims"].on else []
        if self.conflicts:  # INV-8: one shell-rewrite path; capsule steps back and says why
            self.plan["shims"] = planning.Decision("shims", False, f"conflict: another tool already rewrites shell output ({self.conflicts[0]}); one rewrite path at a time")
        self.socket_path = paths.socket_path()
        if self.socket_path.exists() and control_server.ping(self.socket_path, 0.3):
            # Another live supervisor owns this state dir's socket (two `up --local` sessions): keep
            # it, serve our own next to it; the agent finds ours through $JACKIN_CTX_SOCKET.
            self.socket_path = self.socket_path.with_name(f"engine-{os.getpid()}.sock")
        self.pid1 = Pid1(opts.grace_s)
        self.started = time.monotonic()
        self.ready_s: float | None = None
        self.engine = None
        self.server: EngineServer | None = None
        self.engine_started: anyio.Event | None = None     # set once the engine serves or failed to start
        self.registration: dict[str, str] = {}
        self.proxy = None                          # capsule.proxy.proxy_server.ProxyServer when running
        self.proxy_info: dict = {}                 # what doctor shows: url and upstream, or why not
        self.redirect = None                       # capsule.proxy.redirect.Redirect for the agent
        self.session_dir: Path | None = None

    # ---- lifecycle -------------------------------------------------------------------
    def run(self) -> int:
        return anyio.run(self._main)

    @property
    def agent_pid(self) -> int | None:
        return self.pid1.agent_pid

    async def _main(self) -> int:
        self.pid1.prepare()
        self.engine_started = anyio.Event()
        async with anyio.create_task_group() as tg:
            with anyio.open_signal_receiver(*FORWARDED, signal.SIGCHLD) as signals:
                self._register_agents()  # before the socket answers: "ready" means configured
                if self.plan["engine"].on:
                    # The socket answers PING at once (ready: doctor, `up` see the supervisor) and the
                    # agent starts without waiting for the engine, which warms behind the socket
                    # (imports, stores, tokenizer: a few hundred ms, while the agent itself starts); a
                    # request meanwhile waits for it (control_server.py), so the first command is
                    # still served (raw only if the shim's deadline passes first).
                    self.server = EngineServer(self.socket_path, None, self.status, warming=True)
                    await self.server.listen()
                    tg.start_soon(subsystems.serve_forever, self.server)
                    tg.start_soon(self._start_engine)
                if self.plan["proxy"].on:
                    await anyio.to_thread.run_sync(self._start_proxy)
                self.ready_s = time.monotonic() - self.started
                log.info("ready in %.0f ms: role=%s mode=%s socket=%s", self.ready_s * 1000,
                         self.role.name, self.mode, self.socket_path if self.server else "-")
                self._spawn_agent()
                if self.plan["mcp"].on:
                    tg.start_soon(self._warm_index)
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
        try:
            engine = await anyio.to_thread.run_sync(subsystems.warm_engine, self.state_dir, self.mode, self.role)
            log.info("engine warm %.0f ms after start", (time.monotonic() - self.started) * 1000)
        except Exception as exc:  # noqa: BLE001 - a broken engine means raw output, not a dead agent
            log.error("engine failed to start (%r); shims will pass raw output", exc)
            engine = None
        self.engine = engine
        self.server.set_engine(engine)
        self.engine_started.set()
        await self.server.rehearse()     # serving already: the pipeline's first-use imports, off every request

    async def _warm_index(self) -> None:
        """The workspace index warm-up, once the engine serves (or failed): its child is seconds of
        CPU that took a core from the engine's warm-up; the agent's first search comes later."""
        if self.server is not None:
            await self.engine_started.wait()
        subsystems.warm_index(Path(self.opts.workdir or Path.cwd()))

    def _start_proxy(self) -> None:
        """The proxy door, then the agent pointed at it (fail open: subsystems.start_proxy)."""
        self.proxy, self.redirect, self.proxy_info = subsystems.start_proxy(
            kind=agent_kind(self.role, self.opts.command), env=self.agent_env(), state_dir=self.state_dir,
            mode=self.mode, shims_on=self.plan["shims"].on, hooks_on=self.hook_door_on, role=self.role,
            workspace=Path(self.opts.workdir or Path.cwd()),
            routing=self.router.table if self.router.enabled else None)

    def _ingest_usage(self, budget_s: float = USAGE_BUDGET_S) -> None:
        subsystems.ingest_usage(self.agent_env(), self.state_dir, budget_s)

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
        # OpenCode and Gemini CLI are configured per session everywhere (their env lasts for the
        # process): there is no user file of theirs to write, in the image either.
        if self.opts.session_config or kind in SESSION_ONLY:
            self._prepare_session(kind)
            return
        if kind == "claude" and self.plan["engine"].on:
            self._prepare_hook_session()
        if not self.plan["mcp"].on or kind not in ("claude", "codex"):
            return
        try:
            from capsule import agents  # noqa: PLC0415

            # the note goes to the agent's user-level file (its home in the container), not the workspace
            text = self._standing_text()        # "": register and note both off, so no note file at all
            result = agents.register(kind, project=self.opts.workdir or Path.cwd(), env=self.agent_env(),
                                     note="user" if text != "" else False, note_text=text)
            self.registration = {kind: "; ".join(result.lines())}
        except Exception as exc:  # noqa: BLE001 - registration failing must not stop the agent
            log.warning("MCP registration for %s failed: %r", kind, exc)
            self.registration = {kind: f"failed: {exc}"}

    def _prepare_session(self, kind: str) -> None:
        """`up --local`: the agent's MCP server, hooks and note come from its command line and
        files in the state dir (capsule.agents.session); the user's config and repo stay untouched."""
        if clients.get(kind) is None:
            return
        try:
            from capsule.agents import session  # noqa: PLC0415

            self.session_dir = session.prepare(self.state_dir)
            self.registration = {kind: f"session-scoped ({self.session_dir})"
                                 if self.plan["mcp"].on else self.plan["mcp"].reason}
        except Exception as exc:  # noqa: BLE001 - configuration failing must not stop the agent
            log.warning("session configuration for %s failed: %r", kind, exc)
            self.registration = {kind: f"failed: {exc}"}
            self.session_dir = None

    def _prepare_hook_session(self) -> None:
        """The image (`up` without --local): Claude Code's user files get the MCP registration, and
        the hook door is still this session's alone (--settings in the state dir, never ~/.claude)."""
        try:
            from capsule.agents import session  # noqa: PLC0415

            self.session_dir = session.prepare(self.state_dir)
        except Exception as exc:  # noqa: BLE001 - no hook door, the agent runs all the same
            log.warning("session settings for the hook door failed: %r", exc)
            self.session_dir = None

    def _record_run(self) -> None:
        """Which register this agent run has, for `ctx usage` by register (prompt/record.py)."""
        kind = agent_kind(self.role, self.opts.command)
        if clients.get(kind) is None or not self.plan["register"].on:
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
            register = self.plan["register"].on
            if register and pack.settings(self.role.context.output)[2]:
                codebook.pin_from_ledger(self.role, self.state_dir)
                legend = codebook.legend(self.role, self.state_dir)
            self._standing = pack.standing_text(self.role.context.output, read_door=self.plan["mcp"].on,
                                                legend=legend, register=register)
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
            if kind == "claude" and not self.opts.session_config:   # the image: the hook door alone
                return session.claude_argv(cmd, self.session_dir, self.state_dir, mcp=False, intent=False,
                                           python=shims.shim_python(), tool_hook=self.hook_door_on)
            text = self._standing_text()
            if kind == "claude":
                return session.claude_argv(cmd, self.session_dir, self.state_dir, mcp=self.plan["mcp"].on,
                                           intent=self.plan["engine"].on and self.plan["shims"].on,
                                           python=shims.shim_python(), boundaries=self.plan["engine"].on,
                                           instructions=text, tool_hook=self.hook_door_on,
                                           statusline=self.role.agent.statusline)
            if kind == "codex":
                return session.codex_argv(cmd, self.state_dir, self.agent_env(), mcp=self.plan["mcp"].on,
                                          instructions=text)
        except Exception as exc:  # noqa: BLE001
            log.warning("session flags for %s failed: %r; the agent runs without them", kind, exc)
        return cmd

    @property
    def hook_door_on(self) -> bool:
        """Claude Code's PostToolUse hook door (shims/hook_door.py): a session-scoped hook (session
        settings, `up --local` and the image alike), with the engine on."""
        return (self.session_dir is not None and self.plan["engine"].on
                and agent_kind(self.role, self.opts.command) == "claude")

    def _session_env(self, env: dict[str, str]) -> dict[str, str]:
        """OpenCode and Gemini CLI learn about capsule from their environment (one session's)."""
        kind = agent_kind(self.role, self.opts.command)
        if self.session_dir is None or kind not in SESSION_ONLY:
            return {}
        try:
            mcp = self.plan["mcp"].on
            if kind == "opencode":
                from capsule.agents import opencode  # noqa: PLC0415

                return opencode.session_env(self.session_dir, self.state_dir, env, mcp=mcp, mark=self.plan["shims"].on,
                                            instructions=self._standing_text() if mcp else None,
                                            base_url=self.redirect.base_url if self.redirect is not None else None)
            from capsule.agents import gemini  # noqa: PLC0415

            return gemini.session_env(self.session_dir, self.state_dir, env, mcp=mcp)
        except Exception as exc:  # noqa: BLE001
            log.warning("session config for %s failed: %r; the agent runs without it", kind, exc)
            return {}

    # ---- the agent -------------------------------------------------------------------
    def agent_command(self) -> list[str]:
        # The role's lanes apply to the role's agent and to a claude/codex command given on the
        # command line alike; a model or effort the user put there wins (route/policy.py).
        cmd, _ = self.router.launch(list(self.opts.command or self.role.agent.command), {})
        return self._with_proxy_args(cmd)

    def _with_proxy_args(self, cmd: list[str]) -> list[str]:
        if self.redirect is None or not self.redirect.args:
            return cmd
        from capsule.proxy.redirect import insert_args  # noqa: PLC0415

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
        # capsule's marker: the agent it launched (and its tool children, its own calls too; the
        # client's tool mark tells those apart: capsule/agents/clients.py).
        kind = agent_kind(self.role, self.opts.command)
        mark(kind, env)
        if shim_dir and self.plan["shims"].on:
            agent_view_env(kind, Path(shim_dir), env)
        # INV-1: Claude Code otherwise sends its first request before capsule's MCP server is
        # connected and adds the ctx_* tools from the second on: the tools change mid-session and
        # the whole prompt cache is rewritten (seen with a fake API; tests/measure/test_inv1_prefix.py).
        if kind == "claude" and self.plan["mcp"].on:
            env.setdefault("MCP_CONNECTION_NONBLOCKING", "0")
        return env

    def _spawn_agent(self) -> None:
        cmd = self._session_argv(self.agent_command())
        env = self.agent_env()
        env.update(self._session_env(env))
        if self.opts.workdir:
            os.chdir(self.opts.workdir)
        self._record_run()
        path = which(cmd[0], env["PATH"])
        if path is None:
            log.error("agent command not found: %s", cmd[0])
            hint = ""
            client = clients.by_command(cmd[0])
            if client is not None:
                hint = (f"; install it (npm install -g {client.package}), or build the image with "
                        f"--build-arg AGENT_CLIS=\"{client.package}\"")
            print(f"capsule: agent command not found: {cmd[0]}{hint}", file=sys.stderr)
            self.pid1.failed_to_start(127 << 8)
            return
        self.pid1.spawn(path, cmd, env)

    def status(self) -> dict:
        return {
            "version": __version__,
            "pid": os.getpid(),
            "role": self.role.name,
            "agent_kind": agent_kind(self.role, self.opts.command),    # the client it launched (doctor names it)
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

    def routing_status(self) -> dict:
        table = self.router.table
        if table is None:
            return {}
        return {"on": self.router.enabled, "agent": self.router.agent_kind, **table.as_dict(),
                "launch": {k: v for k, v in vars(self.router.current).items() if v and k != "agents_json"}}
