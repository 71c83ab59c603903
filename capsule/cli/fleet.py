"""`capsule fleet sync|report|render`: many capsules, one fleet database, roles scaled out.

Not responsible for the work (capsule.fleet.*): parses, checks input, prints. Invariant: bad input
(a DSN, a state dir, a role) exits 2 with one line naming it; a fleet database that stays down exits 1
after saying what was copied (a re-run resumes); nothing here runs inside a capsule (INV-10).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from capsule.cli import report_out
from capsule.cli.gain import parse_since
from capsule.cli.runtime import DEFAULT_IMAGE, IMAGE_ENV, resolve_role, run_as
from capsule.ground.errors import UserError
from capsule.ground.terminal import visible

FLEET_EXTRA = "pip install 'capsule[fleet]'"
REPORT_TIMEOUT_S = 5.0      # a report is asked for by a person: a down database is said in seconds, not a minute
DSN_ENV = "CAPSULE_FLEET_DSN"       # fleet/render.py's compose and Kubernetes files set it
DSN_HELP = (f"the fleet database: --dsn-file FILE or ${DSN_ENV} (a password on the command line is "
            "readable by every local user in /proc/PID/cmdline, so --dsn takes none)")


def register(sub) -> None:
    fleet = sub.add_parser("fleet", help="many capsules: sync their rows into one database, report, render",
                           description="Host side of a fleet of capsules: copy each capsule's ledger and usage "
                           "rows into PostgreSQL (read-only on the state volumes), report across the fleet, "
                           "render compose replicas and Kubernetes manifests for a role.")
    fsub = fleet.add_subparsers(dest="fleet_command", metavar="SUBCOMMAND")

    s = fsub.add_parser("sync", help="copy new rows from capsule state dirs into the fleet database",
                        description="Incremental (a cursor per source and table), idempotent (a row copied "
                        "twice is one row) and safe to run several at once or while capsules write.")
    add_dsn_args(s)
    s.add_argument("--state", action="append", default=[], metavar="DIR", help="a capsule state dir; repeatable")
    s.add_argument("--docker", action="store_true", help="every capsule container's /state/context volume")
    s.add_argument("--container", help="tag and identity: a unique, stable container name (one --state; "
                   "default: from the path, identity host + path)")
    s.add_argument("--role", help="tag: role of the --state dirs (default: unknown)")
    s.add_argument("--host", help="tag: host (default: this host's name)")
    s.add_argument("--account", help="tag: the account they bill (default: $JACKIN_CTX_ACCOUNT or 'default')")
    s.add_argument("--every", type=float, metavar="SECONDS", help="keep syncing, one pass every SECONDS")
    s.add_argument("--retry-for", type=float, default=60.0, metavar="SECONDS",
                   help="how long to wait for a fleet database that is down (default: %(default)s)")
    s.add_argument("--source-budget", type=float, default=60.0, metavar="SECONDS",
                   help="longest one capsule's state may take to read in a pass; a slower one is reported "
                   "and skipped (default: %(default)s)")
    s.add_argument("--json", action="store_true", help="print what was copied as JSON")
    s.set_defaults(func=cmd_sync)

    r = fsub.add_parser("report", help="cost, net savings, cache health and quota share across the fleet",
                        description="By role, container, host and account over a window; JSON carries for the "
                        "fleet and each capsule the same `total` object as `capsule ctx gain --json`.")
    add_report_args(r, dsn_required=True)
    r.set_defaults(func=cmd_report)

    d = fsub.add_parser("render", help="compose replicas or Kubernetes manifests for a role")
    d.add_argument("--role", required=True, help="a role name from roles/ or a path to a TOML file")
    d.add_argument("--replicas", type=int, default=1)
    d.add_argument("--image", default=None, help="image (default: $CAPSULE_IMAGE or capsule:dev)")
    how = d.add_mutually_exclusive_group(required=True)
    how.add_argument("--kubernetes", action="store_true", help="a StatefulSet, its ConfigMap and the sync sidecar")
    how.add_argument("--compose", action="store_true", help="one service and one state volume per replica")
    d.add_argument("--workspace", type=Path, default=Path("."), help="compose: the workspace to mount")
    d.add_argument("--user", metavar="UID[:GID]", default=None,
                   help="compose: the uid/gid the agent runs as (default: the workspace's owner, as `capsule up`)")
    d.add_argument("--namespace", default=None, help="kubernetes: metadata.namespace")
    d.add_argument("--sync-image", default=None,
                   help="the fleet-sync image, with capsule[fleet] installed: kubernetes, the sidecar's (default: "
                   "--image); compose, adds a sync service per replica reading its state read-only")
    d.add_argument("-o", "--output", type=Path, help="write here instead of stdout")
    d.set_defaults(func=cmd_render)
    fleet.set_defaults(func=lambda args: (fleet.print_help(), 2)[1])


def add_dsn_args(p) -> None:
    p.add_argument("--dsn", help="postgresql://USER@HOST:PORT/DB (or sqlite:///PATH), no password; default: "
                   f"--dsn-file, else ${DSN_ENV}")
    p.add_argument("--dsn-file", type=Path, metavar="FILE", help="a file holding the DSN (its first line; keep it 0600)")


def add_report_args(p, dsn_required: bool) -> None:
    if dsn_required:
        add_dsn_args(p)
    else:
        p.add_argument("--dsn", help="the fleet database: postgresql://USER@HOST:PORT/DB")
    p.add_argument("--since", metavar="WHEN", help="window start: 30m, 2h, 7d, or an ISO date/time")
    p.add_argument("--until", metavar="WHEN", help="window end (default: now)")
    if dsn_required:
        p.add_argument("--timeout", type=float, default=REPORT_TIMEOUT_S, metavar="SECONDS",
                       help="how long to wait for the fleet database (default: %(default)s)")
        p.add_argument("--json", action="store_true", help="machine-readable report")
        p.add_argument("--html", metavar="FILE", help="write the report as one self-contained HTML page")


def dsn_of(args) -> str:
    """The fleet DSN from --dsn (refused with a password: argv is public), --dsn-file or $CAPSULE_FLEET_DSN."""
    dsn, path = getattr(args, "dsn", None), getattr(args, "dsn_file", None)
    if dsn and path:
        raise UserError("--dsn and --dsn-file: give one")
    if dsn:
        if has_password(dsn):
            raise UserError(f"--dsn: a password on the command line is readable by every local user "
                            f"(/proc/PID/cmdline); put the DSN in a file (--dsn-file FILE) or in ${DSN_ENV}")
        return dsn
    if path:
        try:
            lines = path.read_text(encoding="utf-8").split("\n")
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"--dsn-file {path}: {getattr(exc, 'strerror', None) or exc}") from None
        if not lines[0].strip():
            raise UserError(f"--dsn-file {path}: empty; its first line is the DSN (postgresql://USER:PASSWORD@HOST/DB)")
        return lines[0].strip()
    if os.environ.get(DSN_ENV, "").strip():
        return os.environ[DSN_ENV].strip()
    raise UserError(f"fleet: name {DSN_HELP}; or --dsn postgresql://USER@HOST:PORT/DB")


def has_password(dsn: str) -> bool:
    """A password in a URL DSN: user:PASSWORD@ or ?password=."""
    try:
        parts = urlsplit(dsn)
        if parts.password:
            return True
        query = parts.query
    except ValueError:                  # "[::1" and the like: the URL's own errors come later
        return bool(re.search(r"://[^/@]*:[^/@]*@", dsn)) or "password=" in dsn.lower()
    return "password" in {k.lower() for k in parse_qs(query)}


def _engine(dsn: str, timeout_s: float | None = None):
    try:
        from capsule.fleet import migrate  # noqa: PLC0415 - bench_startup "capsule ctx gain"
    except ImportError as exc:
        raise UserError(f"capsule fleet needs {exc.name}: {FLEET_EXTRA}") from None
    try:
        return migrate, migrate.engine(dsn, timeout_s)
    except migrate.DsnError as exc:
        raise UserError(str(exc)) from None


def _open(dsn: str, retry_for: float = 60.0):
    """The fleet database at the schema's head (waiting for it while it starts or restarts)."""
    migrate, eng = _engine(dsn, retry_for)   # first: without capsule[fleet] it says what to install
    import sqlalchemy as sa  # noqa: PLC0415 - bench_startup "capsule --help"

    deadline = time.monotonic() + retry_for
    while True:
        try:
            migrate.upgrade(eng)
            return eng
        except (sa.exc.ProgrammingError, sa.exc.InterfaceError, sa.exc.ArgumentError, TypeError) as exc:
            # libpq refused a DSN part capsule does not check itself (sslmode=bogus): the user's input
            why = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0][:300]
            raise UserError(f"fleet database {migrate.redact(dsn)}: {why}") from None
        except sa.exc.OperationalError as exc:
            if time.monotonic() > deadline:
                print(f"capsule: fleet database {migrate.redact(dsn)} unreachable: {str(exc.orig).strip()[:300]}",
                      file=sys.stderr)
                raise SystemExit(1) from None
            time.sleep(0.5)


def _sources(args):
    from capsule.fleet import sources  # noqa: PLC0415 - bench_startup "capsule --help"

    try:
        found = sources.from_dirs(args.state, container=args.container, role=args.role, host=args.host,
                                  account=args.account)
        if args.docker:
            found += sources.from_docker(host=args.host)
    except sources.SourceError as exc:
        raise UserError(str(exc)) from None
    return found


def cmd_sync(args) -> int:
    if not args.state and not args.docker:
        raise UserError("fleet sync: name the capsules: --state DIR (repeatable) or --docker")
    dsn = dsn_of(args)
    if not 0 < args.source_budget < float("inf"):
        raise UserError(f"--source-budget {args.source_budget}: a positive number of seconds")
    _sources(args)              # bad input (a missing dir) exits 2 before any wait for the database
    eng = _open(dsn, args.retry_for)
    from capsule.fleet.sync import SyncError, sync  # noqa: PLC0415 - bench_startup "capsule --help"

    while True:
        try:
            report = sync(eng, _sources(args), retry_for_s=args.retry_for, source_budget_s=args.source_budget)
        except SyncError as exc:
            print(f"capsule: {exc}", file=sys.stderr)
            return 1
        for f in report.failed:         # paths and SQLite's messages come from the agent's volume
            print(visible(f"capsule: fleet sync: skipped {f['source']} ({f['table']}): {f['error']}"),
                  file=sys.stderr, flush=True)
        if args.json:
            print(json.dumps(report.as_dict()), flush=True)
        else:
            copied = ", ".join(f"{n} {t}" for t, n in report.copied.items() if n) or "nothing new"
            print(f"capsule: fleet sync: {report.sources} capsule(s), copied {copied}"
                  + (f" ({report.retries} retries)" if report.retries else "")
                  + (f", {len(report.failed)} skipped on error" if report.failed else ""), file=sys.stderr, flush=True)
        if not args.every:
            return 1 if report.failed else 0
        time.sleep(args.every)


def cmd_report(args) -> int:
    target = report_out.html_target(args.html)
    timeout = getattr(args, "timeout", REPORT_TIMEOUT_S)     # `ctx report --dsn` has no --timeout
    if not timeout > 0 or timeout == float("inf"):
        raise UserError(f"--timeout {timeout}: a positive number of seconds")
    dsn = dsn_of(args)
    _must_exist(dsn)
    eng = _open(dsn, timeout)
    from capsule.fleet import fleet_report  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.prompt import budget  # noqa: PLC0415 - bench_startup "capsule --help"

    since = parse_since(args.since) if args.since else None
    until = parse_since(args.until) if args.until else None
    data = fleet_report.build(eng, budget.everything_on(), since, until)
    if not report_out.write(data, target, args.json, _fleet_html):
        print(visible(fleet_report.render_text(data)))
    return 0


def _must_exist(dsn: str) -> None:
    """A report reads a fleet database: one that names a missing SQLite file is a typo, and opening
    it would create an empty database and report 0 capsules."""
    if dsn.startswith("sqlite:///"):
        path = Path(dsn[len("sqlite:///"):].split("?", 1)[0])
        if str(path) not in ("", ":memory:") and not path.is_file():
            raise UserError(f"fleet database: no database at {path}; `capsule fleet sync` with this DSN creates "
                            "and fills it")


def _fleet_html(data: dict) -> str:
    from capsule.fleet import fleet_html  # noqa: PLC0415 - bench_startup "capsule --help"

    return fleet_html.render(data)


def cmd_render(args) -> int:
    from capsule.fleet import render  # noqa: PLC0415 - bench_startup "capsule --help"

    if args.replicas < 1:
        raise UserError(f"--replicas {args.replicas}: at least 1")
    role = resolve_role(args.role)
    image = args.image or os.environ.get(IMAGE_ENV, DEFAULT_IMAGE)
    if args.kubernetes:
        text = render.kubernetes_yaml(role, args.replicas, image, namespace=args.namespace,
                                      sync_image=args.sync_image)
    else:
        workspace = args.workspace.resolve()
        if not workspace.is_dir():
            raise UserError(f"--workspace {workspace}: not a directory")
        text = render.compose_yaml(role, args.replicas, image, workspace, sync_image=args.sync_image,
                                   user=run_as(workspace, args.user))
    if args.output:
        args.output.write_text(text, encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
