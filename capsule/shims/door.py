"""The shell door's side of the door contract: one command's two streams, with the client facts the
shim forwarded (its environment: limits.env_names()), made into Observations for the engine.

Not responsible for transport (supervisor/control_server.py reads the shim's request) or for the pipeline.
Invariant: a known client's cap bounds the two emissions together (stderr first, usually short,
leaving stdout at least half); the intent is the agent's own, looked up from its session or thread,
and so are the task's cues (the user's last prompt, the session's edits).
"""

from __future__ import annotations

from pathlib import Path

from capsule.agents import clients, codex, limits, session
from capsule.agents import intent_log as intents
from capsule.ground.types import Observation


def resolve_intent(state_dir: Path, meta: dict[str, str] | None, command: str) -> str | None:
    """The step's goal the agent stated for this command (Claude Code hook notes; Codex's prompt)."""
    if not meta:
        return None
    found = intents.lookup(session.intents_dir(state_dir), meta.get(limits.data()["claude"]["session_env"]), command)
    thread = clients.get("codex").tool_env
    if found is None and meta.get(thread):
        found = intents.codex_prompt(codex.codex_home(), meta[thread])
    return found


def resolve_cues(state_dir: Path, meta: dict[str, str] | None) -> tuple[str | None, tuple[str, ...]]:
    """The task's cues the client's session holds: the user's last prompt and the session's recent
    edits (Claude Code's hook records; Codex: its thread's last prompt)."""
    if not meta:
        return None, ()
    prompt, edits = intents.said(session.intents_dir(state_dir), meta.get(limits.data()["claude"]["session_env"]))
    thread = clients.get("codex").tool_env
    if prompt is None and meta.get(thread):
        prompt = intents.codex_prompt(codex.codex_home(), meta[thread])
    return prompt, edits


def observe_command(engine, command: str, stdout: bytes, stderr: bytes, exit_code: int, duration_ms: float,
                    scope: str | None = None, cwd: str | None = None, meta: dict[str, str] | None = None,
                    intent: str | None = None) -> tuple[bytes, bytes]:
    """Both streams of one command through engine.observe; returns (stdout, stderr) as the agent sees them."""
    limit = limits.detect(meta)
    if intent is None and meta:
        intent = resolve_intent(engine.state_dir, meta, command)
    prompt, edits = resolve_cues(engine.state_dir, meta)
    whole = limit.budget() if limit else None
    err_budget = out_budget = None
    if whole is not None:
        err_budget = whole - min(limit.size(stdout.decode("utf-8", "surrogateescape")), whole // 2)

    def one(raw: bytes, stream: str, budget: int | None) -> bytes:
        return engine.observe(Observation(raw, command=command, stream=stream, exit_code=exit_code, intent=intent,
                                          scope=scope, limit=limit, budget=budget, cwd=cwd, prompt=prompt, edits=edits,
                                          duration_ms=duration_ms)).data

    err = one(stderr, "stderr", err_budget) if stderr else stderr
    if whole is not None:
        out_budget = whole - limit.size(err.decode("utf-8", "surrogateescape"))
    out = one(stdout, "stdout", out_budget) if stdout else stdout
    return out, err
