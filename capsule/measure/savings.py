"""NET SAVINGS per session: what capsule removed, minus what it added, minus what bounced back.

received  = tool-result tokens the model got (transcript rows);
removed   = raw - emitted of the ledger rows joined to the session (by scope = session/thread id,
            or by a <<ccr:…>> handle shown in one of its tool results); footers and markers are
            inside `emitted`, so `removed` is already net of them (they are also listed);
added     = capsule's standing context (MCP tool schemas, instructions, agent note), once per
            session that used capsule;
bounces   = tokens that came back: every ctx_expand / `capsule ctx expand` result, and a command
            re-run right after a lossy emission of the same command (its whole result);
net       = removed - added - bounces.
Not responsible for ingestion or the ledger itself. Invariant: every figure is a sum over row ids
listed with it, so anyone can recompute it from the stored rows.
"""

from __future__ import annotations

from capsule.ground import tokens

FOOTER_SAMPLE = "[full output: capsule ctx expand <<ccr:0123456789abcdef01234567>>]"


def door(row: dict) -> str:
    """Which door an emission came through (a ledger `door` column wins when present)."""
    if row.get("door"):
        return row["door"]
    cmd = row.get("command") or ""
    if cmd.startswith("ctx_"):
        return "mcp"
    if not cmd:
        return "pipe"
    return "shell"


def analyse(events: list[dict], ledger_rows: list[dict], standing: dict) -> list[dict]:
    """`standing`: the standing-context figure (prompt.budget.everything_on()), handed in by the caller."""
    footer_tokens = tokens.count(FOOTER_SAMPLE)
    by_handle = {r["handle"]: r for r in ledger_rows if r.get("handle")}
    by_scope: dict[str, list[dict]] = {}
    for r in ledger_rows:
        by_scope.setdefault(r.get("scope") or "", []).append(r)
    sessions: dict[tuple[str, str], list[dict]] = {}
    for e in events:
        sessions.setdefault((e["agent"], e["session_id"]), []).append(e)
    out = []
    for (agent, sid), evs in sessions.items():
        evs.sort(key=lambda e: (e.get("ts") or 0, e["tool_id"]))
        scopes = {sid} | {e["thread_id"] for e in evs if e.get("thread_id")}
        joined = {r["id"]: r for s in scopes for r in by_scope.get(s, [])}
        joined.update({by_handle[e["handle"]]["id"]: by_handle[e["handle"]] for e in evs
                       if e.get("handle") in by_handle})
        rows = sorted(joined.values(), key=lambda r: r["id"])
        applied = [r for r in rows if r.get("applied")]
        removed = sum(r["raw_tokens"] - r["emitted_tokens"] for r in applied)
        would = sum(r["raw_tokens"] - r["would_emit_tokens"] for r in rows
                    if not r.get("applied") and r.get("would_emit_tokens") is not None)
        used = bool(rows) or any(e.get("handle") or (e.get("name") or "").startswith("mcp__capsule__") for e in evs)
        added = standing["tokens"] if used else 0
        bounces = _bounces(evs)
        received = sum(e.get("result_tokens") or 0 for e in evs)
        fam: dict[str, int] = {}
        doors: dict[str, int] = {}
        for r in applied:
            fam[r.get("family") or "unknown"] = fam.get(r.get("family") or "unknown", 0) + r["raw_tokens"] - r["emitted_tokens"]
            doors[door(r)] = doors.get(door(r), 0) + r["raw_tokens"] - r["emitted_tokens"]
        bounce_tokens = sum(b["tokens"] for b in bounces)
        out.append({"agent": agent, "session_id": sid, "tool_results": sum(1 for e in evs if e.get("result_tokens") is not None),
                    "received_tokens": received, "removed_tokens": removed, "would_remove_tokens": would,
                    "footer_tokens": footer_tokens * sum(1 for r in applied if r.get("handle")),
                    "added_tokens": added, "added_parts": standing["parts"] if used else {},
                    "bounce_tokens": bounce_tokens, "bounces": bounces,
                    "net_tokens": removed - added - bounce_tokens,
                    "by_family": fam, "by_door": doors, "ledger_ids": [r["id"] for r in rows]})
    out.sort(key=lambda s: s["session_id"])
    return out


def _bounces(evs: list[dict]) -> list[dict]:
    out = []
    last_cmd: dict | None = None
    for e in evs:
        kind = e.get("kind")
        if kind == "expand":
            out.append({"tool_id": e["tool_id"], "why": "expand", "target": e.get("target"),
                        "tokens": e.get("result_tokens") or 0})
        elif kind == "command":
            if last_cmd and last_cmd.get("handle") and e.get("target") == last_cmd.get("target"):
                out.append({"tool_id": e["tool_id"], "why": "re-run after a lossy emission",
                            "target": e.get("target"), "tokens": e.get("result_tokens") or 0})
            last_cmd = e
    return out


def totals(per_session: list[dict]) -> dict:
    keys = ("received_tokens", "removed_tokens", "would_remove_tokens", "footer_tokens", "added_tokens",
            "bounce_tokens", "net_tokens")
    t = {k: sum(s[k] for s in per_session) for k in keys}
    fam: dict[str, int] = {}
    doors: dict[str, int] = {}
    for s in per_session:
        for k, v in s["by_family"].items():
            fam[k] = fam.get(k, 0) + v
        for k, v in s["by_door"].items():
            doors[k] = doors.get(k, 0) + v
    t["by_family"], t["by_door"] = fam, doors
    return t
