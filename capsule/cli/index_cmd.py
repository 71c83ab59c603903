"""`capsule index build|status`: the workspace search index from the command line.

Not responsible for indexing itself (capsule/retrieve/index.py).
Invariant: build shows progress on large trees and reports its rate in files/s.
"""

from __future__ import annotations

import json
import time
import os
import sys
from pathlib import Path

from capsule.ground.errors import UserError


def register(subparsers) -> None:
    p = subparsers.add_parser("index", help="the workspace search index behind ctx_search")
    sub = p.add_subparsers(dest="index_command", metavar="SUBCOMMAND", required=True)
    b = sub.add_parser("build", help="build or refresh the index (incremental)")
    b.add_argument("root", nargs="?", default=".", help="workspace root (default: .)")
    b.add_argument("--quiet", action="store_true")
    b.set_defaults(func=_build)
    s = sub.add_parser("status", help="what the index holds and how stale it is")
    s.add_argument("root", nargs="?", default=".")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=_status)
    q = sub.add_parser("search", help="query the index (what ctx_search answers)")
    q.add_argument("query")
    q.add_argument("--root", default=".")
    q.add_argument("-k", type=int, default=10)
    q.set_defaults(func=_search)


def _root(value: str) -> Path:
    root = Path(value).resolve()
    if not root.is_dir():
        raise UserError(f"{value} is not a directory; give the workspace root")
    return root


def _progress(done: int, total: int) -> None:
    width = 30
    fill = int(width * done / total) if total else width
    line = f"indexing [{'#' * fill}{'.' * (width - fill)}] {done}/{total}"
    if sys.stderr.isatty():
        print("\r" + line, end="" if done < total else "\n", file=sys.stderr, flush=True)
    elif done == total or done % 5000 == 0:
        print(line, file=sys.stderr, flush=True)


def _build(args) -> int:
    from capsule.retrieve.index import WorkspaceIndex  # noqa: PLC0415 - bench_startup "capsule --help"

    ix = WorkspaceIndex(_root(args.root))
    report = ix.refresh(progress=None if args.quiet else _progress, threads=min(4, os.cpu_count() or 1))
    print(f"indexed {report.indexed} file(s), {report.unchanged} unchanged, {report.removed} removed, "
          f"{report.skipped} skipped (binary/large) in {report.seconds:.2f}s"
          + (f" ({report.rate:.0f} files/s)" if report.indexed else "")
          + f"; {report.files} documents in {ix.dir}")
    return 0


def _status(args) -> int:
    from capsule.retrieve.index import WorkspaceIndex  # noqa: PLC0415 - bench_startup "capsule --help"

    ix = WorkspaceIndex(_root(args.root))
    info = ix.status()
    info["stale_files"] = ix.stale()
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        for key, value in info.items():
            if key == "last_build" and isinstance(value, (int, float)):
                value = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(value))   # the JSON keeps the epoch
            print(f"{key}: {value}")
    return 0


def _search(args) -> int:
    from capsule.retrieve import packer  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.retrieve.index import WorkspaceIndex  # noqa: PLC0415 - bench_startup "capsule --help"

    root = _root(args.root)
    ix = WorkspaceIndex(root)
    ix.refresh()                      # incremental: only what changed since the last build
    print(packer.pack(root, ix.search(args.query, args.k), args.query))
    return 0
