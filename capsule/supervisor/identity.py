"""Who the agent runs as in the container: the workspace owner's uid and gid (`capsule up`).

`capsule up` starts the container as root with $JACKIN_CTX_RUN_AS=UID:GID (the workspace owner,
or --user); before anything else the supervisor maps the image's `agent` user onto that uid/gid,
hands it the state volume (owner-only, 0700) and its home, and drops root for good, so the agent
and everything it starts write workspace files the host user owns. UID 0 only when the operator
asked (`capsule up --user 0:0` on a root-owned workspace; `up` refuses a root-owned one otherwise),
confined by the capabilities `capsule up` leaves (capsule/cli/runtime.py).
Invariant: after adopt() returns, the process's real, effective and saved ids are the target's,
or the supervisor has exited 2 with a message naming what failed; nothing runs as root unasked,
and never as root over a workspace someone else owns (the supervisor re-checks what it was told).
"""

from __future__ import annotations

import os
import pwd
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

AGENT_USER = "agent"          # the image's user (Dockerfile), renumbered to the target ids
_SPEC = re.compile(r"(\d{1,10})(?::(\d{1,10}))?")


@dataclass(frozen=True)
class Identity:
    uid: int
    gid: int

    def __str__(self) -> str:
        return f"{self.uid}:{self.gid}"


def parse(spec: str, what: str = "user") -> Identity:
    """'UID' or 'UID:GID' (numbers: the container has no names for host users)."""
    m = _SPEC.fullmatch(spec.strip())
    if not m:
        raise ValueError(f"{what} {spec!r}: expected UID or UID:GID (numbers, e.g. 501:20)")
    uid = int(m.group(1))
    gid = int(m.group(2)) if m.group(2) is not None else uid
    if uid > 0xFFFFFFFE or gid > 0xFFFFFFFE:
        raise ValueError(f"{what} {spec!r}: id out of range")
    return Identity(uid, gid)


def owner_of(path: Path) -> Identity:
    st = os.stat(path)
    return Identity(st.st_uid, st.st_gid)


def adopt(spec: str, state_dir: Path, workspace: Path | None) -> None:
    """Become `spec` (see module doc); a no-op unless running as root. Exits 2 on failure."""
    if os.geteuid() != 0:
        return
    try:
        target = parse(spec, "$JACKIN_CTX_RUN_AS")
    except ValueError as exc:
        _fail(str(exc))
    if target.uid == 0 and workspace is not None and workspace.is_dir() and owner_of(workspace).uid != 0:
        # $JACKIN_CTX_RUN_AS came from somewhere other than `capsule up` (which sends the owner): root
        # here could leave a setuid-root program in a workspace a host user owns
        _fail(f"$JACKIN_CTX_RUN_AS=0:0 but the workspace {workspace} is owned by {owner_of(workspace)}: "
              "refusing to run the agent as root; start it with `capsule up` (the owner's ids) or --user UID:GID")
    home = _account(target)
    _own_tree(state_dir, target)
    os.environ.update({"HOME": str(home), "USER": AGENT_USER if target.uid else "root",
                       "LOGNAME": AGENT_USER if target.uid else "root"})
    if target.uid == 0:
        # Claude Code refuses --dangerously-skip-permissions as root outside a sandbox; this is one.
        os.environ.setdefault("IS_SANDBOX", "1")
    else:
        try:
            os.setgroups([target.gid])
            os.setresgid(target.gid, target.gid, target.gid)
            os.setresuid(target.uid, target.uid, target.uid)
        except OSError as exc:
            _fail(f"cannot switch to {target}: {exc}")
        if os.getresuid() != (target.uid,) * 3 or os.getresgid() != (target.gid,) * 3:
            _fail(f"still not {target} after switching")
    # one line in the container's log (`capsule logs`): who the agent's files will belong to
    print(f"capsule: the agent runs as uid {target.uid}, gid {target.gid}", file=sys.stderr)
    if workspace is not None and workspace.is_dir() and not os.access(workspace, os.W_OK):
        owner = owner_of(workspace)
        print(f"capsule: the agent runs as {target} and cannot write {workspace} (owned by {owner}); "
              f"start it with `capsule up --user {owner}` (the default) or make the workspace writable",
              file=sys.stderr)


def _account(target: Identity) -> Path:
    """The agent's passwd entry and home for `target`: root's own for 0, else the image's `agent`
    renumbered (usermod also hands the home's files to the new uid)."""
    if target.uid == 0:
        return Path(pwd.getpwuid(0).pw_dir)
    try:
        agent = pwd.getpwnam(AGENT_USER)
    except KeyError:
        _fail(f"the image has no user {AGENT_USER!r} to run the agent as {target}")
    if (agent.pw_uid, agent.pw_gid) != (target.uid, target.gid):
        for cmd in (["groupmod", "-o", "-g", str(target.gid), AGENT_USER],
                    ["usermod", "-o", "-u", str(target.uid), "-g", str(target.gid), AGENT_USER]):
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                _fail(f"{' '.join(cmd)} failed: {proc.stderr.strip()}")
    home = Path(agent.pw_dir)
    _own_tree(home, target, mode=None)
    return home


def _own_tree(root: Path, target: Identity, mode: int | None = 0o700) -> None:
    """Give `root` and everything under it to `target` (a state volume an earlier run with
    another uid left); `root` itself gets `mode` (owner-only for the state volume)."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        for dirpath, dirnames, filenames in os.walk(root):
            for name in [*dirnames, *filenames]:
                os.lchown(os.path.join(dirpath, name), target.uid, target.gid)
        os.chown(root, target.uid, target.gid)
        if mode is not None:
            os.chmod(root, mode)
    except OSError as exc:
        _fail(f"cannot hand {root} to {target}: {exc}")


def _fail(message: str):
    print(f"capsule: {message}", file=sys.stderr)
    raise SystemExit(2)
