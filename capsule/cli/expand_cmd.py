"""`capsule ctx expand HANDLE [--lines N-M] [--grep REGEX]`: get an original back, byte-exact.

Not responsible for storing (store/archive.py) or for the selection rule (retrieve/expand.py, shared
with the MCP door's ctx_expand). Invariant (INV-5): with no selector the
bytes written are exactly the bytes archived (secrets redacted before storing, which stderr then says); an unknown or expired handle, or a --lines range past
the end, exits 2 with a message; a --grep that matches nothing exits 1.
"""

from __future__ import annotations

import re
import sys

from capsule.ground.errors import UserError


def register(sub) -> None:
    p = sub.add_parser("expand", help="write an archived original to stdout (byte-exact)",
                       description="Recover the full output behind a footer "
                       "[full output: capsule ctx expand '<<ccr:HASH>>']. Accepts HASH or <<ccr:HASH>>.")
    p.add_argument("handle", help="the 24-hex handle from the footer")
    p.add_argument("--lines", metavar="N-M", help="only lines N to M (1-based, inclusive); N, N- and A-B,C-D also work")
    p.add_argument("--grep", metavar="REGEX",
                   help="only lines matching REGEX (RE2 syntax; any case unless it has a capital), prefixed with "
                        "their line number (exit 1 when none match)")
    p.set_defaults(func=cmd_expand)


def _say_redacted(n: int) -> None:
    if n:
        print(f"capsule: {n} secret{'s' if n != 1 else ''} in this output {'were' if n != 1 else 'was'} redacted "
              f"before it was stored ([capsule redacted: KIND]); the rest is byte-exact. JACKIN_CTX_NO_REDACT=1 "
              f"stores outputs verbatim", file=sys.stderr)


def cmd_expand(args) -> int:
    from capsule.retrieve.expand import ExpandError, Selection, check  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.store.archive import Archive, UnknownHandle, normalise  # noqa: PLC0415 - bench_startup "capsule --help"

    if not re.fullmatch(r"[0-9a-f]{24}", normalise(args.handle)):
        raise UserError(f"{args.handle!r} is not a capsule handle (24 hex characters, e.g. from <<ccr:HASH>>)")
    try:
        check(args.lines, args.grep)
    except ExpandError as exc:
        raise UserError(str(exc)) from None
    archive = Archive(readonly=True)
    out = sys.stdout.buffer
    try:
        chunks = archive.iter_chunks(args.handle)
    except UnknownHandle:
        raise UserError(f"no archived output for handle {normalise(args.handle)}: it was never stored here "
                        f"or its retention ({archive.retention_s}s) has passed")
    selection = Selection(chunks, args.lines, args.grep)
    for part in selection:
        out.write(part)
    _say_redacted(selection.redacted)
    # Nothing printed must never look like an empty original: say why, like grep and sed would not.
    problem = selection.problem()
    if problem and selection.pattern is None:
        raise UserError(problem)
    if problem:
        print(f"capsule: {problem}", file=sys.stderr)
        return 1
    return 0
