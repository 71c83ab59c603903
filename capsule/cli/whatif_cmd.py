"""`capsule ctx whatif`: what would capsule have saved on my own recorded sessions?

Reads the same transcripts as `ctx report` (and the same --since), replays every tool result
through the engine exactly as the proxy door would have received it (the tool, its command or
file, the result's text), in a throwaway state dir (the user's archive and ledger are untouched),
and hands the shaped sizes to measure/whatif.py, which re-prices every call. Not responsible for
pricing (measure/whatif.py) or for the engine's rules. Invariant: deterministic — the same
transcripts and role give byte-identical output; nothing here is sent anywhere.
"""

from __future__ import annotations

import binascii
import json
import os
import re
import tempfile
from pathlib import Path

from capsule.cli.gain import parse_since
from capsule.cli.usage_cmd import load
from capsule.ground import switches
from capsule.ground.switches import Switches
from capsule.ground.terminal import visible
from capsule.ground.types import Observation
from capsule.policy.manifest import DEFAULT_ROLE, load_role

# a removed line's words that would show the agent used it later: identifiers, paths, ids, long
# numbers — a word with a digit, `_`, `/`, `.` or `-` in it (a plain English word proves nothing)
_DISTINCT = re.compile(r"[A-Za-z_][\w./-]{5,}|\d{4,}")
_MARKED = re.compile(r"[\d_/.-]")


def register(sub) -> None:
    p = sub.add_parser("whatif", help="what capsule would have saved on your recorded sessions",
                       description="Replay the tool results of your recorded Claude Code and Codex sessions "
                       "through the engine and re-price every call with the smaller prompt, the role's "
                       "standing context and lanes; lines the agent used later that capsule would have cut "
                       "are listed as bounces, with their recovery cost added.")
    p.add_argument("--since", metavar="WHEN", help="only sessions' calls since WHEN: 30m, 2h, 7d, or ISO date")
    p.add_argument("--role", metavar="ROLE", help="the policy to apply (a role name or TOML file; default as `up`)")
    p.add_argument("--claude-dir", metavar="DIR", action="append", help="a Claude Code config or projects dir")
    p.add_argument("--codex-dir", metavar="DIR", action="append", help="a Codex home or sessions dir")
    p.add_argument("--json", action="store_true", help="machine-readable: sessions, total, levers, bounces")
    p.set_defaults(func=cmd_whatif)


def _role(name: str | None):
    return load_role(name or os.environ.get(switches.ROLE) or DEFAULT_ROLE)


def build(args) -> dict:
    from capsule.measure import ingest, whatif  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.measure.transcripts import exchanges  # noqa: PLC0415 - bench_startup "capsule --help"

    role = _role(args.role)
    mode = role.context.mode if role.context.mode in ("standard", "aggressive") else "standard"
    since = parse_since(args.since) if args.since else None
    data = load(args.claude_dir, args.codex_dir, since)
    calls = data["calls"]
    claude_dirs, codex_dirs = data["dirs"]          # the folders `load` ingested: the same transcripts
    sessions = {(c["agent"], c["session_id"]) for c in calls}
    found, said = exchanges.collect(ingest.transcript_files(claude_dirs, codex_dirs))
    found = [e for e in found if (e.agent, e.session) in sessions and (since is None or (e.ts or 0) >= since)]
    saved, bounces, media, media_saved = _replay(found, said, mode, role.context.languages, dict(role.context.media))
    report = whatif.project(calls, saved, bounces, _standing(role), _lanes(role), media, media_saved)
    report["role"], report["mode"] = role.name, mode
    if role.context.mode != mode:
        report["mode_note"] = f"role {role.name} is mode {role.context.mode} (changes nothing): projected as {mode}"
    return report


def _standing(role) -> int:
    from capsule.policy.plan import plan  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.prompt import budget  # noqa: PLC0415 - bench_startup "capsule --help"

    return int(budget.standing_context(plan(role, Switches.read()), role)["tokens"])


def _lanes(role):
    """The role's lane model for a call's thread: main for the main thread, subagent for the others;
    only for the role's own client (a Claude role's lanes say nothing of a Codex session)."""
    from capsule.measure import cost  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.route import lanes  # noqa: PLC0415 - bench_startup "capsule --help"

    table = lanes.from_role(role)

    def model(call: dict):
        if call["agent"] != role.agent.kind:
            return None
        if call.get("thread_id"):
            # a subagent thread: the role's read-only lane on the model it ran on (a Haiku Explore
            # agent is the explore lane), else the general subagent lane
            ran = cost.normalise(call.get("model") or "")
            same = [table[c] for c in ("explore", "plan") if table[c].model and cost.normalise(table[c].model) == ran]
            lane = same[0] if same else table["subagent"]
        else:
            lane = table["main"]
        return lane.model if lane.model_from.startswith("role") else None
    return model


def _replay(found, said, mode: str, languages, media_table: dict) -> tuple[list, list, dict, list]:
    from capsule.engine import Engine  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.ground import tokens  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.measure.whatif import Bounce, Change  # noqa: PLC0415 - bench_startup "capsule --help"

    saved, bounces, media_saved, images = [], [], [], 0
    later: dict[tuple, list] = {}
    for s in sorted(said, key=lambda s: (s.ts or 0.0)):
        later.setdefault((s.agent, s.session, s.thread), []).append(s)
    keep_env = os.environ.get(switches.STATE_DIR)
    with tempfile.TemporaryDirectory(prefix="capsule-whatif-") as tmp:
        engine = Engine(Path(tmp), mode=mode, languages=tuple(languages or ()))
        try:
            for e in sorted(found, key=lambda e: (e.session, e.ts or 0.0, e.tool_id)):
                for media_type, data in e.images:
                    images += 1
                    removed = _media_removed(engine, e, media_type, data, mode, media_table)
                    if removed > 0:
                        media_saved.append(Change(e.agent, e.session, e.thread, e.ts, removed))
                after = _shaped(engine, e)
                if after is None or after == e.text:
                    continue
                removed = tokens.count(e.text) - tokens.count(after)
                if removed > 0:
                    saved.append(Change(e.agent, e.session, e.thread, e.ts, removed))
                bounces += _bounces(e, after, later.get((e.agent, e.session, e.thread), []))
        finally:
            engine.close()
            if keep_env is None:
                os.environ.pop(switches.STATE_DIR, None)
            else:
                os.environ[switches.STATE_DIR] = keep_env
    note = ("no images or PDFs in these sessions" if not images else
            f"{images} images or PDFs re-costed, {sum(c.tokens for c in media_saved):,} tokens fewer")
    return saved, bounces, {"images": images, "note": note}, media_saved


def _media_removed(engine, e, media_type: str, data: str, mode: str, table: dict) -> int:
    """Tokens an image or PDF block would have cost less through the engine's media stage."""
    import base64  # noqa: PLC0415 - bench_startup "capsule --help"

    from capsule import engine_media  # noqa: PLC0415 - bench_startup "capsule --help"

    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return 0
    obs = engine_media.observation(raw, door="proxy", path=e.input.get("file_path"), scope=e.session,
                                   media_type=media_type or None, model=None, api=e.api, table=table,
                                   context_mode=mode)
    if obs is None:
        return 0
    em = engine.observe(obs)
    if em.parts is None or em.known_raw_tokens is None or em.known_emitted_tokens is None:
        return 0
    return max(0, em.known_raw_tokens - em.known_emitted_tokens)


def _shaped(engine, e) -> str | None:
    """The result as the proxy door would have shaped it: the same request rewrite, the same engine."""
    from capsule.proxy import rewrite  # noqa: PLC0415 - bench_startup "capsule --help"

    if e.api == "anthropic":
        body = {"messages": [
            {"role": "assistant", "content": [{"type": "tool_use", "id": e.tool_id, "name": e.name, "input": e.input}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": e.tool_id, "content": e.text,
                                          **({"is_error": True} if e.is_error else {})}]}]}
    else:
        body = {"input": [{"type": "function_call", "call_id": e.tool_id, "name": e.name,
                           "arguments": json.dumps(e.input)},
                          {"type": "function_call_output", "call_id": e.tool_id, "output": e.text}]}

    def observe(call, text):
        out = engine.observe(Observation(text.encode("utf-8", "surrogatepass"), command=call.command,
                                         exit_code=call.exit_code, intent=call.intent, scope=e.session,
                                         path=call.path, stream="stdout"))
        return out.data.decode("utf-8", "replace")

    new = rewrite.rewrite(e.api, body, lambda c, t: rewrite.engine_view(c, t, observe), shims_on=False)
    if new is None:
        return None
    parsed = json.loads(new)
    if e.api == "anthropic":
        content = parsed["messages"][1]["content"][0]["content"]
        return content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)
    out = parsed["input"][1]["output"]
    return out if isinstance(out, str) else json.dumps(out)


def _bounces(e, after: str, said: list) -> list:
    """Lines cut from this result whose distinct words the agent wrote or asked for later."""
    from capsule.ground.tokens import count  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.measure.whatif import Bounce  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.store import redact  # noqa: PLC0415 - bench_startup "capsule --help"

    kept = set(after.splitlines())
    # what the agent already had: the shaped result, the call itself, everything said before it
    known = after + "\n" + json.dumps(e.input) + "\n" + "\n".join(
        s.text for s in said if (s.ts or 0.0) <= (e.ts or 0.0))
    out, seen = [], set()
    for line in e.text.splitlines():
        if line in kept or line in seen:
            continue
        words = [w for w in set(_DISTINCT.findall(line)) if _MARKED.search(w) and w not in known]
        if not words:
            continue
        for s in said:
            if (s.ts or 0.0) <= (e.ts or 0.0) or s.by != "agent":
                continue
            hit = next((w for w in sorted(words) if w in s.text), None)
            if hit:
                seen.add(line)
                out.append(Bounce(e.agent, e.session, e.thread, s.ts, e.tool_id,
                                  redact.redacted(line.strip()[:200]), redact.redacted(hit), count(line)))
                break
    return out


def cmd_whatif(args) -> int:
    from capsule.measure import whatif  # noqa: PLC0415 - bench_startup "capsule --help"

    report = build(args)
    if args.json:
        print(json.dumps(report, sort_keys=True, indent=1))
        return 0
    head = f"role {report['role']}, mode {report['mode']}"
    if report.get("mode_note"):
        head += f" ({report['mode_note']})"
    print(visible(head + "\n" + whatif.render(report)))
    return 0
