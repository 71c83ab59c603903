"""Read-door benchmark: one command, one table.

    .venv/bin/python benchmarks/bench_read.py [--root DIR] [--quick]

Measures (nothing here is a constant; every figure is computed on this machine):
  1. ctx_read signatures vs full, in tokens, over the Python standard library's .py files (target >= 90% smaller)
  2. the re-read stub's size in tokens (target <= 20)
  3. ctx_search p50 / p95 latency on a warm index of >= 20,000 files (stdlib + site-packages), and the build rate
  4. the token size of the whole tools/list answer (target <= 1,500)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

QUERIES = [
    "parse header", "HTTPConnection request", "json decoder", "thread pool executor", "socket timeout",
    "getaddrinfo", "read_until", "ZipFile extract", "base64 encode", "unittest mock patch", "asyncio event loop",
    "TextIOWrapper", "shutil copytree", "csv DictReader", "sqlite3 connect", "argparse add_argument",
    "datetime timezone", "pathlib glob", "subprocess Popen communicate", "logging handler format", "hashlib sha256",
    "email message parser", "xml etree ElementTree", "decimal context precision", "urllib parse quote",
    "typing Protocol", "dataclass field default_factory", "contextmanager", "tarfile open", "pickle loads",
    "re compile flags", "tempfile NamedTemporaryFile", "heapq merge", "functools lru_cache", "collections OrderedDict",
    "inspect signature", "ssl create_default_context", "selectors register", "pydantic BaseModel validator",
    "tree_sitter Parser", "getUserName", "ValidationError", "ssl wrap_socket", "struct unpack_from",
]


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def bench_signatures(quick: bool) -> dict:
    from capsule.ground.tokens import count
    from capsule.retrieve.read_modes import Mode
    from capsule.retrieve.reader import ReadError, render

    root = stdlib_root()
    files = sorted(p for p in root.rglob("*.py")
                   if "site-packages" not in p.parts and "__pycache__" not in p.parts)
    if quick:
        files = files[::10]
    full = sig = failed = 0
    for p in files:
        try:
            text = p.read_bytes().decode("utf-8", "surrogateescape")
        except OSError:
            continue
        rel = p.relative_to(root).as_posix()
        try:
            _key, out = render(text, rel, Mode("signatures"))
        except (ReadError, ValueError):
            failed += 1
            out = text
        full += count(text)
        sig += count(out)
    return {"files": len(files), "full_tokens": full, "signature_tokens": sig, "no_outline": failed,
            "reduction": 1 - sig / full if full else 0.0}


def bench_stub() -> dict:
    from capsule.ground.tokens import count
    from capsule.store.stubs import StubStore

    store = StubStore()
    root = stdlib_root()
    paths = sorted((p.relative_to(root).as_posix() for p in root.rglob("*.py") if "site-packages" not in p.parts),
                   key=len)[-20:] + ["README.md", "capsule/retrieve/index.py"]
    worst = 0
    example = ""
    sizes = []
    for rel in paths:
        store.decide("bench:stub", rel, "full", "content\n" * 50)
        d = store.decide("bench:stub", rel, "full", "content\n" * 50)
        assert d.kind == "stub"
        sizes.append(count(d.text))
        if sizes[-1] >= worst:
            worst, example = sizes[-1], d.text
    typical = store.decide("bench:stub2", "src/app/models.py", "full", "x\n") and \
        store.decide("bench:stub2", "src/app/models.py", "full", "x\n").text
    return {"max_tokens": worst, "example": example, "typical": count(typical), "typical_text": typical}


def bench_search(root: Path, queries: int) -> dict:
    from capsule.mcp.mcp_server import ReadDoor
    from capsule.retrieve.index import WorkspaceIndex

    ix = WorkspaceIndex(root)
    t0 = time.perf_counter()
    report = ix.refresh(threads=min(4, os.cpu_count() or 1))
    build_s = time.perf_counter() - t0
    docs = ix.num_docs()
    ix.close()
    door = ReadDoor(root, scope="bench")
    door.engine.reads.index(door.root)             # opens warm; no refresh for engine_read.REFRESH_EVERY_S
    for q in QUERIES[:5]:
        door.search(q, 10)
    times = []
    for i in range(queries):
        q = QUERIES[i % len(QUERIES)]
        t = time.perf_counter()
        door.search(q, 10)
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    refresh_t = time.perf_counter()
    noop = door.engine.reads.index(door.root).refresh()
    refresh_s = time.perf_counter() - refresh_t
    return {"documents": docs, "indexed_now": report.indexed, "build_s": build_s,
            "build_rate": report.indexed / build_s if report.indexed else 0.0,
            "p50_ms": statistics.median(times), "p95_ms": times[int(len(times) * 0.95) - 1],
            "queries": queries, "noop_refresh_s": refresh_s, "noop_reindexed": noop.indexed}


def bench_tools_list(root: Path) -> dict:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from capsule.ground.tokens import count

    async def go():
        params = StdioServerParameters(command=sys.executable, args=["-m", "capsule", "mcp", "serve", "--root", str(root)],
                                       env={"JACKIN_CTX_STATE_DIR": os.environ["JACKIN_CTX_STATE_DIR"],
                                            "PATH": os.environ.get("PATH", "")})
        async with stdio_client(params) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                return await s.list_tools()

    listing = asyncio.run(go())
    wire = json.dumps(listing.model_dump(mode="json", by_alias=True, exclude_none=True))
    return {"tools": len(listing.tools), "tokens": count(wire)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=None,
                    help="tree to index for search (default: the interpreter's lib dir: stdlib + site-packages)")
    ap.add_argument("--queries", type=int, default=400)
    ap.add_argument("--quick", action="store_true", help="every 10th stdlib file for the signatures figure")
    ap.add_argument("--state", type=Path, default=None, help="state dir (default: a temp dir; keep it to re-run warm)")
    args = ap.parse_args()
    state = args.state or Path(tempfile.mkdtemp(prefix="capsule-bench-"))
    os.environ["JACKIN_CTX_STATE_DIR"] = str(state)
    root = (args.root or stdlib_root()).resolve()

    from capsule.ground.tokens import label

    sig = bench_signatures(args.quick)
    stub = bench_stub()
    search = bench_search(root, args.queries)
    tools = bench_tools_list(REPO)

    rows = [
        ("signatures vs full (stdlib .py)", f"{sig['reduction'] * 100:.1f}% smaller",
         ">= 90%", sig["reduction"] >= 0.90,
         f"{sig['files']} files, {sig['full_tokens']:,} -> {sig['signature_tokens']:,} tokens, {sig['no_outline']} without outline"),
        ("re-read stub (worst path)", f"{stub['max_tokens']} tokens", "<= 20", stub["max_tokens"] <= 20,
         f"{stub['example']}; typical {stub['typical']}: {stub['typical_text']}"),
        ("ctx_search p50 (warm)", f"{search['p50_ms']:.2f} ms", "<= 10 ms",
         search["p50_ms"] <= 10 and search["documents"] >= 20000,
         f"p95 {search['p95_ms']:.2f} ms, {search['queries']} queries, {search['documents']:,} files indexed"),
        ("index build", f"{search['build_rate']:.0f} files/s" if search["indexed_now"] else "warm (0 new)", "-", True,
         f"{search['indexed_now']:,} files in {search['build_s']:.1f}s; no-op refresh {search['noop_refresh_s']:.2f}s"),
        ("tools/list answer", f"{tools['tokens']} tokens", "<= 1500", tools["tokens"] <= 1500, f"{tools['tools']} tools"),
    ]
    print(f"capsule read-door benchmark  (tokens: {label()}; search root: {root})")
    w = [max(len(str(r[i])) for r in rows) for i in range(3)]
    print(f"{'measure'.ljust(w[0])}  {'result'.ljust(w[1])}  {'target'.ljust(w[2])}  ok    detail")
    for name, result, target, ok, detail in rows:
        print(f"{name.ljust(w[0])}  {result.ljust(w[1])}  {target.ljust(w[2])}  {'PASS' if ok else 'FAIL'}  {detail}")
    return 0 if all(r[3] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
