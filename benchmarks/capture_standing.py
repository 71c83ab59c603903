"""What capsule adds to every model request, measured on the real clients' requests.

Runs the real Claude Code and the real Codex against a local fake model API, once plain and once
under `capsule up --role ROLE --local`, and prints per client: each added tool (capsule's own, and
the ones the client adds because a server is registered) and the added standing text (net of the lines it
replaced: the identity line --append-system-prompt swaps, built-in agent descriptions), in tokens of
the client's model family (prompt/data/families.toml), next to what `capsule ctx doctor` counts.
With --write it also records the client-added tools in capsule/prompt/data/client_tools.json
(captured from a probe server that declares resources, so Claude Code shows its resource tools).

    python benchmarks/capture_standing.py [--role python-dev] [--write]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from capsule.policy.manifest import load_role  # noqa: E402
from capsule.prompt import budget  # noqa: E402
from tests.prompt import capture  # noqa: E402


def _workspace(root: Path) -> Path:
    ws = root / "ws"
    ws.mkdir(parents=True)
    (ws / "README.md").write_text("# Demo\n\nIntro.\n")
    return ws


def client_tools(root: Path) -> dict:
    """The tools each client adds of its own when a server (declaring resources) is registered."""
    root.mkdir(parents=True, exist_ok=True)
    probe = root / "probe.py"
    probe.write_text(capture.RESOURCE_SERVER)
    ws = _workspace(root / "probe")
    cfg = root / "probe.json"
    cfg.write_text(json.dumps({"mcpServers": {"probe": {"type": "stdio", "command": sys.executable, "args": [str(probe)]}}}))
    plain = capture.claude(ws, root / "c0", calls=[])
    probed = capture.claude(ws, root / "c1", calls=[], extra=["--mcp-config", str(cfg), "--strict-mcp-config"])
    claude_added = [t for t in capture.added_tools(plain.requests[0], probed.requests[0])
                    if not t["name"].startswith("mcp__")]
    table = f'\n[mcp_servers.probe]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(probe))}]\nrequired = true\n'
    xplain = capture.codex(ws, root / "x0", calls=[])
    xprobed = capture.codex(ws, root / "x1", calls=[], extra_config=table)
    codex_added = [t for t in capture.added_tools(xplain.requests[0], xprobed.requests[0])
                   if not (t.get("name") or "").startswith("mcp__")]
    version = {name: subprocess.run([capture.client(name), "--version"], capture_output=True, text=True).stdout.split()[-1
               if name == "codex" else 0] for name in ("claude", "codex")}
    return {"claude": {"version": version["claude"], "resource_tools": claude_added},
            "codex": {"version": version["codex"], "resource_tools": codex_added}}


def measured(role: str, root: Path) -> dict:
    """Per client: the parts capsule adds, from a plain and a capsule capture, in family tokens."""
    out = {}
    for name, family in budget.CLIENT_FAMILY.items():
        run = getattr(capture, name)
        ws = _workspace(root / name)
        role_obj = load_role(role)
        model = role_obj.agent.model if role_obj.agent.kind == name else None
        same_model = ({"extra": ["--model", model]} if name == "claude" else {"model": model}) if model else {}
        plain = run(ws, root / f"{name}-home", **same_model).requests[0]   # one home and model: same paths, same prompt
        ours = run(ws, root / f"{name}-home", role=role).requests[0]
        count, label = budget.counter(family)
        added = capture.added_tools(plain, ours)
        mine = [t for t in added if (t.get("name") or "").startswith("mcp__")]
        theirs = [t for t in added if t not in mine]
        text_of = capture.claude_system_text if name == "claude" else capture.codex_developer_text
        base, text = text_of(plain), text_of(ours)
        extra = "\n".join(line for line in text.splitlines() if line not in set(base.splitlines()))
        gone = "\n".join(line for line in base.splitlines() if line not in set(text.splitlines()))
        parts = {"mcp tools": count(budget.compact(mine)) if mine else 0,
                 "client's MCP resource tools": count(budget.compact(theirs)) if theirs else 0,
                 "added text": count(extra) if extra else 0,
                 "text it replaced": -count(gone) if gone else 0}
        out[name] = {"label": label, "parts": parts, "total": sum(parts.values())}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--role", default="python-dev")
    ap.add_argument("--write", action="store_true", help="record the client-added tools in client_tools.json")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="capsule-capture-") as tmp:
        root = Path(tmp)
        if args.write:
            data = client_tools(root / "tools")
            path = budget.DATA / "client_tools.json"
            path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            print(f"wrote {path}")
            budget.client_tools.cache_clear()
        got = measured(args.role, root / "measure")
    print(f"{'client':7} {'part':30} {'tokens':>7}  label")
    for name, m in got.items():
        for part, n in m["parts"].items():
            print(f"{name:7} {part:30} {n:>7}  {m['label']}")
        print(f"{name:7} {'TOTAL added per request':30} {m['total']:>7}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
