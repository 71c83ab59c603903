"""Hostile media benchmark (issue 31): the proxy's peak RSS under concurrent hostile images, and a small
request's latency beside a slow PDF. One command, one table:

    .venv/bin/python benchmarks/bench_media_hostile.py [--concurrent 8]

The proxy runs in a child process (as in PID 1, its own memory), in front of a canned upstream; its
peak RSS is the kernel's VmHWM. Waves of 8 concurrent requests, each with one distinct image: PNGs
declared 8900x8900 (326 KB files, 317 MB decoded each: refused by the decode budget), PNGs of
7000x7000 (within the budget one at a time: decoded through the shared pool), a 16383x4800 PNG pair.
Then a 55 KB PDF of 40 textless pages sharing one 20000^2 1-bit image through the proxy with a
3-line request beside it, and the same through ctx_read (capsule.mcp.mcp_server.ReadDoor). Then the PDFs
ctx_read refuses (10,000 pages, a cyclic page tree, encrypted): seconds to refuse, and the reason.
Targets: peak RSS <= 512 MB, the small request <= 1 s, a refusal < 0.5 s.

    .venv/bin/python benchmarks/bench_media_hostile.py --refusals-only   # just the refusal rows
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import httpx2  # noqa: E402

from tests.fakes.http import Canned  # noqa: E402
from tests.hostile import hostile_media as hm  # noqa: E402

OK = [b'{"type":"message","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":1,"output_tokens":1}}']
CHILD = """
import sys, time
from pathlib import Path
from capsule.proxy.app import Settings
from capsule.proxy.proxy_server import ProxyServer
s = ProxyServer(Settings(state_dir=Path(sys.argv[1]), anthropic_upstream=sys.argv[2])).start()
print(s.url, flush=True)
sys.stdin.read()
s.stop()
"""


def status(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return 0


def body(blocks: list[dict], session: str) -> bytes:
    return json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 10,
                       "metadata": {"user_id": json.dumps({"session_id": session})},
                       "messages": [{"role": "user", "content": blocks + [{"type": "text", "text": "look"}]}]}).encode()


def image_block(png: bytes) -> dict:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                        "data": base64.b64encode(png).decode()}}


def pdf_block(pdf: bytes) -> dict:
    return {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                           "data": base64.b64encode(pdf).decode()}}


def post(url: str, data: bytes) -> tuple[int, float]:
    t0 = time.monotonic()
    r = httpx2.post(url + "/v1/messages", content=data, timeout=300,
                    headers={"x-api-key": "k", "content-type": "application/json"})
    return r.status_code, time.monotonic() - t0


def wave(url: str, bodies: list[bytes]) -> list[tuple[int, float]]:
    out: list = [None] * len(bodies)

    def one(i):
        out[i] = post(url, bodies[i])

    ts = [threading.Thread(target=one, args=(i,)) for i in range(len(bodies))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out


def ctx_read_beside_pdf(pdf: bytes) -> tuple[float, float]:
    """(the 3-line read's seconds, the PDF read's seconds) through the MCP door, side by side."""
    from capsule.mcp.mcp_server import ReadDoor

    with tempfile.TemporaryDirectory() as d:
        os.environ["JACKIN_CTX_STATE_DIR"] = str(Path(d) / "state")
        ws = Path(d) / "ws"
        ws.mkdir()
        (ws / "small.txt").write_text("one\ntwo\nthree\n")
        (ws / "scan.pdf").write_bytes(pdf)
        door = ReadDoor(ws, scope="bench", role_mode="standard")
        door.read("small.txt")
        took = {}

        def slow():
            t0 = time.monotonic()
            try:
                door.read("scan.pdf")
            except Exception:  # noqa: BLE001 - refused over its budget: the point is how long
                pass
            took["pdf"] = time.monotonic() - t0

        t = threading.Thread(target=slow)
        t.start()
        time.sleep(0.5)
        t0 = time.monotonic()
        door.read("small.txt", fresh=True)
        small = time.monotonic() - t0
        t.join()
        return small, took["pdf"]


def refusals(runs: int = 5) -> list[str]:
    """ctx_read of each refused PDF: (median seconds to refuse, the reason it gives), `runs` times each."""
    import statistics

    from capsule.mcp.mcp_server import ReadDoor

    cases = [("10,000-page PDF", "long.pdf", hm.many_pages()), ("cyclic page tree PDF", "cyclic.pdf", hm.cyclic_tree()),
             ("encrypted PDF", "locked.pdf", hm.encrypted())]
    rows = []
    with tempfile.TemporaryDirectory() as d:
        os.environ["JACKIN_CTX_STATE_DIR"] = str(Path(d) / "state")
        ws = Path(d) / "ws"
        ws.mkdir()
        (ws / "small.txt").write_text("one\ntwo\nthree\n")
        for _, name, data in cases:
            (ws / name).write_bytes(data)
        door = ReadDoor(ws, scope="bench", role_mode="standard")
        door.read("small.txt")
        for label, name, _ in cases:
            took, why = [], ""
            for _ in range(runs):
                t0 = time.monotonic()
                try:
                    door.read(name, fresh=True)
                    why = "served"
                except Exception as exc:  # noqa: BLE001 - the refusal is the point
                    why = str(exc).split("(", 1)[-1].split(")", 1)[0][:60]
                took.append(time.monotonic() - t0)
            rows.append(f"{'ctx_read refuses: ' + label:<44} {runs:>8} {'refused':>8} {statistics.median(took):>7.3f}"
                        f"   < 0.5 s  ({why})")
    from capsule.observe.media import caps, image

    fam = caps.family_for("claude-sonnet-4-5", "anthropic")
    image.probe(hm.png(8, 8))                              # Pillow imported: its import is not the bomb's cost
    for label, data in hm.header_bombs().items():
        took, why = [], ""
        for _ in range(runs):
            t0 = time.monotonic()
            try:
                image.fit(data, fam)
                why = "served"
            except Exception as exc:  # noqa: BLE001 - the refusal is the point
                why = str(exc)[:60]
            took.append(time.monotonic() - t0)
        rows.append(f"{'image.fit refuses: ' + label:<44} {runs:>8} {'refused':>8} {statistics.median(took):>7.4f}"
                    f"   < 0.2 s  ({why})")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--concurrent", type=int, default=8)
    ap.add_argument("--refusals-only", action="store_true", help="only the refused-PDF rows")
    args = ap.parse_args()
    if args.refusals_only:
        print(f"{'case':<44} {'runs':>8} {'status':>8} {'med s':>7}")
        print("\n".join(refusals()))
        return 0
    n = args.concurrent
    print(f"making inputs ({n} distinct images per wave)...", file=sys.stderr)
    waves = [("8900x8900 PNG (317 MB decoded)", [hm.png(8900, 8900, seed=i) for i in range(n)]),
             ("7000x7000 PNG (196 MB decoded)", [hm.png(7000, 7000, seed=100 + i) for i in range(n)]),
             ("16383x4800 PNG (315 MB decoded)", [hm.png(16383, 4800, seed=200 + i) for i in range(n)])]
    scan = hm.scan_bomb()
    up = Canned(200, [("content-type", "application/json")], OK)
    with tempfile.TemporaryDirectory() as d:
        child = subprocess.Popen([sys.executable, "-c", CHILD, d, up.url], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True, cwd=REPO)
        url = child.stdout.readline().strip()
        try:
            post(url, body([], "warm"))
            base = status(child.pid, "VmRSS")
            print(f"{'case':<44} {'requests':>8} {'status':>8} {'max s':>7} {'RSS MB':>7} {'peak MB':>8} target")
            print(f"{'proxy at rest':<44} {'':>8} {'':>8} {'':>7} {base / 2**20:>7.0f} "
                  f"{status(child.pid, 'VmHWM') / 2**20:>8.0f}")
            for name, pngs in waves:
                res = wave(url, [body([image_block(p)], f"{name[:9]}-{i}") for i, p in enumerate(pngs)])
                codes = ",".join(sorted({str(c) for c, _ in res}))
                print(f"{name:<44} {len(res):>8} {codes:>8} {max(s for _, s in res):>7.1f} "
                      f"{status(child.pid, 'VmRSS') / 2**20:>7.0f} {status(child.pid, 'VmHWM') / 2**20:>8.0f} <= 512")
            done = {}
            t = threading.Thread(target=lambda: done.setdefault("pdf", post(url, body([pdf_block(scan)], "pdf"))))
            t.start()
            time.sleep(0.5)
            code, small = post(url, body([], "small"))
            t.join()
            print(f"{'3-line request beside the 40-page scan PDF':<44} {1:>8} {code:>8} {small:>7.2f} "
                  f"{status(child.pid, 'VmRSS') / 2**20:>7.0f} {status(child.pid, 'VmHWM') / 2**20:>8.0f} <= 1 s")
            print(f"{'  (the PDF request itself)':<44} {1:>8} {done['pdf'][0]:>8} {done['pdf'][1]:>7.1f}")
        finally:
            child.stdin.close()
            child.wait(30)
            up.close()
    small, slow = ctx_read_beside_pdf(scan)
    print(f"{'ctx_read 3-line file beside ctx_read scan PDF':<44} {1:>8} {'ok':>8} {small:>7.2f} {'':>7} {'':>8} <= 1 s")
    print(f"{'  (the PDF ctx_read itself, refused)':<44} {1:>8} {'':>8} {slow:>7.1f}")
    print("\n".join(refusals()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
