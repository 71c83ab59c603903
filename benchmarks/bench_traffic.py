"""Issue 29's benchmark over real, public agent traffic: tokens saved and the share of later-used
lines kept, with and without intent, next to a blind head/tail cut and (`--before`) an older capsule.

    .venv/bin/python benchmarks/bench_traffic.py [--data FILE] [--before PYTHON] [--json] [--misses] [--python PATH]
    # --before: the same run under another interpreter's capsule (e.g. a worktree of 42e5b6e with its
    #           own venv), printed beside this one; --python: run this script under that interpreter only

Data (benchmarks/data/traffic/, MANIFEST.md there: source repository, path, commit, licence): one JSON
line per observation capsule's doors see in a real session (a shell command's output through the
shims, a Read's file content through the hook door as `cat PATH`), with the user's last prompt
(`intent`) and the agent's next steps (`next`). The "used later" measure is benchmarks/traffic_usage.py.
Each observation goes through Engine.observe the way a door hands it in: the command, the exit code,
one scope per session (so a failure's names rank later in that session), in order; a fresh state dir
per condition. Rows: all steps; outputs of at least 1,000 tokens; each family (`unknown` is the
generic fallback, shown apart). Columns: observations, raw and emitted tokens (cl100k), saved %,
later-used lines, those kept whole, kept %.

Figures (2026-12-07; 37 observations from 5 sessions, benchmarks/data/traffic/MANIFEST.md: 4 Claude Code
sessions of entireio/cli and a Codex subagent of entireio/marvin; too few to rank families), saved % /
later-used lines kept:

    .venv/bin/python benchmarks/bench_traffic.py --before WORKTREE_OF_42e5b6e/.venv/bin/python --misses
    rows (obs, raw tok)        blind 40+40      42e5b6e no intent / intent     main no intent / intent (= +prompt)
    all steps (37, 68,920)     62.7% 35/47      24.9% 35/47 / 24.6% 35/47      23.6% 35/47 / 16.9% 47/47
    >= 1,000 tok (17, 61,836)  68.4%  2/14      27.1%  2/14 / 26.8%  2/14      25.6%  2/14 / 18.1% 14/14
    read (17, 38,254)          70.4% 33/45      24.6% 33/45 (both conditions)  24.6% 33/45 / 12.8% 45/45
    git (7, 21,999)            70.4%  0/0       31.2% / 31.2%                  26.9% / 27.4% (ranged markers)
    rg (8 Grep/rg results)      0.0%  2/2       12.3%  2/2 (all conditions, both capsules)
    gh (gh pr diff, 1)         45.2%  0/0       12.0% / 0.0% (both capsules)
    unknown/generic (4)        pass whole everywhere
The misses of 42e5b6e (and of main without a cue): a whole-file Read of setup.go (672 lines, hook door
`cat PATH`) becomes a 25-line outline; the line `fmt.Fprintln(w, "✓ Settings saved")` (lines 209 and
312), which the user's prompt names and the agent's answer quotes next, is not shown; the re-read of
the same file (577 lines) loses the 11 lines the agent's two Edits quote next. Main with the prompt as
cue keeps all of them (observe/read_focus.py: the outline plus the regions the cues point at), at the
token cost shown. The Codex observations' next steps are commands, which rarely quote a line; `sed -n`
ranges and `| head`/`| tail` pipelines pass whole (family read), so they lose nothing and save little.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import interpreter  # noqa: E402
import traffic_usage as usage  # noqa: E402

DATA = HERE / "data" / "traffic" / "observations.jsonl"
LARGE = 1000            # tokens: the "large outputs" row
HEAD = TAIL = 40        # the blind cut compared against
GENERIC = "unknown"     # the family of output no rule names: the salience model's own ground
CONDITIONS = ("no intent", "intent", "intent+prompt")   # what the door hands in beside the output


def load(path: Path) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for r in rows:
        missing = {"id", "source", "command", "output", "next"} - r.keys()
        if missing:
            raise ValueError(f"{path}: observation {r.get('id', '?')} lacks {sorted(missing)}")
    return rows


def measure(rows: list[dict]) -> dict:
    """Every observation through this interpreter's capsule, without and with intent, and the blind
    cut: per observation, the family, raw and emitted tokens, the used lines and which were kept."""
    from capsule.engine import Engine  # noqa: PLC0415
    from capsule.ground import tokens  # noqa: PLC0415
    from capsule.ground.types import Observation  # noqa: PLC0415

    out = {}
    conditions = [("no intent", ()), ("intent", ("intent",))]
    if "prompt" in Observation._fields:     # the hook door also hands in the user's last prompt (not in 42e5b6e)
        conditions.append(("intent+prompt", ("intent", "prompt")))
    for label, given in conditions:
        with tempfile.TemporaryDirectory() as state:
            engine = Engine(Path(state), mode="standard", scope="bench-traffic")
            for r in rows:
                task = {k: r.get("intent") for k in given}
                em = engine.observe(Observation(r["output"].encode("utf-8", "surrogateescape"), command=r["command"],
                                                exit_code=r.get("exit_code"), scope=r["source"], **task))
                emitted = em.data.decode("utf-8", "surrogateescape")
                rec = out.setdefault(r["id"], {"id": r["id"], "raw_tokens": tokens.count(r["output"])})
                rec[label] = {"family": em.family, "transform": em.transform_id, "tokens": tokens.count(emitted),
                              "kept": usage.kept(used(r), emitted), "emitted": emitted}
    for r in rows:
        cut = usage.head_tail(r["output"], HEAD, TAIL)
        out[r["id"]]["head/tail"] = {"tokens": tokens.count(cut), "kept": usage.kept(used(r), cut)}
        out[r["id"]]["used"] = used(r)
    return out


def used(r: dict) -> list[str]:
    return usage.used_lines(r["output"], r["next"], r.get("intent"))


def row(name: str, recs: list[dict], cond: str) -> list:
    raw = sum(x["raw_tokens"] for x in recs)
    out = sum(x[cond]["tokens"] for x in recs)
    n_used = sum(len(x["used"]) for x in recs)
    n_kept = sum(sum(x[cond]["kept"]) for x in recs)
    return [name, cond, len(recs), raw, out, f"{100 * (raw - out) / raw:.1f}%" if raw else "-",
            n_used, n_kept, f"{100 * n_kept / n_used:.1f}%" if n_used else "-"]


def table(runs: dict[str, dict]) -> list[list]:
    """Rows of every subset × condition; the after run's families group both runs (joined by id)."""
    after = runs["after"]
    ids = list(after)
    fam = {i: after[i]["no intent"]["family"] for i in ids}
    subsets = [("all steps", ids), (f">= {LARGE} tokens", [i for i in ids if after[i]["raw_tokens"] >= LARGE])]
    families = sorted(set(fam.values()), key=lambda f: (f == GENERIC, f))
    subsets += [(f"family {f}" + (" (generic)" if f == GENERIC else ""), [i for i in ids if fam[i] == f]) for f in families]
    rows = []
    for name, chosen in subsets:
        if not chosen:
            continue
        rows.append(row(name, [after[i] for i in chosen], "head/tail") + ["blind 40+40"])
        for run, recs in runs.items():
            for cond in CONDITIONS:
                if cond in recs[chosen[0]]:
                    rows.append(row(name, [recs[i] for i in chosen], cond) + [run])
    return rows


def print_table(rows: list[list]) -> None:
    head = ["rows", "condition", "obs", "raw_tok", "out_tok", "saved", "used", "kept", "kept%", "capsule"]
    width = [max(len(str(r[k])) for r in rows + [head]) + 2 for k in range(len(head))]
    for r in [head] + rows:
        print("".join(str(v).ljust(w) if k < 2 else str(v).rjust(w) for k, (v, w) in enumerate(zip(r, width))))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA, help="observations, one JSON line each")
    ap.add_argument("--before", help="another interpreter whose capsule is measured beside this one")
    ap.add_argument("--json", action="store_true", help="print this capsule's per-observation figures as JSON")
    ap.add_argument("--misses", action="store_true", help="list every later-used line an emission did not keep")
    interpreter.add_option(ap)
    args = ap.parse_args(argv)
    interpreter.run_under(ap, args.python, __file__)
    if not args.data.is_file():
        print(f"bench_traffic: no data file at {args.data}", file=sys.stderr)
        return 2
    try:
        rows = load(args.data)
    except (ValueError, json.JSONDecodeError) as exc:
        print(f"bench_traffic: {exc}", file=sys.stderr)
        return 2
    runs = {"after": measure(rows)}
    if args.json:
        print(json.dumps(runs["after"]))
        return 0
    if args.before:
        done = subprocess.run([args.before, __file__, "--json", "--data", str(args.data)],
                              capture_output=True, text=True, timeout=1800)
        if done.returncode:
            print(f"bench_traffic: --before {args.before} failed:\n{done.stderr[-2000:]}", file=sys.stderr)
            return 2
        runs = {"before": json.loads(done.stdout), "after": runs["after"]}
    sources = sorted({r["source"] for r in rows})
    print(f"{len(rows)} observations from {len(sources)} session(s): " + ", ".join(sources))
    print_table(table(runs))
    if args.misses:
        for run, recs in runs.items():
            for i, rec in recs.items():
                for cond in (c for c in CONDITIONS if c in rec):
                    for line, ok in zip(rec["used"], rec[cond]["kept"]):
                        if not ok:
                            print(f"[{run}, {cond}] {i} ({rec[cond]['family']}, {rec[cond]['transform']}): {line.strip()[:150]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
