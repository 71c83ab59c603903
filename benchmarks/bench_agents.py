"""What the model sees through the real agent clients, plain vs capsule, in one run.

Runs the session of issues 9 and 25 (a failing pytest naming `refund_half`, `git log --stat -15`,
`cat` of 400 records with one failed as a JSON array written one record a line and as JSON Lines,
`grep -rn TODO src` with one decisive hit among 300 routine ones) through the real Claude Code and the real Codex,
each driven by a scripted fake model on 127.0.0.1, once plain and once under
`capsule up --role python-dev --local`, and prints per call and per client: tool-result tokens
(cl100k) plain and capsule, their ratio, and how many of the needed facts the model saw.
Target (issue 25): capsule <= 0.55 of plain for each client, every fact kept.

    python benchmarks/bench_agents.py [--client claude|codex] [--json FILE]
    python benchmarks/bench_agents.py --container    # also inside the capsule image (`capsule up`,
        # the fake on a docker network's gateway), next to plain and --local; the image has no
        # pytest, so this table leaves out the pytest call in all three columns
    python benchmarks/bench_agents.py --matrix       # each client at its oldest and its newest tested
        # release (the pin, and the one scripts/setup-clients.sh installs apart); Claude Code
        # also runs a native Read and Grep through the hook door (proxy off); per client and version:
        # plain vs capsule tokens, facts, and the latency capsule adds per tool call
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e import harness  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--client", choices=sorted(harness.RUNNERS), action="append",
                    help="run only this client (repeatable; default: both)")
    ap.add_argument("--json", type=Path, help="also write the raw numbers here")
    ap.add_argument("--container", action="store_true", help="also run each session inside the capsule image")
    ap.add_argument("--matrix", action="store_true", help="oldest and newest tested release of each client")
    args = ap.parse_args()
    if args.matrix:
        return matrix_table(args.client or sorted(harness.RUNNERS))
    if args.container:
        return container_table(args.client or list(harness.IN_IMAGE))
    pairs = []
    with tempfile.TemporaryDirectory(prefix="capsule-bench-agents-") as tmp:
        for client in args.client or sorted(harness.RUNNERS):
            pairs.append(harness.run_pair(client, Path(tmp)))
    print(harness.table(pairs))
    if args.json:
        args.json.write_text(json.dumps([{
            "client": p.client, "call": c.name, "plain_tokens": p.tokens()[i], "capsule_tokens": k.tokens()[i],
            "facts": len(p.facts[i]), "missing_plain": p.missing(i), "missing_capsule": k.missing(i)}
            for p, k in pairs for i, c in enumerate(harness.CALLS)], indent=2))
    return 0


def container_table(clients: list[str]) -> int:
    calls = tuple(c for c in harness.CALLS if c.name != "pytest")
    rows = [f"{'client':7} {'call':9} {'plain':>7} {'--local':>8} {'image':>7}  facts plain  --local  image"]
    with tempfile.TemporaryDirectory(prefix="capsule-bench-agents-") as tmp:
        Path(tmp).chmod(0o755)
        for client in clients:
            plain, local = harness.run_pair(client, Path(tmp) / "pair", calls)
            inside = harness.run_in_container(client, Path(tmp), calls)
            totals = [0, 0, 0]
            kept = [0, 0, 0]
            for i, call in enumerate(calls):
                toks = [s.tokens()[i] for s in (plain, local, inside)]
                got = [len(s.facts[i]) - len(s.missing(i)) for s in (plain, local, inside)]
                n = len(plain.facts[i])
                totals = [a + b for a, b in zip(totals, toks)]
                kept = [a + b for a, b in zip(kept, got)]
                rows.append(f"{client:7} {call.name:9} {toks[0]:>7} {toks[1]:>8} {toks[2]:>7}  "
                            f"{got[0]}/{n}{'':9} {got[1]}/{n}{'':5} {got[2]}/{n}")
            n = sum(len(f) for f in plain.facts)
            rows.append(f"{client:7} {'TOTAL':9} {totals[0]:>7} {totals[1]:>8} {totals[2]:>7}  "
                        f"{kept[0]}/{n}{'':9} {kept[1]}/{n}{'':5} {kept[2]}/{n}")
    print("\n".join(rows))
    return 0


def _versions(client: str) -> list[tuple[str, str]]:
    """(version, bin dir) of the oldest and the newest tested release (the pin on PATH is one of them)."""
    import os  # noqa: PLC0415

    from capsule.agents import clients  # noqa: PLC0415

    out = []
    for which, version in zip(("oldest", "newest"), clients.get(client).tested):
        if not out or out[-1][0] != version:
            out.append((version, os.path.dirname(harness.tested_client(client, which))))
    return out


def _per_call_ms(plain, cap, calls: int) -> float:
    """The latency capsule adds per tool call: from the model's answer to the client's next request
    (the tool ran, its hooks and shims too), capsule minus plain, averaged over the calls."""
    n = min(len(plain.gaps), len(cap.gaps), calls)
    return sum(c - p for p, c in zip(plain.gaps[:n], cap.gaps[:n])) * 1000 / max(n, 1)


def matrix_table(clients: list[str]) -> int:
    import os  # noqa: PLC0415

    rows = [f"{'client':7} {'version':9} {'session':8} {'plain':>7} {'capsule':>8} {'ratio':>6} "
            f"{'facts plain':>12} {'facts capsule':>14} {'+ms/call':>9}"]
    path0 = os.environ["PATH"]
    with tempfile.TemporaryDirectory(prefix="capsule-bench-matrix-") as tmp:
        for client in clients:
            for version, bindir in _versions(client):
                os.environ["PATH"] = f"{bindir}:{path0}"
                try:
                    root = Path(tmp) / f"{client}-{version}"
                    plain, cap = harness.run_pair(client, root)
                    n = sum(len(f) for f in plain.facts)
                    kept = [n - sum(len(s.missing(i)) for i in range(len(s.facts))) for s in (plain, cap)]
                    tp, tc = sum(plain.tokens()), sum(cap.tokens())
                    rows.append(f"{client:7} {version:9} {'shell':8} {tp:>7} {tc:>8} {tc / max(tp, 1):>6.2f} "
                                f"{kept[0]:>10}/{n} {kept[1]:>12}/{n} {_per_call_ms(plain, cap, len(harness.CALLS)):>9.0f}")
                    if client == "claude":
                        rows.append(_hook_row(root, version))
                finally:
                    os.environ["PATH"] = path0
    print("\n".join(rows))
    print("(a shared, loaded machine: compare ratios within one run; +ms/call = the mean, over the tool calls, "
          "of capsule's minus plain's time from the model's answer to the client's next request)")
    return 0


def _hook_row(root: Path, version: str) -> str:
    """A native Read of 400 JSON Lines records and a wide Grep (all 301 TODOs: head_limit 0, else the
    client keeps 250 lines of ripgrep's unordered output and may drop the decisive one itself),
    through the hook door (proxy off)."""
    facts = ((harness.BAD_ID, harness.BAD_ERROR), (harness.DECISIVE.split(":", 2)[2].strip(),))
    sessions = []
    for mode in ("plain", "capsule"):
        ws = root / f"hook-{mode}" / "shop"
        ws.mkdir(parents=True)
        harness.build_workspace(ws)
        calls = [("Read", {"file_path": str(ws / "data" / "orders.jsonl")}),
                 ("Grep", {"pattern": "TODO", "path": str(ws / "src"), "output_mode": "content", "-n": True,
                           "head_limit": 0})]
        session, _ = harness.run_claude_tools(ws, root / f"hook-{mode}" / "home", mode, calls,
                                              {"JACKIN_CTX_NO_PROXY": "1"})
        sessions.append(session)
    plain, cap = sessions
    n = sum(len(f) for f in facts)
    kept = [sum(f in s.results[i] for i, fs in enumerate(facts) for f in fs) for s in sessions]
    tp, tc = sum(plain.tokens()), sum(cap.tokens())
    return (f"{'claude':7} {version:9} {'hook':8} {tp:>7} {tc:>8} {tc / max(tp, 1):>6.2f} "
            f"{kept[0]:>10}/{n} {kept[1]:>12}/{n} {_per_call_ms(plain, cap, 2):>9.0f}")


if __name__ == "__main__":
    raise SystemExit(main())
