"""`capsule ctx doctor [--json] [--gate]`: what is on, what is off and why, on one screen.

Not responsible for changing anything: it reads the role, the switches, the state store, PATH,
agent configs and the supervisor's STATUS. Invariant (INV-6): with --gate it exits 1 when the
standing context capsule injects is over the role's token budget (or a conflict exists).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import time
from pathlib import Path

from capsule.ground.terminal import visible
from capsule import __version__
from capsule.ground import paths, processes
from capsule.ground.errors import UserError
from capsule.ground import switches
from capsule.policy.manifest import DEFAULT_ROLE, ManifestError, load_role


def register(sub) -> None:
    p = sub.add_parser("doctor", help="what is on, what is off and why",
                       description="Version, role and mode; each subsystem on/off with the reason; state store "
                       "integrity; shims and tools that would rewrite the same commands; MCP registration; tokens capsule "
                       "adds to every conversation (tool schemas, notes) against the role's budget. Outside a role it "
                       "reports the embedded mode that `capsule ctx run` and `ctx pipe` use.")
    p.add_argument("--role", help="role name or TOML path (default: the running one, $JACKIN_CTX_ROLE, or default)")
    p.add_argument("--json", action="store_true", help="machine-readable report")
    p.add_argument("--gate", action="store_true",
                   help="exit 1 when standing context exceeds the role's budget or a conflict is found")
    p.set_defaults(func=cmd_doctor)


def _store(path: Path) -> dict:
    info: dict = {"path": str(path), "exists": path.exists()}
    if not info["exists"]:
        return info
    info["bytes"] = sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())
    try:
        import apsw  # noqa: PLC0415 - bench_startup "capsule --help"

        con = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
        info["integrity"] = con.execute("PRAGMA quick_check").fetchall()[0][0]
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        info["rows"] = {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchall()[0][0]
                        for t in tables if "fts" not in t.lower() and not t.startswith("sqlite_")}
        con.close()
    except Exception as exc:  # noqa: BLE001 - a broken store is a finding, not a crash
        info["integrity"] = f"error: {exc}"
    return info


def _usage_store(path: Path) -> dict:
    """The usage store, with how many transcript lines ingestion skipped as bad."""
    info = _store(path)
    if info.get("exists") and "rows" in info:
        try:
            import apsw  # noqa: PLC0415 - bench_startup "capsule --help"

            con = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
            try:
                total = 0
                for (state,) in con.execute("SELECT state FROM files"):
                    d = json.loads(state)
                    total += int(d.get("bad_lines", 0)) + int(d.get("bad_values", 0))
                info["skipped_lines"] = total
            finally:
                con.close()
        except Exception as exc:  # noqa: BLE001 - a finding, not a crash
            info["skipped_lines"] = f"error: {exc}"
    return info


LOW_FREE_BYTES = 64 << 20     # below this the stores may fail their next write: outputs then pass whole


def _volume(state: Path) -> dict | None:
    """Free space where the state dir lives: a full volume makes every output pass unarchived."""

    try:
        u = shutil.disk_usage(state if state.exists() else state.parent)
    except OSError:
        return None
    return {"free_bytes": u.free, "total_bytes": u.total, "low": u.free < LOW_FREE_BYTES}


def _retention(state: Path) -> dict:
    from capsule.store import retention  # noqa: PLC0415 - bench_startup "capsule --help"

    return retention.describe(state)


def _permissions(state: Path) -> dict:
    """The state dir and what is directly in it: anything others can read, write or enter is a
    problem (capsule creates all of it owner-only; an older capsule or a volume may not have)."""

    problems = []
    try:
        entries = [state, *sorted(state.iterdir())]
    except OSError as exc:
        return {"problems": [f"{state}: cannot list ({exc.strerror})"]}
    for p in entries:
        try:
            st = p.lstat()
        except OSError:
            continue
        if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o077:
            problems.append(f"{p} ({stat.filemode(st.st_mode)})")
    return {"mode": oct(state.stat().st_mode & 0o777), "problems": problems}


def collect(role_arg: str | None = None) -> dict:
    # Imported here, not at the top: every command but `ctx run` and `statusline` builds the whole
    # parser, which imports this module, and these (anyio, the shims) are tens of ms of its start.
    from capsule.store import journal  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.policy import modes  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.shims import conflicts  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.prompt import budget  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.policy import plan as planning  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.supervisor import control_server  # noqa: PLC0415 - bench_startup "capsule --help"

    sock = paths.socket_path()
    running = control_server.status(sock) if sock.exists() else None
    name = role_arg or os.environ.get(switches.ROLE) or (running or {}).get("role_path")
    # Outside any role, what runs is the embedded engine (`ctx run`, `ctx pipe`): report its mode;
    # the default role is still shown, as what `capsule up` would start.
    embedded = None
    if not name:
        mode, reason = modes.embedded_mode()
        embedded = {"mode": mode, "reason": reason, "commands": ["capsule ctx run", "capsule ctx pipe"]}
        name = DEFAULT_ROLE
    try:
        role = load_role(name)
    except ManifestError as exc:
        raise UserError(str(exc)) from None
    sw = switches.Switches.read()
    subsystems = planning.plan(role, sw)
    shim = conflicts.shim_state()
    found = conflicts.probe()
    try:
        from capsule.agents import registration_status  # noqa: PLC0415 - bench_startup "capsule --help"

        mcp = registration_status(Path.cwd())
    except Exception as exc:  # noqa: BLE001
        mcp = {"error": str(exc)}
    try:
        from capsule.agents import footprint  # noqa: PLC0415 - bench_startup "capsule --help"

        outside = footprint(Path.cwd())
    except Exception as exc:  # noqa: BLE001 - a finding, not a crash
        outside = [f"(could not check: {exc})"]
    try:
        from capsule.agents import AGENTS, client_info, doors  # noqa: PLC0415 - bench_startup "capsule --help"
        from capsule.agents import clients as described  # noqa: PLC0415 - bench_startup "capsule --help"

        # The client the running supervisor launched (`up -- opencode …`), else the role's; its doors
        # are live as that supervisor's plan says.
        kind = (running or {}).get("agent_kind") or role.agent.kind
        plan = (running or {}).get("subsystems") or {k: v.as_dict() for k, v in subsystems.items()}
        command = described.get(kind).command if described.get(kind) and kind != role.agent.kind else (
            role.agent.command[0] if role.agent.command else role.agent.kind)
        agent = {"kind": kind, **client_info(command), **doors(kind, plan)}
        if described.get(kind) and agent.get("path"):
            agent["version_warning"] = described.version_status(described.get(kind), agent.get("version"))
        clients = {c: client_info(c) for c in AGENTS}
        for name, info in clients.items():     # every installed client, not only the role's: outside its range?
            if described.get(name) and info.get("path") and info.get("version"):
                info["version_warning"] = described.version_status(described.get(name), info["version"])
    except Exception as exc:  # noqa: BLE001 - a finding, not a crash
        agent, clients = {"kind": role.agent.kind, "error": str(exc)}, {}
    standing = budget.standing_context(subsystems, role)
    standing["budget"] = role.context.standing_budget
    standing["over"] = standing["tokens"] > role.context.standing_budget
    state = paths.state_dir()
    return {
        "version": __version__,
        "role": {"name": role.name, "path": str(role.path), "agent": role.agent.kind},
        "mode": embedded["mode"] if embedded else planning.effective_mode(role, sw),
        "role_mode": planning.effective_mode(role, sw),
        "embedded": embedded,
        "switches": sw.as_dict(),
        "subsystems": {k: v.as_dict() for k, v in subsystems.items()},
        "supervisor": running,
        "state": {"dir": str(state), "archive": _store(state / paths.ARCHIVE_DB),
                  "ledger": _store(state / paths.LEDGER_DB), "usage": _usage_store(state / paths.USAGE_DB),
                  "interrupted": journal.describe(state), "permissions": _permissions(state),
                  "retention": _retention(state), "volume": _volume(state)},
        "shims": {"dirs": shim.dirs, "first_on_path": shim.first, "present": bool(shim.dirs)},
        "conflicts": found,
        "agent": agent,
        "clients": clients,
        "mcp_registration": mcp,
        "outside_state": outside,
        "standing_context": standing,
        "proxy": _proxy(running, state),
        "graduation": _graduation(planning.effective_mode(role, sw), state),
        "routing": _routing(role, running, subsystems["routing"].on),
        "media": _media(role),
    }


def _routing(role, running: dict | None, on: bool) -> dict:
    """The lane table: the running supervisor's (user flags included), else the role's with this env."""
    if running and running.get("routing"):
        return running["routing"]
    try:
        from capsule.route import lanes  # noqa: PLC0415 - bench_startup "capsule ctx gain"

        kind = role.agent.kind
        table = lanes.resolve(role, kind, dict(os.environ), list(role.agent.command))
        return {"on": on, "agent": kind, **table.as_dict()}
    except Exception as exc:  # noqa: BLE001 - a finding, not a crash
        return {"error": str(exc)}


def _media(role) -> dict:
    """The media layer's policy for the role, and the tools it would use (PDF text, page images, OCR)."""
    try:
        from capsule.observe.media import ocr, pdf  # noqa: PLC0415 - bench_startup "capsule ctx gain"
        from capsule.policy import media_policy  # noqa: PLC0415 - bench_startup "capsule --help"

        pol = media_policy.from_table(role.context.media, role.context.mode)
        return {"mode": pol.mode, "reason": pol.reason, "pdf_text": pdf.tool(), "pdf_pages": pdf.renderer(),
                "ocr": ocr.engine(), "pdf": pol.pdf, "screenshots": pol.screenshots}
    except Exception as exc:  # noqa: BLE001 - a finding, not a crash
        return {"error": str(exc)}


def _graduation(mode: str, state: Path) -> dict | None:
    """For a measure-only role: the baseline so far and what standard mode would have saved on it."""
    if mode != "measure":
        return None
    try:
        from capsule.measure import graduation  # noqa: PLC0415 - bench_startup "capsule --help"

        return graduation.baseline(state / paths.LEDGER_DB, state / paths.USAGE_DB)
    except Exception as exc:  # noqa: BLE001 - a broken store is a finding, not a crash
        return {"error": str(exc)}


def _proxy(running: dict | None, state: Path) -> dict:
    """The proxy door: the supervisor's (with why it is not used), else a standalone `capsule proxy serve`."""
    info = dict((running or {}).get("proxy") or {})
    if not info:
        from capsule.proxy.proxy_server import read_state  # noqa: PLC0415 - bench_startup "capsule --help"

        found = read_state(state)
        if found and processes.alive(found.get("pid")):
            info = {"state": "running", "url": found.get("url"), "upstream": found.get("anthropic_upstream"),
                    "openai_upstream": found.get("openai_upstream"), "standalone": True}
        else:
            info = {"state": "not running"}
    db = state / paths.PROXY_DB
    if db.exists():
        info["store"] = _store(db).get("rows", {})
    return info


def render(r: dict) -> str:
    emb = r.get("embedded")
    if emb:
        lines = [f"capsule {r['version']}  here, outside a role: {' and '.join(f'`{c}`' for c in emb['commands'])} run in "
                 f"mode {r['mode']} ({emb['reason']})"]
    else:
        lines = [f"capsule {r['version']}  role {r['role']['name']} ({r['role']['agent']})  mode {r['mode']}"]
    sup = r["supervisor"]
    lines.append(f"supervisor   {'pid %s, up %.0fs, %s served' % (sup['pid'], sup['uptime_s'], sup['served']) if sup else 'not running (embedded mode)'}")
    if emb:
        what = {"measure": ": count every output, change none", "off": ": nothing counted or changed"}.get(r["role_mode"], "")
        lines.append(f"role         {r['role']['name']} ({r['role']['agent']}): `capsule up` would start it in mode "
                     f"{r['role_mode']}{what}")
    for name, d in r["subsystems"].items():
        lines.append(f"  {name:<10} {'on ' if d['on'] else 'off'}  {d['reason']}")
    on = [k for k, v in r["switches"].items() if v]
    lines.append(f"switches     {', '.join(on) if on else 'none set'}")
    for key in ("archive", "ledger", "usage"):
        s = r["state"].get(key)
        if s is None:   # a report from an older capsule (or a hand-made one) has no usage store
            continue
        if s["exists"]:
            rows = ", ".join(f"{t}={n}" for t, n in s.get("rows", {}).items())
            skipped = f"  skipped transcript lines {s['skipped_lines']}" if s.get("skipped_lines") else ""
            lines.append(f"{key:<12} {s['bytes']:,} bytes  integrity {s.get('integrity')}  {rows}{skipped}"
                         f"{_keep(r, key)}")
        else:
            lines.append(f"{key:<12} (none yet) {s['path']}")
    vol = r["state"].get("volume")
    if vol and vol["low"]:       # shown only when it matters (one screen); --json always has it
        free = f"{vol['free_bytes'] / (1 << 20):,.0f} MiB free of {vol['total_bytes'] / (1 << 20):,.0f} MiB"
        lines.append(f"volume       LOW: {free} at {r['state']['dir']}: outputs pass whole, unarchived and unrecorded, "
                     f"once a store cannot write; free space there")
    perms = r["state"].get("permissions") or {}
    if perms.get("problems"):
        lines.append(f"permissions  others can read or enter {len(perms['problems'])} path(s) in the state dir: "
                     + ", ".join(perms["problems"][:3]) + f"; fix: chmod 700 {r['state']['dir']}")
    for run in r["state"].get("interrupted", []):
        sizes = ", ".join(f"{n:,} bytes of {s}" for s, n in run["bytes"].items())
        lines.append(f"interrupted  `{run['command']}` was killed before its output was shown: {sizes} kept "
                     f"(the next `capsule ctx run` archives them and prints their handles)")
    sh = r["shims"]
    lines.append(f"shims        {'first on PATH: ' + sh['dirs'][0] if sh['first_on_path'] else ('present but shadowed' if sh['present'] else 'not on PATH')}")
    lines.append(f"conflicts    {'none' if not r['conflicts'] else ''}")
    lines += [f"  ! {c}" for c in r["conflicts"]]
    ag = r.get("agent") or {}
    if ag:
        found_at = f"{ag.get('version') or 'version unknown'} at {ag['path']}" if ag.get("path") else "NOT FOUND on PATH"
        lines.append(f"agent        {ag.get('title') or ag.get('command', ag.get('kind'))}: {found_at}"
                     + (f"  (tested {ag['tested'][0]}..{ag['tested'][1]})" if ag.get("tested") else "")
                     + (f"  ! {ag['version_warning']}" if ag.get("version_warning") else ""))
        if ag.get("doors"):
            lines.append("  doors      " + ", ".join(f"{d} {'live' if v['live'] else 'off'}" for d, v in ag["doors"].items())
                         + f"; tool calls: {ag['identity']}; transcripts: {ag['transcripts']}")
    others = [f"{c} {i.get('version') or '?'}" for c, i in (r.get("clients") or {}).items()
              if i.get("path") and c != ag.get("command")]
    if others:
        lines.append(f"clients      {', '.join(others)}")
    lines += [f"  ! {c} {i.get('version')}: {i['version_warning']}" for c, i in (r.get("clients") or {}).items()
              if i.get("version_warning") and c != ag.get("command")]
    for agent, st in r["mcp_registration"].items():
        if isinstance(st, dict):
            where = ", ".join(st.get("locations") or []) or "no"
            lines.append(f"mcp {agent:<8} registered: {where}{'  (' + st['problem'] + ')' if st.get('problem') else ''}")
    px = r["proxy"]
    if px.get("state") == "running":
        st = px.get("stats") or {}
        seen = f"; {st['requests']} requests, {st['blocks_shrunk']} results shrunk, {st['usage_rows']} usage rows" if st else ""
        lines.append(f"proxy        running on {px.get('url')} -> {px.get('upstream')}{seen}")
    else:
        lines.append(f"proxy        {px.get('state')}{': ' + px['reason'] if px.get('reason') else ''}")
    if px.get("store"):
        lines.append("  store      " + ", ".join(f"{t}={n}" for t, n in px["store"].items()) + _keep(r, "proxy"))
    if r.get("graduation") is not None:
        from capsule.measure import graduation  # noqa: PLC0415 - bench_startup "capsule --help"

        g = r["graduation"]
        lines.append(f"baseline     {'error: ' + g['error'] if 'error' in g else graduation.describe(g)}")
    md = r.get("media")
    if md:
        lines.append(f"media        error: {md['error']}" if "error" in md else
                     f"media        {md['mode']} ({md['reason']}); PDF text: {md['pdf_text'] or 'none (PDFs pass as they came)'}"
                     f"; pages: {md['pdf_pages'] or 'none'}; OCR: {md['ocr'] or 'none (no screenshot pointers)'}")
    outside = r.get("outside_state") or []
    lines.append(f"outside state {'nothing written (up --local is session-scoped)' if not outside else ''}")
    lines += [f"  {w}" for w in outside]
    lines += _render_routing(r.get("routing"))
    sc = r["standing_context"]
    verdict = "OVER BUDGET" if sc["over"] else "within budget"
    # one line: the role's own client in full, the other clients' totals after it (all parts: --json)
    parts = ", ".join(f"{k} {v}" for k, v in sc["parts"].items()) or "nothing injected"
    others = "; ".join(f"{f['client']} {f['tokens']} ({f['label']})" for fam, f in (sc.get("families") or {}).items()
                       if fam != sc.get("family"))
    lines.append(f"standing     {sc['tokens']} tokens a request ({sc.get('client', '?')}, {sc['label']}) of "
                 f"{sc['budget']} budget: {verdict}  [{parts}]" + (f"  other clients: {others}" if others else ""))
    return "\n".join(lines)


def _render_routing(rt: dict | None) -> list[str]:
    if not rt:
        return []
    if "error" in rt:
        return [f"routing      error: {rt['error']}"]
    head = (f"routing      {'on' if rt.get('on') else 'off'} ({rt.get('agent')}); routine lanes degrade at "
            f"{100 * rt['degrade_at']:.0f}% of a window" + ("; main too" if rt.get("degrade_main") else "; main never"))
    if rt.get("budget_usd_day") or rt.get("budget_usd_session"):
        head += f"; budget ${rt.get('budget_usd_day') or '-'}/day ${rt.get('budget_usd_session') or '-'}/session"
    out = [head]
    if rt.get("agent") == "shell":
        return [head.split(";")[0] + "; agent kind shell has no model or effort knobs"]
    plain = [ln["task_class"] for ln in rt["lanes"] if not any(ln.get(k) for k in
             ("model", "effort", "degraded_model", "degraded_effort"))]
    if plain:
        out[0] += f"; {', '.join(plain)}: client default"
    for ln in rt["lanes"]:
        if ln["task_class"] in plain:
            continue
        deg = ""
        if ln.get("degraded_model") or ln.get("degraded_effort"):
            deg = f"  -> degraded {ln.get('degraded_model') or ln.get('model') or 'client default'}/{ln.get('degraded_effort') or ln.get('effort') or '-'}"
        out.append(f"  {ln['task_class']:<10} {ln.get('model') or '(client default)':<22} [{ln['model_from']}]  "
                   f"effort {ln.get('effort') or '-'} [{ln['effort_from']}]{deg}")
    if rt.get("decisions"):
        out.append(f"  decisions  {len(rt['decisions'])} this session; last: {rt['decisions'][-1].get('reason')}")
    return out


def _keep(r: dict, key: str) -> str:
    """A store's retention, on its own line: `keep 90d/512MB, pruned 3 min ago`."""
    d = (r["state"].get("retention") or {}).get(key)
    if not isinstance(d, dict):
        return ""

    last = f", pruned {(time.time() - d['last_pruned']) / 60:.0f} min ago" if d.get("last_pruned") else ""
    return f"  keep {d['max_age_days']}d/{d['max_mb']}MB{last}"


def cmd_doctor(args) -> int:
    report = collect(args.role)
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        print(visible(render(report)))
    sc = report["standing_context"]
    if args.gate and (sc["over"] or report["conflicts"]):
        largest = sc.get("largest")
        why = (f"standing context over budget: {sc['tokens']} tokens > {sc['budget']} "
               f"(standing_budget in {report['role']['path']}); largest part: {largest} "
               f"{sc['parts'].get(largest, 0)}" if sc["over"] else "conflicting tools")
        print(f"capsule: doctor --gate failed: {why}", file=sys.stderr)
        return 1
    return 0
