"""`capsule ctx trust FILE | --list | --revoke FILE`: pin project and role filter files.

Not responsible for the pin rules (capsule/policy/trust.py) nor for loading filters.
Invariant: only a file whose bytes were pinned here is ever loaded as a filter file.
"""

from __future__ import annotations

import json

from capsule.ground.errors import UserError


def register(sub) -> None:
    p = sub.add_parser("trust", help="trust a project or role filter file (SHA-256 pin)",
                       description="Pin a filter file's SHA-256 so capsule loads it; a changed file is "
                       "not loaded until it is trusted again.")
    p.add_argument("file", nargs="?", help="filter file to trust (e.g. .capsule/filters.toml)")
    p.add_argument("--list", action="store_true", help="list trusted files and their pins")
    p.add_argument("--revoke", metavar="FILE", help="stop trusting FILE")
    p.add_argument("--json", action="store_true", help="with --list: machine-readable output")
    p.set_defaults(func=cmd_trust)


def cmd_trust(args) -> int:
    from capsule.policy import trust  # noqa: PLC0415 - bench_startup "capsule --help"

    try:
        if args.list:
            pins = trust.load_pins()
            if args.json:
                print(json.dumps(pins, indent=2, sort_keys=True))
            elif not pins:
                print("no trusted filter files")
            else:
                for path, entry in sorted(pins.items()):
                    print(f"{entry.get('sha256', '?')[:16]}  {path}")
            return 0
        if args.revoke:
            if trust.revoke(args.revoke):
                print(f"revoked: {args.revoke}")
                return 0
            raise UserError(f"{args.revoke} is not trusted; see: capsule ctx trust --list")
        if not args.file:
            raise UserError("name a filter file to trust, or use --list / --revoke FILE")
        _check_parses(args.file)
        where, digest = trust.pin(args.file)
        print(f"trusted {where} sha256:{digest}")
        return 0
    except trust.TrustError as exc:
        raise UserError(str(exc)) from None


def _check_parses(path: str) -> None:
    """Refuse to pin a file that would not load anyway."""
    from capsule.observe.filters.spec import FilterError, parse_file  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.policy.trust import read_filter_file  # noqa: PLC0415 - bench_startup "capsule --help"

    try:
        data = read_filter_file(path)
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        parse_file(data, path, linear=True)
    except FilterError as exc:
        raise UserError(str(exc)) from None
