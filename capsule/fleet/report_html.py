"""The fleet report as one self-contained HTML page: the same dict as `fleet report --json`, as tables.

Not responsible for any figure (capsule.fleet.report). Invariant: no script, no network: every
value is escaped text in a table.
"""

from __future__ import annotations

from html import escape

from capsule.fleet.report import GROUPS

_STYLE = ("body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse;margin:0 0 2em}"
          "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child,th:first-child"
          "{text-align:left}caption{text-align:left;font-weight:bold;padding:4px 0}")
_COLS = ("capsules", "calls", "cost $", "cache read", "emissions", "raw tokens", "saved", "net tokens", "busts")


def _cells(g: dict) -> list[str]:
    u, t, s = g["usage"], g["total"], g["savings"]
    share = "-" if u["cache_read_share"] is None else f"{100 * u['cache_read_share']:.1f}%"
    return [str(g.get("capsules", 1)), f"{u['calls']:,}", f"{u['cost_usd'] or 0:.4f}", share, f"{t['emissions']:,}",
            f"{t['raw_tokens']:,}", f"{t['saved_pct']:.1f}%", f"{s['net_tokens']:,}", str(g["cache"]["busts"])]


def _table(caption: str, rows: list[tuple[str, dict]]) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in ("", *_COLS))
    body = "".join("<tr><td>" + escape(name) + "</td>" + "".join(f"<td>{escape(v)}</td>" for v in _cells(g))
                   + "</tr>" for name, g in rows)
    return f"<table><caption>{escape(caption)}</caption><tr>{head}</tr>{body}</table>"


def render(data: dict) -> str:
    parts = [_table("fleet", [("FLEET", data["fleet"])])]
    for g in GROUPS:
        parts.append(_table(f"by {g}", [(a[g], a) for a in data[f"by_{g}"]]))
    parts.append(_table("capsules", [(f"{c['container']} ({c['role']}, {c['host']})", c) for c in data["capsules"]]))
    for q in data["quota_share"]:
        rows = "".join(f"<tr><td>{escape(r['role'])}</td><td>{r['tokens']:,}</td><td>{100 * r['token_share']:.1f}%"
                       f"</td><td>{r['cost_usd']:.4f}</td></tr>" for r in q["by_role"])
        parts.append(f"<table><caption>quota share of account {escape(q['account'])}</caption><tr><th>role</th>"
                     f"<th>tokens</th><th>share</th><th>cost $</th></tr>{rows}</table>")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>capsule fleet report</title>"
            f"<style>{_STYLE}</style></head><body><h1>capsule fleet report</h1>{''.join(parts)}</body></html>")
