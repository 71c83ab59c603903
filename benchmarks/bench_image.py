"""The capsule image's size with and without the agent CLIs, built the way the test command builds it.

Runs scripts/setup-docker.sh twice: once as the test command does (Claude Code and Codex copied in
from the host's npm installs) and once with CAPSULE_AGENT_CLIS=none (shell agents only), then a
third time unchanged to show that a current image is not rebuilt. Prints one table: each image's
size, the CLI versions it records as labels, and each build's wall time.

    python benchmarks/bench_image.py [--image capsule:bench] [--keep]
    # --keep: leave the two benchmark images (default: removed; the shared base layers stay)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETUP = ROOT / "scripts" / "setup-docker.sh"


def build(env: dict[str, str]) -> float:
    t0 = time.monotonic()
    proc = subprocess.run(["bash", str(SETUP)], env={**os.environ, **env}, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"setup-docker.sh failed:\n{proc.stderr[-3000:]}")
    return time.monotonic() - t0


def inspect(tag: str) -> dict:
    out = subprocess.run(["docker", "image", "inspect", tag], capture_output=True, text=True, check=True).stdout
    return json.loads(out)[0]


def mb(n: int) -> str:
    return f"{n / 1e6:,.0f} MB"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--image", default="capsule:bench")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    with_tag, without_tag = args.image, f"{args.image}-no-clis"
    agents_tag = os.environ.get("CAPSULE_AGENTS_TAG", "capsule-agents:bookworm")
    base_tag = os.environ.get("CAPSULE_BASE_TAG", "capsule-base:bookworm")
    t_with = build({"CAPSULE_IMAGE": with_tag, "CAPSULE_AGENTS_TAG": agents_tag})
    t_without = build({"CAPSULE_IMAGE": without_tag, "CAPSULE_AGENT_CLIS": "none"})
    t_again = build({"CAPSULE_IMAGE": with_tag, "CAPSULE_AGENTS_TAG": agents_tag})
    rows = []
    for label, tag, seconds in ((f"base ({base_tag})", base_tag, None),
                                (f"base + CLIs ({agents_tag})", agents_tag, None),
                                (f"capsule with CLIs ({with_tag})", with_tag, t_with),
                                (f"capsule without CLIs ({without_tag})", without_tag, t_without),
                                ("capsule with CLIs, unchanged re-run", with_tag, t_again)):
        info = inspect(tag)
        labels = info["Config"].get("Labels") or {}
        clis = ", ".join(f"{k.removeprefix('capsule.agent.')} {v}" for k, v in sorted(labels.items())
                         if k.startswith("capsule.agent.")) or "-"
        rows.append((label, mb(info["Size"]), clis, "-" if seconds is None else f"{seconds:.1f} s"))
    w = [max(len(r[i]) for r in rows + [("image", "size", "CLIs (labels)", "build")]) for i in range(4)]
    print(f"{'image':<{w[0]}}  {'size':>{w[1]}}  {'CLIs (labels)':<{w[2]}}  {'build':>{w[3]}}")
    for r in rows:
        print(f"{r[0]:<{w[0]}}  {r[1]:>{w[1]}}  {r[2]:<{w[2]}}  {r[3]:>{w[3]}}")
    delta = inspect(with_tag)["Size"] - inspect(without_tag)["Size"]
    print(f"\nthe agent CLIs add {mb(delta)} (Node.js, poppler and tesseract are in the base of both); build times "
          "include the wheelhouse, not debootstrap or the CLI layer when those are current")
    if not args.keep:
        subprocess.run(["docker", "image", "rm", with_tag, without_tag], capture_output=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
