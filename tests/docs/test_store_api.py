"""Every ledger.db / usage.db / quota.db row is written through the store's one API (issue 32.2).

The SQL that creates, writes or changes these tables (emissions, route_events, route_inputs, calls,
tools, sessions, files, quota_samples) lives in capsule/store/ only: a writer anywhere else calls the
store's typed API (store/emissions.py, store/usage_rows.py, store/route_rows.py, store/quota_rows.py).
capsule/fleet/ is outside the rule: it copies the same tables into its own database (SQLAlchemy).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TABLES = ("emissions", "route_events", "route_inputs", "calls", "tools", "sessions", "files", "quota_samples")
WRITE = re.compile(r"\b(INSERT(?:\s+OR\s+\w+)?\s+INTO|UPDATE|DELETE\s+FROM|CREATE\s+TABLE(?:\s+IF\s+NOT\s+EXISTS)?"
                   r"|ALTER\s+TABLE|REPLACE\s+INTO)\s+[\"']?(\w+)", re.IGNORECASE)
OUTSIDE_THE_RULE = ("capsule/store/", "capsule/fleet/")
TEMPLATES = ("shim_template", "hook_template")   # sources with @PLACEHOLDERS@ (they write no SQL)


def writes(source: str) -> list[tuple[int, str]]:
    """(line, table) of every string constant in `source` that writes one of TABLES."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            for m in WRITE.finditer(node.value):
                if m.group(2).lower() in TABLES:
                    out.append((node.lineno, m.group(2)))
    return sorted(out)


def test_state_rows_are_written_through_the_store_only():
    found = []
    for path in sorted((REPO / "capsule").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith(OUTSIDE_THE_RULE) or any(t in path.parts for t in TEMPLATES):
            continue
        found += [f"{rel}:{line} writes {table}" for line, table in writes(path.read_text(encoding="utf-8"))]
    assert not found, ("SQL for the state tables outside capsule/store/: call the store's API instead\n  "
                       + "\n  ".join(found))


def test_the_check_sees_a_writer():
    """The checker itself can fail: an f-string INSERT and an UPDATE are found, a SELECT is not."""
    src = ('conn.execute(f"INSERT INTO route_events(ts) VALUES({x})")\n'
           'conn.execute("update quota_samples SET ts = 1")\n'
           'conn.execute("SELECT * FROM emissions")\n')
    assert writes(src) == [(1, "route_events"), (2, "quota_samples")]
