"""`capsule up|down|ps|logs|supervise|shims`: launching roles, in Docker or locally.

Not responsible for supervising (capsule/supervisor/) or for Docker itself (the `docker` CLI is
called as a subprocess). Invariant: a manifest is validated before anything starts; a bad one
exits 2 with nothing left running.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from capsule.ground import paths
from capsule.ground.errors import UserError
from capsule.ground import reserved, switches
from capsule.policy.manifest import DEFAULT_ROLE, ManifestError, Role, load_role

IMAGE_ENV = "CAPSULE_IMAGE"
DEFAULT_IMAGE = "capsule:dev"
ROLE_IN_CONTAINER = "/etc/capsule/role.toml"
LABEL = "capsule.managed"
STATE_VOLUME_PREFIX = "capsule-state-"   # + role name: the state volume `up` mounts at /state/context
REPO_ROOT = Path(__file__).resolve().parents[2]


def register(sub) -> None:
    up = sub.add_parser("up", help="run a role: its container, or locally with --local",
                        description="Run a role's agent under the capsule supervisor. In Docker by default "
                        "(workspace mounted, state volume at /state/context); --local runs the supervisor "
                        "here with the shims first on PATH.")
    up.add_argument("--role", default=DEFAULT_ROLE, help="a role name from roles/ or a path to a TOML file")
    up.add_argument("--workspace", type=Path, help="directory mounted as the role's workspace (default: .)")
    up.add_argument("--detach", "-d", action="store_true", help="start the container in the background")
    up.add_argument("-e", "--env", action="append", default=[], metavar="VAR=VAL",
                    help="environment for the agent (e.g. -e JACKIN_CTX_NO_SHIMS=1); repeatable")
    up.add_argument("--local", action="store_true", help="no Docker: supervise CMD (default: the role's agent) here")
    up.add_argument("--name", help="container name (default: capsule-ROLE)")
    up.add_argument("--image", default=os.environ.get(IMAGE_ENV, DEFAULT_IMAGE), help="image (default: %(default)s)")
    up.add_argument("--grace", type=float, default=5.0, help="seconds stragglers get before SIGKILL")
    up.add_argument("--user", default=os.environ.get(switches.USER_OVERRIDE), metavar="UID[:GID]",
                    help="uid/gid the agent runs as in the container (default: the workspace's owner; "
                    f"${switches.USER_OVERRIDE})")
    up.add_argument("--network", help="docker network for the container (default: Docker's bridge)")
    up.add_argument("--replicas", type=int, metavar="N", help="N containers of the role through compose, each "
                    "with its own state volume (always detached; `capsule fleet render --compose` shows the file)")
    up.add_argument("--sync-image", metavar="IMAGE", help="with --replicas: add a fleet-sync service per replica "
                    "(an image with capsule[fleet]; syncs to $CAPSULE_FLEET_DSN every minute)")
    up.add_argument("argv", nargs="*", metavar="-- CMD ARGS", help="the agent command (default: the role's)")
    up.set_defaults(func=cmd_up)

    down = sub.add_parser("down", help="stop and remove role containers")
    down.add_argument("names", nargs="*", help="role or container names (default: all capsule containers)")
    down.add_argument("--volumes", action="store_true", help="also remove their state volumes")
    down.set_defaults(func=cmd_down)

    ps = sub.add_parser("ps", help="list role containers")
    ps.set_defaults(func=cmd_ps)

    logs = sub.add_parser("logs", help="a role container's log (the supervisor and the agent)")
    logs.add_argument("name", help="role or container name")
    logs.add_argument("-f", "--follow", action="store_true")
    logs.set_defaults(func=cmd_logs)

    sv = sub.add_parser("supervise", help="the capsule supervisor (the image's entrypoint, PID 1)",
                        description=f"Run the role's agent (or CMD) under the supervisor. The role comes from "
                        f"--role, else ${switches.ROLE}, else '{DEFAULT_ROLE}'.")
    sv.add_argument("--role", help="role name or TOML path")
    sv.add_argument("--shim-dir", type=Path, default=None,
                    help=f"shim directory put first on the agent's PATH (default: {paths.CONTAINER_SHIM_DIR} if present)")
    sv.add_argument("--grace", type=float, default=5.0, help="seconds stragglers get before SIGKILL")
    sv.add_argument("-v", "--verbose", action="store_true", help="log supervisor events to stderr")
    sv.add_argument("argv", nargs="*", metavar="-- CMD ARGS")
    sv.set_defaults(func=cmd_supervise)

    shims = sub.add_parser("shims", help="shim management")
    shims_sub = shims.add_subparsers(dest="shims_command", metavar="SUBCOMMAND")
    inst = shims_sub.add_parser("install", help="write the shims into DIR")
    inst.add_argument("dir", type=Path)
    inst.add_argument("--socket", help="control socket the shims use when $JACKIN_CTX_SOCKET is unset")
    inst.add_argument("--python", help="interpreter for the shim (default: /usr/bin/python3)")
    inst.set_defaults(func=cmd_shims_install)
    shims.set_defaults(func=lambda args: (shims.print_help(), 2)[1])


# ---- helpers ----------------------------------------------------------------------------
def resolve_role(name: str | None) -> Role:
    try:
        return load_role(name or os.environ.get(switches.ROLE) or DEFAULT_ROLE)
    except ManifestError as exc:
        raise UserError(str(exc)) from None


def _pairs(items: list[str]) -> dict[str, str]:
    env = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UserError(f"-e {item!r}: expected VAR=VALUE")
        why = reserved.refused(name)
        if why:
            raise UserError(f"-e {name}: capsule sets it itself: {why}")
        env[name] = value
    return env


def _argv(args) -> list[str]:
    argv = list(args.argv or [])
    if argv and argv[0] == "--":
        argv = argv[1:]
    return argv


def _docker() -> str:
    docker = shutil.which("docker")
    if docker is None:
        raise UserError("docker not found on PATH; install it (scripts/setup-docker.sh) or use --local")
    return docker


# ---- commands ---------------------------------------------------------------------------
def cmd_supervise(args) -> int:
    from capsule.supervisor.core import Options, Supervisor  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.supervisor.log_setup import setup_logging  # noqa: PLC0415 - bench_startup "capsule --help"

    run_as = os.environ.get(switches.RUN_AS)
    if run_as:  # `capsule up` started us as root: become the workspace owner first (identity.py)
        from capsule.supervisor import identity  # noqa: PLC0415 - bench_startup "capsule --help"

        identity.adopt(run_as, paths.state_dir(), Path.cwd())
    role = resolve_role(args.role)
    shim_dir = args.shim_dir
    if shim_dir is None and paths.CONTAINER_SHIM_DIR.is_dir():
        shim_dir = paths.CONTAINER_SHIM_DIR
    setup_logging(paths.state_dir(), args.verbose)
    sup = Supervisor(Options(role=role, command=_argv(args) or None, shim_dir=shim_dir, grace_s=args.grace))
    return sup.run()


def cmd_up(args) -> int:
    role = resolve_role(args.role)
    extra = _pairs(args.env)
    argv = _argv(args)
    _say_when_passive(role, extra)
    if args.local:
        return _up_local(role, extra, argv, args)
    if args.replicas is not None:
        return _up_replicas(role, extra, argv, args)
    return _up_docker(role, extra, argv, args)


def compose_command(docker: str) -> list[str]:
    """`docker compose` (the plugin) when it answers, else Debian's `docker-compose`."""
    if subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    if legacy is None:
        raise UserError("--replicas needs compose: install the docker compose plugin or docker-compose (apt)")
    return [legacy]


def _up_replicas(role: Role, extra: dict[str, str], argv: list[str], args) -> int:
    from capsule.fleet import render  # noqa: PLC0415 - bench_startup "capsule --help"

    if args.replicas < 1:
        raise UserError(f"--replicas {args.replicas}: at least 1")
    docker = _docker()
    workspace = (args.workspace or Path.cwd()).resolve()
    if not workspace.is_dir():
        raise UserError(f"--workspace {workspace}: not a directory")
    user = run_as(workspace, args.user)
    if subprocess.run([docker, "image", "inspect", args.image], capture_output=True).returncode != 0:
        _build_image(docker, args.image)
    project = args.name or f"capsule-{render.slug(role)}"
    folder = paths.state_dir() / "compose"
    folder.mkdir(mode=0o700, exist_ok=True)
    target = folder / f"{project}.yaml"
    paths.write_private(target, render.compose_yaml(role, args.replicas, args.image, workspace, extra, argv,
                                                    args.sync_image, user))
    cmd = [*compose_command(docker), "-p", project, "-f", str(target), "up", "-d", "--remove-orphans"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise UserError(f"compose up of {target} failed: {proc.stderr.strip()[-500:]}")
    for name in render.replica_names(role, args.replicas):
        print(f"capsule-{name}")
    print(f"capsule: {args.replicas} replica(s) of {role.name} from {target}", file=sys.stderr)
    return 0


def _say_when_passive(role: Role, extra: dict[str, str]) -> None:
    """A role that changes nothing must say so: a silent no-op looks like a broken install."""
    from capsule.policy import plan as planning  # noqa: PLC0415 - bench_startup "capsule --help"

    saved = {k: os.environ.get(k) for k in extra}
    os.environ.update(extra)
    try:
        mode = planning.effective_mode(role, switches.Switches.read())
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    if mode in ("measure", "off"):
        what = "counts every output and leaves it raw" if mode == "measure" else "is off: nothing is counted or changed"
        print(f"capsule: role {role.name} runs in {mode} mode: capsule {what}. To compress, use a role with "
              f"mode = \"standard\" in [context] (e.g. --role python-dev); `capsule ctx doctor --role {role.name}` "
              "says why.", file=sys.stderr)


def _up_local(role: Role, extra: dict[str, str], argv: list[str], args) -> int:
    from capsule import shims  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.supervisor.core import Options, Supervisor  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.supervisor.log_setup import setup_logging  # noqa: PLC0415 - bench_startup "capsule --help"

    os.environ.update(extra)  # switches passed with -e apply to the supervisor too
    state = paths.state_dir()
    shim_dir = state / "shims"
    shims.install(shim_dir, socket=str(paths.socket_path()))
    _owner_only(shim_dir)        # under the state dir: as private as the rest (install writes 0755)
    workdir = args.workspace.resolve() if args.workspace else None
    if workdir is not None and not workdir.is_dir():
        raise UserError(f"--workspace {args.workspace}: not a directory")
    setup_logging(state, verbose=False)
    sup = Supervisor(Options(role=role, command=argv or None, shim_dir=shim_dir, grace_s=args.grace,
                             workdir=workdir, env=extra, session_config=True))
    from capsule.cli import up_banner  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.supervisor.launch import agent_kind  # noqa: PLC0415 - bench_startup "capsule --help"

    started = up_banner.now()
    up_banner.say(up_banner.before(role, sup.plan, sup.mode, "local (no Docker; shims first on PATH)",
                                   list(argv or role.agent.command), agent_kind(role, argv or None), str(state)))
    code = sup.run()
    up_banner.say(up_banner.after(state, started, code))
    return code


def _owner_only(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        if not path.is_symlink():
            paths.tighten(path)


CAPABILITIES = reserved.CAPABILITIES     # what the container keeps (ground/reserved.py says why)


def run_as(workspace: Path, override: str | None):
    """The agent's uid/gid: --user (or $CAPSULE_USER) when given, else the workspace's owner. Never
    root by default: root in the container can leave a setuid-root program in the bind-mounted
    workspace, which no container option stops on the host (README, "Who the agent runs as")."""
    from capsule.supervisor import identity  # noqa: PLC0415 - bench_startup "capsule --help"

    if override:
        try:
            user = identity.parse(override, "--user")
        except ValueError as exc:
            raise UserError(str(exc)) from None
        if user.uid == 0:
            owner = identity.owner_of(workspace)
            if owner.uid != 0:      # never below the workspace owner, whoever asks (the supervisor re-checks)
                raise UserError(f"--user {override}: the workspace {workspace} is owned by {owner}; capsule runs "
                                f"the agent as root only on a root-owned workspace: pass --user {owner} (the default)")
            print("capsule: --user 0:0: the agent runs as root, as asked; it can leave setuid-root files in "
                  f"{workspace}", file=sys.stderr)
        return user
    owner = identity.owner_of(workspace)
    if owner.uid == 0:
        raise UserError(f"the workspace {workspace} is owned by root and capsule does not run the agent as root: "
                        f"chown it to the user who works in it (chown -R 1000:1000 {workspace}) or pass "
                        "--user UID:GID")
    return owner


def docker_run_argv(role: Role, extra: dict[str, str], argv: list[str], *, image: str, name: str,
                    workspace: Path, detach: bool, interactive: bool, user=None,
                    network: str | None = None) -> list[str]:
    """The `docker run` command line for a role (pure: tests and `up` share it). `user`: the
    agent's uid/gid (identity.Identity); the container starts as root and the supervisor drops."""
    cmd = ["run", "--name", name, "--label", f"{LABEL}=1", "--label", f"capsule.role={role.name}",
           "-v", f"{STATE_VOLUME_PREFIX}{role.name}:{paths.CONTAINER_STATE_DIR}",
           "-v", f"{role.path}:{ROLE_IN_CONTAINER}:ro",
           "-v", f"{workspace}:{role.workspace_mount}{':ro' if role.workspace_read_only else ''}",
           "-w", role.workspace_mount,
           "--security-opt", "no-new-privileges", "--cap-drop", "ALL",
           *[arg for cap in CAPABILITIES for arg in ("--cap-add", cap)]]
    if user is not None:
        cmd += ["--user", "0:0", "--label", f"capsule.user={user}"]
    if network:
        cmd += ["--network", network]
    res = role.resources
    if "cpus" in res:
        cmd += ["--cpus", str(res["cpus"])]
    if "memory" in res:
        cmd += ["--memory", str(res["memory"])]
    if "pids" in res:
        cmd += ["--pids-limit", str(res["pids"])]
    # the role's loader variables reach the agent through the supervisor, never PID 1 (root at start)
    env = reserved.supervisor_env(role.agent.env)
    env.update({k: os.environ[k] for k in switches.ALL_SWITCHES if k in os.environ})
    env.update(extra)
    # capsule's own values last: docker keeps the last -e of a name (the manifest and _pairs refuse
    # these names already; this order holds even if a new path forgets to)
    env = {k: v for k, v in env.items() if not reserved.refused(k)}
    for key in sorted(env):
        cmd += ["-e", f"{key}={env[key]}"]
    cmd += ["-e", f"{switches.ROLE}={ROLE_IN_CONTAINER}"]
    if user is not None:
        cmd += ["-e", f"{switches.RUN_AS}={user}"]
    if detach:
        cmd += ["-d"]
    else:
        cmd += ["--rm", "-i"] + (["-t"] if interactive else [])
    cmd += ["--stop-timeout", "15", image]
    if argv:
        cmd += ["--"] + argv
    return cmd


def _up_docker(role: Role, extra: dict[str, str], argv: list[str], args) -> int:
    docker = _docker()
    workspace = (args.workspace or Path.cwd()).resolve()
    if not workspace.is_dir():
        raise UserError(f"--workspace {workspace}: not a directory")
    user = run_as(workspace, args.user)
    if subprocess.run([docker, "image", "inspect", args.image], capture_output=True).returncode != 0:
        _build_image(docker, args.image)
    name = args.name or f"capsule-{role.name}"
    _say_before_docker(role, extra, argv, args.image, name)
    cmd = docker_run_argv(role, extra, argv, image=args.image, name=name, workspace=workspace,
                          detach=args.detach, interactive=sys.stdin.isatty() and sys.stdout.isatty(),
                          user=user, network=args.network)
    if args.detach:
        proc = subprocess.run([docker, *cmd], capture_output=True, text=True)
        if proc.returncode != 0:
            raise UserError(f"docker run failed: {proc.stderr.strip().splitlines()[-1:] or proc.returncode}")
        print(proc.stdout.strip())
        return 0
    code = subprocess.call([docker, *cmd])
    print(f"capsule: container {name} exited {code}; its state stays in volume {STATE_VOLUME_PREFIX}{role.name} "
          f"(`capsule down {role.name} --volumes` removes it)", file=sys.stderr)
    return code


def _say_before_docker(role: Role, extra: dict[str, str], argv: list[str], image: str, name: str) -> None:
    from capsule.cli import up_banner  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.policy import plan as planning  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.supervisor.launch import agent_kind  # noqa: PLC0415 - bench_startup "capsule --help"

    sw = switches.Switches.read({**{k: v for k, v in os.environ.items() if k in switches.ALL_SWITCHES}, **extra})
    up_banner.say(up_banner.before(role, planning.plan(role, sw), planning.effective_mode(role, sw),
                                   f"container {name} from image {image}", list(argv or role.agent.command),
                                   agent_kind(role, argv or None),
                                   f"volume {STATE_VOLUME_PREFIX}{role.name} at {paths.CONTAINER_STATE_DIR}", here=False))


def _build_image(docker: str, image: str) -> None:
    dockerfile = REPO_ROOT / "Dockerfile"
    if not dockerfile.is_file():
        raise UserError(f"image {image} not found and no Dockerfile here to build it; "
                        "build it from a capsule checkout (scripts/setup-docker.sh) or pass --image")
    print(f"capsule: building {image} from {dockerfile}", file=sys.stderr)
    setup = REPO_ROOT / "scripts" / "setup-docker.sh"
    if setup.is_file() and os.geteuid() == 0 and "CAPSULE_BASE_IMAGE" not in os.environ:
        # Offline-capable path: Debian base via debootstrap, wheels from this checkout.
        if subprocess.call([str(setup)], env={**os.environ, IMAGE_ENV: image}) != 0:
            raise UserError(f"building {image} with {setup} failed")
        return
    build = [docker, "build", "-t", image]
    base = os.environ.get("CAPSULE_BASE_IMAGE")
    if base:
        build += ["--build-arg", f"BASE_IMAGE={base}"]
    if (REPO_ROOT / "wheelhouse").is_dir():
        build += ["--build-arg", "WHEELHOUSE=wheelhouse"]
    if subprocess.call([*build, str(REPO_ROOT)]) != 0:
        raise UserError(f"docker build of {image} failed")


def _containers(docker: str, names: list[str]) -> list[str]:
    base = [docker, "ps", "-a", "-q", "--filter", f"label={LABEL}=1"]
    if not names:
        return subprocess.run(base, capture_output=True, text=True).stdout.split()
    ids: list[str] = []
    for n in names:
        for flt in (f"label=capsule.role={n}", f"name=^/{n}$"):
            for cid in subprocess.run([*base, "--filter", flt], capture_output=True, text=True).stdout.split():
                if cid not in ids:
                    ids.append(cid)
    return ids


def cmd_down(args) -> int:
    docker = _docker()
    ids = _containers(docker, args.names)
    volumes: set[str] = set()
    if args.volumes:
        for cid in ids:
            out = subprocess.run([docker, "inspect", "-f", '{{index .Config.Labels "capsule.role"}}', cid],
                                 capture_output=True, text=True).stdout.strip()
            if out:
                volumes.add(f"{STATE_VOLUME_PREFIX}{out}")
        # A foreground `up` removes its container on exit but keeps the state volume: find those too.
        existing = subprocess.run([docker, "volume", "ls", "-q", "--filter", f"name=^{STATE_VOLUME_PREFIX}"],
                                  capture_output=True, text=True).stdout.split()
        wanted = {f"{STATE_VOLUME_PREFIX}{n.removeprefix('capsule-')}" for n in args.names}
        volumes.update(v for v in existing if not args.names or v in wanted)
        # `up --replicas`: one labelled volume per replica (capsule-state-ROLE-N)
        for n in args.names:
            volumes.update(subprocess.run([docker, "volume", "ls", "-q", "--filter", f"label=capsule.role={n}"],
                                          capture_output=True, text=True).stdout.split())
    if not ids and not volumes:
        print("capsule: no capsule containers" + (" or state volumes" if args.volumes else ""), file=sys.stderr)
        return 0
    rc = 0
    if ids:
        # `docker stop` first: SIGTERM to the supervisor, which forwards it to the agent's group and
        # gives stragglers their grace; Docker's SIGKILL comes only after the container's stop timeout.
        subprocess.call([docker, "stop", *ids], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rc = subprocess.call([docker, "rm", "-f", *ids], stdout=subprocess.DEVNULL)
        print(f"capsule: removed {len(ids)} container(s)", file=sys.stderr)
        # `up --replicas`: compose made the role a network (labelled like its containers)
        flt = [f"label=capsule.role={n}" for n in args.names] or [f"label={LABEL}=1"]
        nets = {i for f in flt for i in subprocess.run([docker, "network", "ls", "-q", "--filter", f],
                                                       capture_output=True, text=True).stdout.split()}
        if nets:
            subprocess.call([docker, "network", "rm", *sorted(nets)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    if volumes:
        subprocess.call([docker, "volume", "rm", "-f", *sorted(volumes)], stdout=subprocess.DEVNULL)
        print(f"capsule: removed volume(s) {', '.join(sorted(volumes))}", file=sys.stderr)
    return rc


def cmd_ps(args) -> int:
    docker = _docker()
    return subprocess.call([docker, "ps", "-a", "--filter", f"label={LABEL}=1", "--format",
                            'table {{.Names}}\t{{.Label "capsule.role"}}\t{{.Label "capsule.user"}}\t{{.Status}}\t{{.Image}}'])


def cmd_logs(args) -> int:
    docker = _docker()
    ids = _containers(docker, [args.name])
    if not ids:
        raise UserError(f"no capsule container for {args.name!r}; see `capsule ps`")
    return subprocess.call([docker, "logs", *(["-f"] if args.follow else []), ids[0]])


def cmd_shims_install(args) -> int:
    from capsule import shims  # noqa: PLC0415 - bench_startup "capsule --help"

    written = shims.install(args.dir, python=args.python, socket=args.socket)
    print(f"capsule: {len(written)} shims in {Path(args.dir).absolute()} -> {shims.PROGRAM}")
    return 0
