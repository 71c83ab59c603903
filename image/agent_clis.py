"""The pinned agent CLIs (image/agent-clis.toml) for the scripts and the Dockerfile that build images.

Responsible for reading the pins, checking the host's npm installs against them, and packing those
installs into one tar the offline image build ADDs (hardlinks kept: claude's 245 MB binary is there
twice), with the host's node binary as /usr/local/bin/node (the [node] table: Gemini CLI needs a newer
Node than the base's). Invariant: a pack is made only from installs whose version is the pinned one
and a node of at least the minimum that needs no library beyond glibc and libstdc++, else exit 2.
Standard library only: it runs on the host's python3 and inside bare base images.

    agent_clis.py specs               PACKAGE@VERSION per line (npm install -g …)
    agent_clis.py missing             the specs whose command is absent or at another version, and
                                      node@VERSION when `node` is absent or older than [node] minimum
    agent_clis.py labels              --label KEY=VERSION per line (docker build; the node packed too)
    agent_clis.py key                 a short hash of the pins and the host's node binary (the CLI
                                      layer's cache key: a new host node rebuilds the layer)
    agent_clis.py matrix              COMMAND PACKAGE@VERSION PREFIX per line: each client's tested releases
                                      (oldest, newest: capsule/agents/data/clients/<name>.toml) other than
                                      its pin, installed apart (npm --prefix) for the tests and --matrix
    agent_clis.py absent NPM_ROOT     PACKAGE@VERSION PREFIX per line: the pins installed neither under
                                      NPM_ROOT nor in their own prefix (setup-docker.sh installs them there)
    agent_clis.py pack NPM_ROOT OUT   each pin from NPM_ROOT when it holds the pinned version, else from
                                      its own prefix (the pin file decides, not the host's PATH); write OUT
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

PINS = Path(__file__).with_name("agent-clis.toml")
PREFIX = "usr/local"   # where the pack unpacks: /usr/local/lib/node_modules, /usr/local/bin
TESTED = Path(__file__).resolve().parent.parent / "capsule" / "agents" / "data" / "clients"   # <name>.toml: tested
MATRIX_ENV = "CAPSULE_CLIENTS_DIR"     # where the oldest releases go; default ~/.cache/capsule/clients


def matrix_root() -> Path:
    import os  # noqa: PLC0415

    explicit = os.environ.get(MATRIX_ENV)
    return Path(explicit) if explicit else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "capsule" / "clients"


def matrix() -> list[tuple[str, str, Path]]:
    """(command, PACKAGE@VERSION, npm prefix) of each client's tested releases that are not its pin."""
    tested = [tomllib.loads(p.read_text()) for p in sorted(TESTED.glob("*.toml"))]
    out = []
    for cli in pins():
        spec = next((t for t in tested if t.get("package") == cli["package"]), None)
        for version in dict.fromkeys(spec["tested"]) if spec else ():
            if version != cli["version"]:
                out.append((cli["command"], f"{cli['package']}@{version}", prefix_of(cli, version)))
    return out


def prefix_of(cli: dict, version: str | None = None) -> Path:
    """The npm prefix a release of `cli` is installed in apart from the global one (matrix, pack)."""
    return matrix_root() / f"{cli['package'].split('/')[-1]}-{version or cli['version']}"


def pins(path: Path = PINS) -> list[dict]:
    with open(path, "rb") as f:
        data = tomllib.load(f)
    clis = data.get("cli", [])
    for i, cli in enumerate(clis):
        for key in ("command", "package", "version", "label"):
            if not isinstance(cli.get(key), str) or not cli[key]:
                sys.exit(f"{path}: cli #{i + 1}: missing or empty {key!r}")
    return clis


# What a copied node binary may link against: the base has these (glibc, libstdc++ from gcc).
NODE_LIBS = re.compile(r"^(linux-vdso|ld-linux[-\w.]*|lib(c|m|dl|rt|pthread|stdc\+\+|gcc_s))\.so")


def node_pin(path: Path = PINS) -> dict:
    with open(path, "rb") as f:
        node = tomllib.load(f).get("node") or {}
    for key in ("package", "version", "label"):
        if not isinstance(node.get(key), str) or not node[key]:
            sys.exit(f"{path}: [node]: missing or empty {key!r}")
    if not isinstance(node.get("minimum"), int):
        sys.exit(f"{path}: [node]: minimum must be an integer (a major version)")
    return node


def host_node() -> Path | None:
    """The host's node binary ($NODE_BIN, else `node` on PATH), symlinks resolved."""
    found = os.environ.get("NODE_BIN") or shutil.which("node")
    return Path(found).resolve() if found else None


def node_version(binary: Path | str | None) -> str | None:
    """`node --version` without its `v`, or None when it does not run."""
    if binary is None:
        return None
    try:
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = out.stdout.strip().removeprefix("v")
    return text if out.returncode == 0 and re.fullmatch(r"\d+\.\d+\.\d+", text) else None


def node_ok(version: str | None, minimum: int) -> bool:
    return version is not None and int(version.split(".")[0]) >= minimum


def node_libs(binary: Path) -> list[str]:
    """The shared libraries `ldd` names for the binary that the base may lack (none: it can be copied)."""
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        return [f"ldd failed: {out.stderr.strip() or out.stdout.strip()}"]
    names = [line.split()[0] for line in out.stdout.splitlines() if line.strip()]
    return [n for n in names if not NODE_LIBS.match(os.path.basename(n))]


def installed_version(npm_root: Path, package: str) -> str | None:
    try:
        return json.loads((npm_root / package / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def _on_path_version(cli: dict) -> str | None:
    """The version of the command on PATH, read from its npm package.json (no need to run it)."""
    exe = shutil.which(cli["command"])
    if exe is None:
        return None
    real = Path(exe).resolve()
    for parent in real.parents:
        if parent.name == cli["package"].split("/")[-1] and (parent / "package.json").is_file():
            return installed_version(parent.parent.parent if "/" in cli["package"] else parent.parent,
                                     cli["package"])
    return None


def _bins(pkg_dir: Path) -> dict[str, str]:
    meta = json.loads((pkg_dir / "package.json").read_text())
    bins = meta.get("bin") or {}
    if isinstance(bins, str):
        bins = {meta["name"].split("/")[-1]: bins}
    return bins


def _deps(pkg_dir: Path) -> list[str]:
    meta = json.loads((pkg_dir / "package.json").read_text())
    return sorted({**(meta.get("dependencies") or {}), **(meta.get("optionalDependencies") or {})})


def source(npm_root: Path, cli: dict) -> Path | None:
    """The node_modules dir holding `cli` at its pinned version: the host's global one (npm_root),
    else the pin's own prefix; None when neither does."""
    for root in (npm_root, prefix_of(cli) / "node_modules"):
        if installed_version(root, cli["package"]) == cli["version"]:
            return root
    return None


def pack(npm_root: Path, out: Path) -> None:
    clis = pins()
    roots, wrong = {}, []
    for cli in clis:
        roots[cli["package"]] = source(npm_root, cli)
        if roots[cli["package"]] is None:
            have = installed_version(npm_root, cli["package"])
            wrong.append(f"{cli['package']}: pinned {cli['version']}, host has {have or 'nothing'} in {npm_root}"
                         f" and nothing in {prefix_of(cli)}")
    node, pin = host_node(), node_pin()
    have = node_version(node)
    if not node_ok(have, pin["minimum"]):
        wrong.append(f"node: the CLI layer needs >= {pin['minimum']}, host has {have or 'none'} ({node})")
    elif extra := node_libs(node):
        wrong.append(f"node: {node} needs libraries the base may lack ({', '.join(extra)}); "
                     "set NODE_BIN to a node linked against glibc and libstdc++ only")
    if wrong:
        print("agent_clis: " + "; ".join(wrong) + ". Run scripts/setup-clients.sh (installs the pins).",
              file=sys.stderr)
        sys.exit(2)
    with tarfile.open(out, "w") as tar:
        tar.add(node, arcname=f"{PREFIX}/bin/node")    # ahead of the base's /usr/bin/node on PATH
        for cli in clis:
            pkg_dir = roots[cli["package"]] / cli["package"]
            tar.add(pkg_dir, arcname=f"{PREFIX}/lib/node_modules/{cli['package']}")
            if roots[cli["package"]] != npm_root:   # a prefix install keeps its dependencies beside it
                for dep in _deps(pkg_dir):
                    if (roots[cli["package"]] / dep).is_dir() and not (pkg_dir / "node_modules" / dep).exists():
                        tar.add(roots[cli["package"]] / dep,
                                arcname=f"{PREFIX}/lib/node_modules/{cli['package']}/node_modules/{dep}")
            for name, rel in _bins(pkg_dir).items():
                link = tarfile.TarInfo(f"{PREFIX}/bin/{name}")
                link.type = tarfile.SYMTYPE
                link.linkname = f"../lib/node_modules/{cli['package']}/{rel.removeprefix('./')}"
                link.mode = 0o777
                tar.addfile(link)


def main(argv: list[str]) -> int:
    cmd = argv[0] if argv else ""
    if cmd == "specs":
        print("\n".join(f"{c['package']}@{c['version']}" for c in pins()))
    elif cmd == "missing":
        specs = [f"{c['package']}@{c['version']}" for c in pins() if _on_path_version(c) != c["version"]]
        node = node_pin()
        if not node_ok(node_version(shutil.which("node")), node["minimum"]):
            specs.append(f"{node['package']}@{node['version']}")
        print("\n".join(specs))
    elif cmd == "labels":
        node = node_pin()
        print("\n".join([*(f"--label\n{c['label']}={c['version']}" for c in pins()),
                         f"--label\n{node['label']}={node_version(host_node()) or 'none'}"]))
    elif cmd == "key":
        h = hashlib.sha256(PINS.read_bytes() + Path(__file__).read_bytes())
        node = host_node()
        if node is not None and node.is_file():
            with open(node, "rb") as f:
                while chunk := f.read(1 << 20):
                    h.update(chunk)
        print(h.hexdigest()[:16])
    elif cmd == "matrix":
        print("\n".join(f"{c} {spec} {prefix}" for c, spec, prefix in matrix()))
    elif cmd == "absent" and len(argv) == 2:
        print("\n".join(f"{c['package']}@{c['version']} {prefix_of(c)}" for c in pins() if source(Path(argv[1]), c) is None))
    elif cmd == "pack" and len(argv) == 3:
        pack(Path(argv[1]), Path(argv[2]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
