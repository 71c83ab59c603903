"""`capsule ctx audit --emission ID ANSWER_FILE`: which distinctive tokens of an answer appear
only in content that emission removed (seed 003's check_answer), with a risk level.

Not responsible for the heuristic (capsule/measure/audit.py). Reads the emission's manifest
from the ledger and, while the archive still holds it, the original.
Invariant: read-only; exit 0 with a report, exit 2 for an unknown emission or unreadable file.
"""

from __future__ import annotations

import json
import sys

from capsule.ground.terminal import visible
from capsule.ground.errors import UserError


def register(sub) -> None:
    p = sub.add_parser("audit", help="flag answer tokens that only removed content held",
                       description="Check an answer against one emission: list the distinctive "
                       "tokens (ids, numbers, paths, rare words) that appear in the answer but "
                       "only in content the engine removed, each with a risk level.")
    p.add_argument("--emission", required=True, type=int, metavar="ID",
                   help="the emission id: the first column of `capsule ctx gain --emissions N`")
    p.add_argument("answer", metavar="ANSWER_FILE", help="the model's answer; '-' reads stdin")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_audit)


def _read_answer(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError as exc:
        raise UserError(f"cannot read answer file {path!r}: {exc.strerror}") from None


def _original(handle: str | None) -> str | None:
    if not handle:
        return None
    try:
        from capsule.store.archive import Archive  # noqa: PLC0415 - bench_startup "capsule --help"

        return Archive().get(handle).decode("utf-8", "surrogateescape")
    except Exception:   # expired or missing: previews still work
        return None


def cmd_audit(args) -> int:
    from capsule.measure import audit  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.measure.ledger import Ledger  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.observe import rerun  # noqa: PLC0415 - bench_startup "capsule --help"

    answer = _read_answer(args.answer)
    row = Ledger().get(args.emission)
    if row is None:
        raise UserError(f"no emission {args.emission} in the ledger; list recent ones with `capsule ctx gain --emissions 20`")
    manifest = row.get("manifest") or []
    original = _original(row.get("handle"))
    removed, kept = audit.pieces_from(original, manifest)
    if original is not None and any(not (r.get("start") and r.get("end")) for r in manifest):
        kept = rerun.emitted_text(row, original) or kept
    result = audit.check_answer(answer, removed, kept or "")
    if args.json:
        print(json.dumps({"emission": args.emission, "transform": row.get("transform"),
                          "original_available": original is not None, **result.as_dict()}, indent=2))
        return 0
    source = "original + list of removals" if original is not None else "removal previews only (original expired)"
    print(visible(f"emission {args.emission} ({row.get('transform')}, {len(manifest)} removals; {source})"))
    for f in result.findings:
        where = f" line {f.line}" if f.line else ""
        print(visible(f"{f.risk:<6} {f.token}  only in removed content{where}: {f.reason}"))
    print(f"risk: {result.risk} ({len(result.findings)} of {result.checked} distinctive tokens "
          f"found only in removed content)")
    return 0
