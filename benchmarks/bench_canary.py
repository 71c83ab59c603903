"""Canary prompts for the output register: does terse/compact keep what a prompt required?

Offline (no API key), it checks everything that needs no model and says so: each register's text is
present in what the client gets (and `off` sends none), the standing context of every shipped role
fits its budget per model family, and the compiled text is byte-identical across two processes.
With ANTHROPIC_API_KEY (or OPENAI_API_KEY) it also sends the six canaries (benchmarks/data/
canaries.toml: a negation, an ordering, exact numbers, a "don't do X", a multi-step instruction, a
caveat) through the real model once per register, with the register's standing text as the system
prompt, and checks each answer keeps what the prompt required; output tokens per register are
printed next to it.

    python benchmarks/bench_canary.py [--model claude-sonnet-4-5] [--registers off,terse,compact]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from capsule.ground.switches import Switches  # noqa: E402
from capsule.policy import plan as planning  # noqa: E402
from capsule.policy.manifest import load_role, role_names  # noqa: E402
from capsule.prompt import budget, pack  # noqa: E402

CANARIES = Path(__file__).with_name("data") / "canaries.toml"


def canaries() -> list[dict]:
    return tomllib.loads(CANARIES.read_text(encoding="utf-8"))["canary"]


def check(canary: dict, answer: str) -> list[str]:
    """What `answer` lost of what the canary required; [] when it kept everything."""
    text = answer.lower()
    missing = [m for m in canary.get("must", []) if m.lower() not in text]
    wrong = [f"contains {m!r}" for m in canary.get("must_not", []) if m.lower() in text]
    anyof = canary.get("must_any")
    if anyof and not any(a.lower() in text for a in anyof):
        wrong.append(f"none of {anyof}")
    if canary.get("ordered") and not missing:
        at = [text.find(m.lower()) for m in canary["must"]]
        if at != sorted(at):
            wrong.append("out of order")
    return [f"missing {m!r}" for m in missing] + wrong


# -- offline ----------------------------------------------------------------------------------------
def offline(registers: list[str]) -> list[tuple[str, bool, str]]:
    rows: list[tuple[str, bool, str]] = []
    for reg in registers:
        text = pack.standing_text({"register": reg}, read_door=False)
        if reg == "off":
            ok = all(pack.data()["register"][r]["text"] not in text for r in ("terse", "compact"))
            rows.append((f"presence: register={reg} sends no register text", ok, f"{len(text)} chars (guard lines only)"))
        else:
            ok = pack.data()["register"][reg]["text"] in text and pack.data()["guards"]["text"] in text
            rows.append((f"presence: register={reg} text and guards", ok, f"{len(text)} chars"))
    every = {k: planning.Decision(k, True, "bench") for k in planning.SUBSYSTEMS}
    for name in role_names():
        role = load_role(name)
        plan = planning.plan(role, Switches.read({}))
        for client, family in budget.CLIENT_FAMILY.items():
            got = budget.count_parts(family, budget.texts(client, role, plan))
            full = budget.count_parts(family, budget.texts(client, role, every))
            ok = got["tokens"] <= role.context.standing_budget and full["tokens"] <= 1000
            rows.append((f"budget: {name} via {client}", ok,
                         f"{got['tokens']} as planned, {full['tokens']} every part on, of {role.context.standing_budget} "
                         f"({got['label']}; largest {full['largest']})"))
    code = ("import sys; sys.path.insert(0, %r); from capsule.prompt import pack; "
            "print(pack.standing_text({'register': %r}) + pack.report_contract(), end='')")
    for reg in registers:
        outs = {subprocess.run([sys.executable, "-c", code % (str(ROOT), reg)], capture_output=True, text=True,
                               env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout for seed in (1, 2)}
        rows.append((f"stability: register={reg} identical in two processes", len(outs) == 1, f"{len(outs)} distinct"))
    return rows


# -- online -----------------------------------------------------------------------------------------
def ask(system: str, prompt: str, model: str) -> tuple[str, int]:
    """(answer text, output tokens) from the real model API whose key is in the environment."""
    import httpx  # noqa: PLC0415

    if os.environ.get("ANTHROPIC_API_KEY"):
        url = os.environ.get("ANTHROPIC_BASE_URL", "https://api.anthropic.com").rstrip("/") + "/v1/messages"
        body = {"model": model, "max_tokens": 600, "messages": [{"role": "user", "content": prompt}]}
        if system:
            body["system"] = system
        r = httpx.post(url, json=body, timeout=120, headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"],
                                                              "anthropic-version": "2023-06-01"})
        r.raise_for_status()
        data = r.json()
        return "".join(b.get("text", "") for b in data["content"]), data["usage"]["output_tokens"]
    url = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1").rstrip("/") + "/responses"
    body = {"model": model, "input": prompt, **({"instructions": system} if system else {})}
    r = httpx.post(url, json=body, timeout=120, headers={"authorization": f"Bearer {os.environ['OPENAI_API_KEY']}"})
    r.raise_for_status()
    data = r.json()
    text = "".join(c.get("text", "") for item in data.get("output", []) if item.get("type") == "message"
                   for c in item.get("content", []))
    return text, data["usage"]["output_tokens"]


def online(registers: list[str], model: str) -> list[tuple[str, bool, str]]:
    rows = []
    for reg in registers:
        system = pack.standing_text({"register": reg}, read_door=False)
        spent = 0
        for c in canaries():
            answer, out = ask(system, c["prompt"], model)
            spent += out
            lost = check(c, answer)
            rows.append((f"answer: register={reg} {c['name']}", not lost, "; ".join(lost) or f"{out} output tokens"))
        rows.append((f"output tokens: register={reg}", True, f"{spent} for {len(canaries())} canaries"))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="default: claude-sonnet-4-5 (Anthropic key) or gpt-5 (OpenAI key)")
    ap.add_argument("--registers", default=",".join(pack.REGISTERS))
    args = ap.parse_args()
    registers = [r for r in args.registers.split(",") if r]
    for r in registers:
        if r not in pack.REGISTERS:
            print(f"bench_canary: unknown register {r!r}; one of {', '.join(pack.REGISTERS)}", file=sys.stderr)
            return 2
    rows = offline(registers)
    keyed = bool(os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("OPENAI_API_KEY"))
    if keyed:
        model = args.model or ("claude-sonnet-4-5" if os.environ.get("ANTHROPIC_API_KEY") else "gpt-5")
        rows += online(registers, model)
    width = max(len(r[0]) for r in rows)
    print(f"{'check':{width}}  ok    detail")
    for name, ok, detail in rows:
        print(f"{name:{width}}  {'yes' if ok else 'NO ':3}   {detail}")
    if not keyed:
        print(f"answer checks NOT run: no ANTHROPIC_API_KEY or OPENAI_API_KEY; the {len(canaries())} canaries "
              "need a real model (only presence, budget and stability were checked)")
    failed = [r for r in rows if not r[1]]
    print(json.dumps({"checks": len(rows), "failed": len(failed), "answers_checked": keyed}))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
