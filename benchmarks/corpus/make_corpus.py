"""Re-create (or extend) the shipped corpora by running real tools on real registry projects.

    python benchmarks/corpus/make_corpus.py --set dev|holdout|fresh|all [--work /tmp/capsule-corpus]
                                            [--out benchmarks/corpus] [--only PREFIX]

Not responsible for labelling rules (labels.py) nor for measuring (benchmarks/bench_corpus.py).
Invariant: every output.txt is the unedited stdout+stderr of one real command; dev, holdout and
fresh are built from disjoint packages, so tuning on dev says nothing about holdout or fresh.
Needs: network to PyPI and npm (pip, npm), git, tree, rg; docker cases only when the engine is up.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from projects import SETS  # noqa: E402

CAP = 1_000_000          # bytes: a case whose output is bigger is skipped, never truncated


class Maker:
    def __init__(self, work: Path, out: Path, set_name: str, only: str | None):
        self.work, self.out, self.set_name, self.only = work, out / set_name, set_name, only
        self.venv = work / f"venv-{set_name}"
        self.made: list[str] = []
        self.versions: dict[str, str] = {}

    # -- running ---------------------------------------------------------------------------
    def env(self, extra: dict | None = None) -> dict:
        env = {"PATH": f"{self.venv}/bin:{self.work}/node-tools/node_modules/.bin:/usr/local/bin:/usr/bin:/bin",
               "HOME": str(self.work / "home"), "LANG": "C.UTF-8", "TZ": "UTC", "TERM": "dumb",
               "MYPY_CACHE_DIR": str(self.work / "mypy-cache"), "NO_COLOR": "1",
               "npm_config_cache": str(self.work / "npm-cache"), "npm_config_fund": "false",
               "npm_config_update_notifier": "false", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
               # the machine's pip.conf may point at local mirrors; a case shows plain registry use
               "PIP_CONFIG_FILE": os.devnull, "PIP_CERT": "/etc/ssl/certs/ca-certificates.crt"}
        cargo = shutil.which("cargo")
        if cargo:       # rustup's toolchains live under the real home, not the cases' scratch HOME
            real_home = Path.home()
            env["PATH"] += ":" + os.path.dirname(cargo)
            env["RUSTUP_HOME"] = os.environ.get("RUSTUP_HOME", str(real_home / ".rustup"))
            env["CARGO_HOME"] = os.environ.get("CARGO_HOME", str(real_home / ".cargo"))
        env.update(extra or {})
        return env

    def sh(self, cmd: str, cwd: Path, extra_env: dict | None = None, timeout: int = 900) -> tuple[bytes, int]:
        p = subprocess.run(["bash", "-c", cmd], cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, env=self.env(extra_env), timeout=timeout)
        return p.stdout, p.returncode

    def version(self, tool: str) -> str:
        if tool not in self.versions:
            cmds = {"pytest": "pytest --version", "ruff": "ruff --version", "mypy": "mypy --version",
                    "git": "git --version", "python": "python --version", "pip": "pip --version",
                    "node": "node --version", "npm": "npm --version", "eslint": "eslint --version",
                    "tree": "tree --version", "rg": "rg --version", "docker": "docker --version",
                    "coreutils": "ls --version", "grep": "grep --version", "findutils": "find --version",
                    "sed": "sed --version", "awk": "awk -W version 2>&1 || awk --version"}
            out, _ = self.sh(cmds.get(tool, f"{tool} --version"), self.work)
            first = out.decode("utf-8", "replace").strip().splitlines()
            self.versions[tool] = (first[0] if first else tool).strip()
        return self.versions[tool]

    def case(self, cid: str, cmd: str, cwd: Path, family: str, intent: str, label, tool: str, source: str,
             notes: str = "", extra_env: dict | None = None, junit: bool = False) -> None:
        """Run one command and write its case folder; label(output, exit_code, ctx) gives must_keep."""
        if self.only and not cid.startswith(tuple(self.only.split(","))):
            return
        ctx: dict = {}
        if junit:
            fd, xml = tempfile.mkstemp(suffix=".xml")
            os.close(fd)
            extra_env = dict(extra_env or {}, PYTEST_ADDOPTS=f"--junitxml={xml} -o junit_family=xunit1")
        out, code = self.sh(cmd, cwd, extra_env)
        if junit:
            ctx["junit"] = Path(xml).read_text(errors="replace") if Path(xml).stat().st_size else None
            os.unlink(xml)
        if len(out) > CAP:
            print(f"  skip {cid}: {len(out)} bytes > cap", file=sys.stderr)
            return
        must = label(out, code, ctx) if label else []
        d = self.out / cid
        d.mkdir(parents=True, exist_ok=True)
        (d / "cmd.txt").write_text(cmd + "\n")
        (d / "output.txt").write_bytes(out)
        (d / "exit_code.txt").write_text(f"{code}\n")
        (d / "must_keep.txt").write_bytes(("\n".join(must) + ("\n" if must else "")).encode("utf-8", "surrogateescape"))
        (d / "intent.txt").write_text(intent + "\n")
        meta = {"family": family, "source": source, "set": self.set_name, "tool_version": self.version(tool),
                "notes": notes or f"generated by make_corpus.py in {cwd.name}"}
        (d / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
        self.made.append(cid)
        print(f"  {cid}: exit {code}, {len(out)} bytes, {len(must)} must-keep", file=sys.stderr)

    # -- setup -----------------------------------------------------------------------------
    def setup(self) -> None:
        self.work.mkdir(parents=True, exist_ok=True)
        (self.work / "home").mkdir(exist_ok=True)
        # an agent's machine has a git identity; merges and commits in cases need one
        (self.work / "home" / ".gitconfig").write_text("[user]\n\tname = corpus\n\temail = corpus@example.invalid\n")
        if not (self.venv / "bin" / "python").exists():
            subprocess.run([sys.executable, "-m", "venv", str(self.venv)], check=True)
            subprocess.run([str(self.venv / "bin" / "pip"), "install", "-q", "pytest", "ruff", "mypy"], check=True)

    def fetch_sdist(self, spec: str) -> Path:
        """pip download the sdist of spec (name==version) and unpack it under work/src."""
        dl = self.work / "sdists"
        dl.mkdir(exist_ok=True)
        name, ver = spec.split("==")
        norm = re.sub(r"[-_.]+", "[-_.]", name)
        have = [p for p in dl.iterdir() if re.match(rf"(?i){norm}-{re.escape(ver)}\.tar\.gz$", p.name)]
        if not have:
            subprocess.run([str(self.venv / "bin" / "pip"), "download", "-q", "--no-binary", ":all:", "--no-deps",
                            "-d", str(dl), spec], check=True, env=self.env())
            have = [p for p in dl.iterdir() if re.match(rf"(?i){norm}-{re.escape(ver)}\.tar\.gz$", p.name)]
        dest = self.work / "src"
        dest.mkdir(exist_ok=True)
        subprocess.run(["tar", "xzf", str(have[0]), "-C", str(dest)], check=True)
        return dest / have[0].name[: -len(".tar.gz")]

    def git_project(self, pkg: dict) -> Path:
        """A git repo whose commits are the successive sdist versions of the package (real diffs)."""
        proj = self.work / "proj" / pkg["name"]
        if proj.exists():
            shutil.rmtree(proj)
        proj.mkdir(parents=True)
        g = {"GIT_AUTHOR_NAME": "corpus", "GIT_AUTHOR_EMAIL": "corpus@example.invalid",
             "GIT_COMMITTER_NAME": "corpus", "GIT_COMMITTER_EMAIL": "corpus@example.invalid"}
        self.sh("git init -q -b main .", proj)
        for ver in pkg["history"] + [pkg["version"]]:
            src = self.fetch_sdist(f"{pkg['pypi']}=={ver}")
            for p in proj.iterdir():
                if p.name != ".git":
                    shutil.rmtree(p) if p.is_dir() else p.unlink()
            for p in src.iterdir():
                shutil.move(str(p), proj / p.name)
            self.sh(f"git add -A && git commit -q -m 'Release {ver}' && git tag v{ver}", proj, g)
        return proj

    def node_tools(self) -> None:
        tools = self.work / "node-tools"
        if not (tools / "node_modules" / ".bin" / "eslint").exists():
            tools.mkdir(exist_ok=True)
            (tools / "package.json").write_text('{"name": "corpus-tools", "private": true}\n')
            subprocess.run(["npm", "install", "-q", "eslint@9", "@eslint/js@9"], cwd=tools, check=True,
                           env=self.env())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", choices=["dev", "holdout", "fresh", "all"], default="all")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "capsule-corpus")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    ap.add_argument("--only", help="make only the cases whose id starts with one of these (comma-separated)")
    ap.add_argument("--pkg", help="only this Python package (and no npm/git/docker cases)")
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: py,npm,json,install,git,docker,logs,cargo")
    args = ap.parse_args()
    import recipes

    skip = set(filter(None, args.skip.split(","))) | ({"npm", "json", "install", "git", "docker", "logs", "cargo"} if args.pkg else set())
    for name in (list(SETS) if args.set == "all" else [args.set]):
        m = Maker(args.work.resolve(), args.out.resolve(), name, args.only)
        m.setup()
        spec = SETS[name]
        if "py" not in skip:
            for pkg in spec["py"]:
                if args.pkg and pkg["name"] != args.pkg:
                    continue
                print(f"[{name}] {pkg['name']}", file=sys.stderr)
                recipes.python_package(m, pkg)
        if "npm" not in skip:
            print(f"[{name}] npm", file=sys.stderr)
            m.node_tools()
            recipes.npm_project(m, spec["npm"])
        if "json" not in skip:
            recipes.big_json(m, spec["npm"])
        if "install" not in skip:
            recipes.installs(m, spec["npm"])
        if "git" not in skip and spec["own_history"]:
            recipes.own_history(m, Path(__file__).resolve().parents[2])
        if "docker" not in skip:
            recipes.docker_cases(m, spec["npm"])
            recipes.docker_build(m, spec["npm"])
        if "logs" not in skip:
            recipes.access_log(m, spec["npm"])
        if "cargo" not in skip:
            recipes.cargo_crate(m, spec["npm"])
        print(f"[{name}] {len(m.made)} cases written to {m.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
