"""`capsule ctx expand HANDLE [--lines N-M] [--grep REGEX]`: get an original back, byte-exact.

Not responsible for storing (store/archive.py). Invariant (INV-5): with no selector the
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
    p.add_argument("--lines", metavar="N-M", help="only lines N to M (1-based, inclusive); N or N- also work")
    p.add_argument("--grep", metavar="REGEX",
                   help="only lines matching REGEX, prefixed with their line number (exit 1 when none match)")
    p.set_defaults(func=cmd_expand)


def parse_range(spec: str) -> tuple[int, int | None]:
    m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d*)\s*)?", spec)
    if not m:
        raise UserError(f"--lines {spec!r}: expected N-M, N- or N (1-based line numbers)")
    first = int(m.group(1))
    last = None if m.group(2) in ("", None) and "-" in spec else int(m.group(2) or first)
    if first < 1 or (last is not None and last < first):
        raise UserError(f"--lines {spec!r}: the range must start at 1 or later and not run backwards")
    return first, last


REDACTED = b"[capsule redacted: "     # store/redact.py's marker


def _say_redacted(n: int) -> None:
    if n:
        print(f"capsule: {n} secret{'s' if n != 1 else ''} in this output {'were' if n != 1 else 'was'} redacted "
              f"before it was stored ([capsule redacted: KIND]); the rest is byte-exact. JACKIN_CTX_NO_REDACT=1 "
              f"stores outputs verbatim", file=sys.stderr)


def cmd_expand(args) -> int:
    from capsule.store.archive import Archive, UnknownHandle, normalise

    if not re.fullmatch(r"[0-9a-f]{24}", normalise(args.handle)):
        raise UserError(f"{args.handle!r} is not a capsule handle (24 hex characters, e.g. from <<ccr:HASH>>)")
    archive = Archive(readonly=True)
    out = sys.stdout.buffer
    try:
        chunks = archive.iter_chunks(args.handle)
    except UnknownHandle:
        raise UserError(f"no archived output for handle {normalise(args.handle)}: it was never stored here "
                        f"or its retention ({archive.retention_s}s) has passed")
    if args.lines is None and args.grep is None:
        redacted = 0
        for chunk in chunks:
            redacted += chunk.count(REDACTED)
            out.write(chunk)
        _say_redacted(redacted)
        return 0
    first, last = parse_range(args.lines) if args.lines is not None else (1, None)
    pattern = None
    if args.grep is not None:
        try:
            pattern = re.compile(args.grep.encode("utf-8", "surrogateescape"))
        except re.error as exc:
            raise UserError(f"--grep {args.grep!r}: bad regular expression: {exc}")
    total = matched = redacted = 0
    for number, line in _lines(chunks):
        total = number
        redacted += line.count(REDACTED)
        if number < first:
            continue
        if last is not None and number > last:
            break
        if pattern is None:
            out.write(line + b"\n")
        elif pattern.search(line):
            matched += 1
            out.write(b"%d:" % number + line + b"\n")
    _say_redacted(redacted)
    # Nothing printed must never look like an empty original: say why, like grep and sed would not.
    if first > total:
        raise UserError(f"--lines {args.lines}: the original has only {total} line{'s' if total != 1 else ''}")
    if pattern is not None and not matched:
        print(f"capsule: no line matches --grep {args.grep!r} in the selected lines", file=sys.stderr)
        return 1
    return 0


def _lines(chunks):
    """Numbered lines from a stream of chunks, without joining the whole original."""
    number, carry = 0, b""
    for chunk in chunks:
        parts = (carry + chunk).split(b"\n")
        carry = parts.pop()
        for line in parts:
            number += 1
            yield number, line
    if carry:
        yield number + 1, carry
