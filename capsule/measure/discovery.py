"""DISCOVERY: wasted effort visible in the tool calls, per session and across sessions.

- re-reads: a file read again in the same session — `unchanged` (same content: the tokens were
  already in context) or `changed` (content differs; `by_agent` when the agent edited it between);
- repeated commands: the same command line run again with no edit in between;
- largest tool results.
Not responsible for ingestion; reads stored tool rows only. Invariant: every finding names its
session and tool-call ids.
"""

from __future__ import annotations

TOP_N = 15


def analyse(events: list[dict], top: int = TOP_N) -> dict:
    sessions: dict[tuple[str, str], list[dict]] = {}
    for e in events:
        sessions.setdefault((e["agent"], e["session_id"]), []).append(e)
    rereads, repeats = [], []
    for (agent, sid), evs in sessions.items():
        evs.sort(key=lambda e: (e.get("ts") or 0, e["tool_id"]))
        last_read: dict[str, dict] = {}
        edited_since: set[str] = set()      # paths edited since their last read
        last_run: dict[str, dict] = {}
        edit_seen = 0                       # edits so far (any path)
        for e in evs:
            kind, target = e.get("kind"), e.get("target")
            if kind == "edit" and target:
                edit_seen += 1
                edited_since.update(t for t in target.split("\n") if t)
            elif kind == "read" and target and e.get("result_hash"):
                prev = last_read.get(target)
                if prev is not None:
                    same = prev["result_hash"] == e["result_hash"]
                    rereads.append({"agent": agent, "session_id": sid, "path": target,
                                    "state": "unchanged" if same else "changed",
                                    "by_agent": target in edited_since, "tokens": e.get("result_tokens") or 0,
                                    "tool_ids": [prev["tool_id"], e["tool_id"]]})
                last_read[target] = e
                edited_since.discard(target)
            elif kind == "command" and target:
                prev = last_run.get(target)
                if prev is not None and prev["_edits"] == edit_seen:
                    repeats.append({"agent": agent, "session_id": sid, "command": target,
                                    "tokens": e.get("result_tokens") or 0,
                                    "tool_ids": [prev["tool_id"], e["tool_id"]]})
                last_run[target] = {**e, "_edits": edit_seen}
    largest = sorted((e for e in events if e.get("result_tokens")), key=lambda e: -e["result_tokens"])[:top]
    return {
        "rereads": rereads,
        "repeated_commands": repeats,
        "largest_results": [{"agent": e["agent"], "session_id": e["session_id"], "tool_id": e["tool_id"],
                             "name": e.get("name"), "target": e.get("target"), "tokens": e["result_tokens"]}
                            for e in largest],
        "across_sessions": {"rereads_by_path": _rollup(rereads, "path"),
                            "repeats_by_command": _rollup(repeats, "command")},
        "totals": {"unchanged_reread_tokens": sum(r["tokens"] for r in rereads if r["state"] == "unchanged"),
                   "changed_reread_tokens": sum(r["tokens"] for r in rereads if r["state"] == "changed"),
                   "repeated_command_tokens": sum(r["tokens"] for r in repeats)},
    }


def _rollup(rows: list[dict], key: str) -> list[dict]:
    agg: dict[str, dict] = {}
    for r in rows:
        a = agg.setdefault(r[key], {key: r[key], "times": 0, "tokens": 0, "sessions": set()})
        a["times"] += 1
        a["tokens"] += r["tokens"]
        a["sessions"].add(r["session_id"])
    out = [{**a, "sessions": len(a["sessions"])} for a in agg.values()]
    return sorted(out, key=lambda a: -a["tokens"])[:TOP_N]
