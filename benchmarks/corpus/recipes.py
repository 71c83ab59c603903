"""The commands run on each project: what an agent runs and reads, and how each case is labelled.

Not responsible for running or writing cases (make_corpus.Maker) nor for which projects (projects.py).
Invariant: a failing run is made by a real edit to the project (an assertion flipped, visible
in `git diff`), never by editing an output.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import labels as L

PYT = "python -m pytest -p no:cacheprovider"


def _pytest_label(out, code, ctx):
    return L.pytest(out, ctx.get("junit"), code)


def _flip(path: Path, count: int) -> int:
    """Turn the first `count` `assert a == b` (or `self.assertEqual(`) lines into their negation."""
    lines = path.read_text().split("\n")
    done = 0
    for i, line in enumerate(lines):
        if done < count and re.match(r"^\s+assert [^=!<>]+ == [^=]+$", line):
            lines[i] = line.replace(" == ", " != ", 1)
            done += 1
        elif done < count and re.match(r"^\s+self\.assertEqual\(", line):
            lines[i] = line.replace("self.assertEqual(", "self.assertNotEqual(", 1)
            done += 1
    path.write_text("\n".join(lines))
    return done


def python_package(m, pkg: dict) -> None:
    n, src, tests, env = pkg["name"].replace("-", "_"), pkg["src"], pkg["tests"], pkg["env"]
    source = f"pypi:{pkg['pypi']}=={pkg['version']}"
    proj = m.git_project(pkg)
    if pkg.get("deps"):
        m.sh("pip install -q " + " ".join(pkg["deps"]), proj)
    c = lambda cid, cmd, fam, intent, label, tool, **kw: m.case(cid, cmd, proj, fam, intent, label, tool, source,
                                                                 extra_env=env, **kw)  # noqa: E731

    # test runs: as shipped, then with real failing assertions
    c(f"pytest_q_{n}", f"{PYT} -q {tests}", "pytest", "Run the test suite before changing anything.",
      _pytest_label, "pytest", junit=True)
    c(f"pytest_v_{n}", f"{PYT} -v {pkg['test_files'][0]}", "pytest", "See which tests exist for this module.",
      _pytest_label, "pytest", junit=True)
    tests = pkg.get("tests_ok", tests)      # grep/rg below search pkg["tests"], the folder
    for f in pkg["test_files"][:3]:
        _flip(proj / f, 1)
    c(f"pytest_q_fail_{n}", f"{PYT} -q {tests}", "pytest", "Find which tests my change broke.",
      _pytest_label, "pytest", junit=True)
    c(f"pytest_x_{n}", f"{PYT} -x {tests}", "pytest", "Stop at the first failing test and fix it.",
      _pytest_label, "pytest", junit=True)
    c(f"pytest_tbshort_{n}", f"{PYT} --tb=short {tests}", "pytest", "Fix the failing tests.",
      _pytest_label, "pytest", junit=True)
    c(f"pytest_tbline_{n}", f"{PYT} -q --tb=line {tests}", "pytest", "List the failing assertions.",
      _pytest_label, "pytest", junit=True)
    c(f"pytest_rA_{n}", f"{PYT} -rA {pkg['test_files'][0]}", "pytest", "Check every test result of this file.",
      _pytest_label, "pytest", junit=True)
    c(f"git_status_{n}", "git status", "git", "See what I changed.",
      lambda o, e, x: L.regex(o, r"^(On branch|\s+modified:|\s+deleted:|\s+new file:|Untracked)"), "git")
    c(f"git_diff_{n}", "git diff", "git", "Review my edits before committing.", lambda o, e, x: L.git_diff(o), "git")
    if pkg.get("unittest"):
        c(f"unittest_{n}", pkg["unittest"], "unittest", "Run the unittest suite after my change.",
          lambda o, e, x: L.unittest(o), "python")
    _flip(proj / pkg["test_files"][0], 40)
    c(f"pytest_many_{n}", f"{PYT} -q {pkg['test_files'][0]}", "pytest", "Why did so many tests fail?",
      _pytest_label, "pytest", junit=True)
    m.sh("git checkout -q -- .", proj)

    # linters and type checkers; labels from ruff's own JSON
    for cid, opts, intent in [(f"ruff_check_{n}", "", "Lint the package."),
                              (f"ruff_full_{n}", "--select E,W,B,SIM,RET", "Fix the lint findings."),
                              (f"ruff_concise_{n}", "--select E,F,W,B,UP,SIM,RET,PL --output-format concise",
                               "List the lint findings."),
                              (f"ruff_all_{n}", "--select ALL --output-format concise", "Try every ruff rule.")]:
        json_opts = opts.replace("--output-format concise", "")       # stderr (rule warnings) is not JSON
        js, _ = m.sh(f"ruff check --no-cache {json_opts} --output-format json {src} 2>/dev/null", proj, env)
        diags = L.parse_json(js.decode("utf-8", "replace"))
        c(cid, f"ruff check --no-cache {opts} {src}".replace("  ", " "), "ruff", intent,
          lambda o, e, x, d=diags: L.ruff(o, d, str(proj)), "ruff")
    c(f"ruff_stats_{n}", f"ruff check --no-cache --select ALL --statistics {src}", "ruff",
      "Which rules fire most?", lambda o, e, x: L.ruff_statistics(o), "ruff")
    c(f"mypy_{n}", f"mypy {src}", "mypy", "Type-check the package.", lambda o, e, x: L.mypy(o), "mypy")
    c(f"mypy_strict_{n}", f"mypy --strict {src}", "mypy", "Fix the strict typing errors.",
      lambda o, e, x: L.mypy(o), "mypy")

    # real history from successive releases
    old, prev = pkg["history"][0], pkg["history"][-1]
    first_commit = lambda o, e, x: L.first_match(o, r"^(commit [0-9a-f]{40}|\* [0-9a-f]{7}|[0-9a-f]{7,} )")  # noqa
    c(f"git_log_{n}", "git log", "git", "When was the last release?", first_commit, "git")
    c(f"git_log_stat_{n}", "git log --stat", "git", "Which files changed in recent releases?", first_commit, "git")
    c(f"git_diff_stat_{n}", f"git diff --stat v{old} v{pkg['version']}", "git", "How big is the upgrade?",
      lambda o, e, x: L.regex(o, r"^ \d+ files? changed"), "git")
    c(f"git_diff_range_{n}", f"git diff v{prev} v{pkg['version']} -- {src}", "git",
      "What changed in the code since the previous release?", lambda o, e, x: L.git_diff(o), "git")
    c(f"git_show_{n}", "git show --stat HEAD", "git", "What did the last commit touch?",
      lambda o, e, x: L.regex(o, r"^(commit [0-9a-f]{40}|\s+Release | \d+ files? changed)"), "git")
    c(f"git_blame_{n}", f"git blame {pkg['small']}", "git", "Who last changed this file?", None, "git")

    # agent-style reads: bounded views keep every line; a whole big file keeps its structure
    agent_reads(m, proj, pkg, source, env)

    # searches and listings
    sym = pkg["symbol"]
    defn = lambda o, e, x: L.regex(o, rf"(def|class) {re.escape(sym)}\b")  # noqa: E731
    c(f"grep_def_{n}", f"grep -rn '{sym}' {src} {pkg['tests']}", "grep", f"Find where {sym} is defined.", defn, "grep")
    c(f"rg_def_{n}", f"rg -n '{sym}'", "rg", f"Find where {sym} is defined and used.", defn, "rg")
    # a broad search the filter must cut: the intent names the one line that matters
    c(f"grep_defs_{n}", f"grep -rn 'def ' {src}", "grep", f"Find where {sym} is defined.", defn, "grep")
    c(f"rg_stats_{n}", f"rg -n --stats 'import' {src}", "rg", "How many imports are there?",
      lambda o, e, x: L.regex(o, r"^\d+ (matches|files contained matches)$"), "rg")
    c(f"ls_la_{n}", "ls -la", "ls", "Look at the project layout.", None, "coreutils")
    c(f"ls_la_src_{n}", f"ls -la {src}", "ls", "Which modules are there?", None, "coreutils")
    c(f"find_py_{n}", "find . -name '*.py' -not -path './.git/*'", "find", "List every Python file.", None,
      "findutils")
    c(f"tree_{n}", "tree -I .git", "tree", "Get an overview of the project.",
      lambda o, e, x: L.regex(o, r"^\d+ director(y|ies), \d+ files?$"), "tree")
    c(f"find_wc_{n}", f"find {src} -name '*.py' | xargs wc -l", "find", "How big are the modules?",
      lambda o, e, x: L.regex(o, r"^\s*\d+ total$"), "findutils")

    merge_conflict(m, proj, pkg, source, env)
    for cid, code, intent in pkg["crash"]:
        c(f"traceback_{n}_{cid}", f"python -c {shlex.quote(code)}", "python_traceback", intent,
          lambda o, e, x: L.python_traceback(o), "python")

    # packaging
    wheels = m.work / f"wheels-{m.set_name}"
    c(f"pip_wheel_{n}", f"pip wheel --no-deps -w {wheels} .", "pip", "Build a wheel of the package.",
      lambda o, e, x: L.regex(o, r"^(Successfully built|ERROR:|error:)"), "pip")
    c(f"pip_no_version_{n}", f"pip install '{pkg['pypi']}==0.0.0.1'", "pip", "Pin the old version.",
      lambda o, e, x: L.regex(o, r"^ERROR:"), "pip")


def merge_conflict(m, proj: Path, pkg: dict, source: str, env: dict) -> None:
    """Two branches edit the first line of the same file differently: a real merge conflict, then undone."""
    n, big = pkg["name"].replace("-", "_"), pkg["big"]
    ident = "-c user.name=corpus -c user.email=corpus@example.invalid"

    def edit(tag: str) -> None:
        lines = (proj / big).read_text().split("\n")
        lines[0] = f"# {tag}: " + lines[0]
        (proj / big).write_text("\n".join(lines))
    m.sh("git checkout -q -b feature", proj)
    edit("feature branch")
    m.sh(f"git {ident} commit -q -am 'feature: note on {big}'", proj)
    m.sh("git checkout -q main", proj)
    edit("hotfix on main")
    m.sh(f"git {ident} commit -q -am 'hotfix: note on {big}'", proj)
    c = lambda cid, cmd, intent, label: m.case(cid, cmd, proj, "git", intent, label, "git", source,  # noqa: E731
                                               extra_env=env)
    c(f"git_merge_conflict_{n}", "git merge feature", "Merge the feature branch.",
      lambda o, e, x: L.regex(o, r"^(CONFLICT|Automatic merge failed)"))
    c(f"git_status_merge_{n}", "git status", "What is left to resolve in the merge?",
      lambda o, e, x: L.regex(o, r"^(You have unmerged paths|\s+both modified:)"))
    c(f"git_diff_conflict_{n}", "git diff", "See the conflicting hunks.",
      lambda o, e, x: L.regex(o, r"^(diff --cc |\+\+<<<<<<< |\+\+=======$|\+\+>>>>>>> |[ +-][ +-]# (hotfix on main|feature branch): )"))
    m.sh(f"git merge --abort; git reset -q --hard v{pkg['version']}; git branch -q -D feature", proj)


def big_json(m, spec: dict) -> None:
    """Big JSON documents an agent asks for: package metadata with long version lists and time maps."""
    scratch = m.work / "json-scratch"
    scratch.mkdir(exist_ok=True)
    name = spec["view_big"]
    m.case(f"json_npm_view_big_{m.set_name}", f"npm view {name} --json", scratch, "json",
           f"Which versions of {name} exist and which is latest?",
           lambda o, e, x: L.regex(o, r'^(  "version": |    "latest": )'), "npm", f"npm:{name}")
    m.case(f"json_pip_inspect_{m.set_name}", "pip inspect", scratch, "json", "Which pytest and mypy are installed?",
           lambda o, e, x: L.regex(o, r'^\s+"name": "(pytest|mypy)"'), "pip", "tools:pytest,ruff,mypy venv")
    m.case(f"json_pip_list_{m.set_name}", "pip list --format json", scratch, "json", "List installed packages.",
           None, "pip", "tools:pytest,ruff,mypy venv")


def installs(m, spec: dict) -> None:
    """Install logs: pip into a fresh target (plain and -v), npm with --loglevel=silly (a long log)."""
    scratch = m.work / "install-scratch"
    m.sh(f"rm -rf {scratch} && mkdir -p {scratch}", m.work)
    done = lambda o, e, x: L.regex(o, r"^(Successfully installed|ERROR:|added \d+ packages?|npm error)")  # noqa: E731
    pip_pkg, npm_pkg = spec["pip_install"], spec["npm_silly"]
    m.case(f"pip_install_{m.set_name}", f"pip install --no-cache-dir --target {scratch}/t1 {pip_pkg}", scratch, "pip",
           f"Install {pip_pkg}.", done, "pip", f"pypi:{pip_pkg}")
    m.case(f"pip_install_verbose_{m.set_name}", f"pip install -v --no-cache-dir --target {scratch}/t2 {pip_pkg}",
           scratch, "pip", f"Why is installing {pip_pkg} slow?", done, "pip", f"pypi:{pip_pkg}")
    (scratch / "package.json").write_text('{"name": "silly", "version": "1.0.0", "private": true}\n')
    m.case(f"npm_install_silly_{m.set_name}", f"npm install --loglevel=silly {npm_pkg}", scratch, "long_log",
           f"Debug the install of {npm_pkg}.", done, "npm", f"npm:{npm_pkg}")


ACCESS_CLIENT = r"""
import random, sys, urllib.request, urllib.error
port, paths, bad = int(sys.argv[1]), sys.argv[2].split(","), sys.argv[3].split(",")
rng = random.Random(7)
for i in range(int(sys.argv[4])):
    path = bad[(i // 97) % len(bad)] if i % 97 == 50 else rng.choice(paths)
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/{path}").read()
    except urllib.error.HTTPError:
        pass
"""


def access_log(m, spec: dict) -> None:
    """A real http.server serving the project, hit by a request mix with a few missing paths: its access log."""
    import subprocess
    root = m.work / "proj" / spec["serve"]
    if not root.is_dir():
        return
    logs = m.work / f"logs-{m.set_name}"
    logs.mkdir(exist_ok=True)
    log = logs / "access.log"
    with open(log, "wb") as fh:
        srv = subprocess.Popen(["python3", "-u", "-m", "http.server", "0", "--bind", "127.0.0.1"], cwd=root,
                               stdout=subprocess.PIPE, stderr=fh, env=m.env())
        port = int(srv.stdout.readline().split(b" port ")[1].split()[0])
        files = [str(p.relative_to(root)) for p in sorted(root.rglob("*")) if p.is_file() and ".git" not in p.parts]
        m.sh(f"python3 -c '{ACCESS_CLIENT}' {port} {','.join(files[:60])} {','.join(spec['missing'])} 400", root)
        srv.terminate()
        srv.wait(10)
    m.case(f"log_access_{m.set_name}", f"cat {log.name}", logs, "long_log", "Did any request fail?",
           lambda o, e, x: L.regex(o, r'" [45]\d\d '), "coreutils", f"http.server:{spec['serve']}")
    m.case(f"log_access_tail_{m.set_name}", f"grep -v ' 200 ' {log.name}", logs, "grep", "Show the failed requests.",
           lambda o, e, x: L.regex(o, r'" [45]\d\d '), "grep", f"http.server:{spec['serve']}")


def docker_build(m, spec: dict) -> None:
    """docker build of a small image on the local base: one build that fails in a RUN step, one that works."""
    _, code = m.sh("docker info --format '{{.ServerVersion}}'", m.work)
    have, _ = m.sh("docker images --format '{{.Repository}}:{{.Tag}}'", m.work)
    base = next((i for i in have.decode().split() if i.startswith("capsule-base")), None)
    if code != 0 or not base:
        return
    ctx = m.work / f"docker-{m.set_name}"
    m.sh(f"rm -rf {ctx} && mkdir -p {ctx}", m.work)
    (ctx / "settings.json").write_text(spec["docker_config"])
    (ctx / "app.py").write_text("import json\nprint(json.load(open('settings.json')))\n")
    (ctx / "Dockerfile").write_text(f"FROM {base}\nWORKDIR /app\nCOPY . /app\nRUN python3 -m compileall -q .\n"
                                    "RUN python3 app.py\nCMD [\"python3\", \"app.py\"]\n")
    tag = f"corpus10-{m.set_name}:ci"
    fail = lambda o, e, x: L.regex(o, r"^Step \d+/\d+ : RUN python3 app.py|The command .* returned a non-zero code|"  # noqa
                                    r"[\w.]*Error: ")
    m.case(f"docker_build_fails_{m.set_name}", f"docker build -t {tag} .", ctx, "docker",
           "Build the image.", fail, "docker", f"docker:{base}")
    (ctx / "settings.json").write_text('{"ok": true}\n')
    m.case(f"docker_build_ok_{m.set_name}", f"docker build --no-cache -t {tag} .", ctx, "docker", "Rebuild the image.",
           lambda o, e, x: L.regex(o, r"^Successfully (built|tagged) "), "docker", f"docker:{base}")
    m.case(f"docker_run_{m.set_name}", f"docker run --rm {tag}", ctx, "docker", "Run the app in its image.",
           None, "docker", f"docker:{base}")
    m.sh(f"docker rmi -f {tag} >/dev/null 2>&1; docker image prune -f >/dev/null 2>&1", ctx)


CARGO_SOURCE = '[source.crates-io]\nreplace-with = "debian"\n[source.debian]\ndirectory = "/usr/share/cargo/registry"\n'
REGRESSION_TEST = """#[test]
fn last_of_three_parts() {
    let parts: Vec<u64> = vec![1, 2, 3];
    let idx = parts.len();
    assert_eq!(parts[idx], 3);
}
"""


def cargo_crate(m, spec: dict) -> None:
    """A crate's source from Debian's librust-*-dev (crates.io is not reachable), built and tested offline."""
    crate = spec["crate"]
    src = next(iter(sorted(Path("/usr/share/cargo/registry").glob(f"{crate}-*"))), None)
    if src is None:
        print(f"  no Debian source for crate {crate} (apt-get install librust-{crate}-dev)", file=__import__("sys").stderr)
        return
    proj = m.work / "crates" / crate
    m.sh(f"rm -rf {proj} && mkdir -p {proj.parent} && cp -r {src} {proj} && mkdir -p {proj}/.cargo", m.work)
    (proj / ".cargo" / "config.toml").write_text(CARGO_SOURCE)
    m.sh("git init -q -b main . && git add -A && git commit -q -m 'Imported from Debian'", proj)
    source = f"debian:librust-{crate}-dev ({src.name})"
    c = lambda cid, cmd, intent: m.case(cid, cmd, proj, "cargo", intent, lambda o, e, x: L.cargo(o), "cargo",  # noqa
                                         source)
    n = crate.replace("-", "_")
    c(f"cargo_build_{n}", "cargo build --offline", "Build the crate.")
    c(f"cargo_test_{n}", "cargo test --offline", "Run the tests before changing anything.")
    test = sorted((proj / "tests").glob("*.rs"))[-1]
    text = test.read_text()
    # flip the first equality assertion (a crate whose tests have none: negate its first assert!)
    flipped = (text.replace("assert_eq!(", "assert_ne!(", 1) if "assert_eq!(" in text
               else text.replace("assert!(", "assert!(!", 1))
    test.write_text(flipped)
    (proj / "tests" / "regression.rs").write_text(REGRESSION_TEST)
    c(f"cargo_test_fail_{n}", "cargo test --offline", "Find which tests my change broke.")
    c(f"cargo_test_one_{n}", "cargo test --offline --test regression", "Why does the regression test panic?")
    m.sh("git checkout -q -- . && rm -f tests/regression.rs", proj)
    c(f"cargo_clippy_{n}", "cargo clippy --offline", "Fix the lints.")
    lib = proj / "src" / "lib.rs"
    lib.write_text(lib.read_text() + "\nfn scratch(n: u64) -> u32 {\n    let unused = n * 2;\n    n + 1\n}\n")
    c(f"cargo_build_error_{n}", "cargo build --offline", "Fix the compile error.")
    m.sh("git checkout -q -- .", proj)


def agent_reads(m, proj: Path, pkg: dict, source: str, env: dict) -> None:
    n, big, small, sym = pkg["name"].replace("-", "_"), pkg["big"], pkg["small"], pkg["symbol"]
    text = (proj / big).read_text().split("\n")
    at = next((i + 1 for i, l in enumerate(text) if re.search(r"\b(def|class) \w", l) and i > len(text) // 3), 50)
    a, b = max(1, at - 5), at + 60
    every = lambda o, e, x: L.every_line(o)  # noqa: E731
    reads = [
        (f"read_sed_{n}", f"sed -n '{a},{b}p' {big}", f"Read lines {a}-{b} of {big} before editing them."),
        (f"read_nl_{n}", f"nl -ba {big} | sed -n '{a + 30},{b + 90}p'", f"Read {big} around line {a + 60}."),
        (f"read_head_{n}", f"head -n 80 {big}", f"Read the top of {big}: imports and first definitions."),
        (f"read_tail_{n}", f"tail -n 50 {big}", f"Read the end of {big}."),
        (f"read_cat_small_{n}", f"cat {small}", f"Read {small} in full."),
        (f"read_awk_{n}", f"awk 'NR>={b} && NR<={b + 40}' {big}", f"Read lines {b}-{b + 40} of {big}."),
        (f"read_headtail_{n}", f"head -n {b + 80} {big} | tail -n 35", f"Read the lines just above {b + 80}."),
    ]
    tools = {"sed": "sed", "awk": "awk"}          # head/tail/nl/cat are coreutils
    for cid, cmd, intent in reads:
        m.case(cid, cmd, proj, "read", intent, every, tools.get(cmd.split()[0], "coreutils"), source, extra_env=env,
               notes="agent-style bounded read: every line must survive")
    m.case(f"read_cat_big_{n}", f"cat {big}", proj, "read_cat", f"Read {big} to find {sym}.",
           lambda o, e, x: L.source_structure(o), "coreutils", source, extra_env=env,
           notes="whole-file cat of a big source file: its def/class lines must survive")


def npm_project(m, spec: dict) -> None:
    """npm install / ls / view / pack, eslint on the packed package, real node crashes."""
    root = m.work / f"npm-{m.set_name}"
    root.mkdir(exist_ok=True)
    (root / "package.json").write_text(json.dumps({"name": f"scratch-{m.set_name}", "version": "1.0.0",
                                                   "private": True}) + "\n")
    source = "npm:" + ",".join(spec["install"])
    c = lambda cid, cmd, cwd, fam, intent, label, tool: m.case(cid, cmd, cwd, fam, intent, label, tool, source)  # noqa
    m.sh("rm -rf node_modules package-lock.json", root)
    added = lambda o, e, x: L.regex(o, r"^(added \d+ packages?|up to date|npm error)")  # noqa: E731
    c(f"npm_install_{m.set_name}", "npm install " + " ".join(spec["install"]), root, "npm_install",
      "Add the dependencies.", added, "npm")
    c(f"npm_install_verbose_{m.set_name}", "rm -rf node_modules && npm install --loglevel=http", root,
      "npm_install", "Reinstall from the lock file and watch what is fetched.", added, "npm")
    c(f"npm_ls_all_{m.set_name}", "npm ls --all", root, "npm_install", "Which versions got installed?",
      lambda o, e, x: L.regex(o, r"^(├|└)── "), "npm")
    c(f"npm_install_etarget_{m.set_name}", f"npm install {spec['install'][0].split('@')[0]}@99.99.99", root,
      "npm_install", "Upgrade to the new major.", lambda o, e, x: L.regex(o, r"^npm error (code|notarget)"), "npm")
    c(f"json_npm_view_{m.set_name}", f"npm view {spec['view']} --json", root, "json",
      f"Which versions of {spec['view']} exist and what is latest?",
      lambda o, e, x: L.regex(o, r'^(  "version": |    "latest": )'), "npm")
    c(f"json_npm_ls_{m.set_name}", "npm ls --json --depth=1", root, "json", "Check installed versions.",
      lambda o, e, x: L.regex(o, r'^  "name": '), "npm")
    c(f"tree_node_modules_{m.set_name}", "tree -L 1 node_modules", root, "tree", "What got installed?",
      lambda o, e, x: L.regex(o, r"^\d+ director(y|ies)(, \d+ files?)?$"), "tree")
    c(f"ls_la_node_modules_{m.set_name}", "ls -la node_modules", root, "ls", "What got installed?", None,
      "coreutils")
    c(f"find_pkgjson_{m.set_name}", "find node_modules -maxdepth 2 -name package.json", root, "find",
      "Find every package manifest.", None, "findutils")

    pack_dir = m.work / f"pack-{m.set_name}"
    m.sh(f"rm -rf {pack_dir} && mkdir -p {pack_dir}", m.work)
    c(f"npm_pack_{m.set_name}", f"npm pack {spec['pack']} --pack-destination {pack_dir}", root, "npm_install",
      "Fetch the package tarball to read its source.",
      lambda o, e, x: L.regex(o, r"^(npm notice (name|version|total files):|\S+\.tgz$)"), "npm")
    m.sh(f"tar xzf {pack_dir}/*.tgz -C {pack_dir}", m.work)
    proj = pack_dir / "package"
    m.sh(f"ln -sfn {root}/node_modules {proj}/node_modules && git init -q -b main . && git add -A && "
         "git -c user.name=corpus -c user.email=corpus@example.invalid commit -q -m 'Imported from npm'", proj)
    kind = "module" if json.loads((proj / "package.json").read_text()).get("type") == "module" else "commonjs"
    globals_ = {g: "readonly" for g in ("require", "process", "Buffer", "__dirname", "console", "setImmediate")}
    config = [{"languageOptions": {"sourceType": kind, "globals": dict(globals_, module="writable", exports="writable")},
               "rules": {"no-var": "error", "prefer-const": "warn", "eqeqeq": "error", "no-unused-vars": "warn",
                         "prefer-arrow-callback": "warn"}}]
    eslint_js = m.work / "node-tools" / "node_modules" / "@eslint" / "js"     # installed beside eslint
    (proj / "eslint.config.cjs").write_text(f"const js = require({json.dumps(str(eslint_js))});\n"
                                            f"module.exports = [js.configs.recommended, ...{json.dumps(config)}];\n")
    js, _ = m.sh(f"eslint -f json {spec['lint_dir']}", proj)
    results = L.parse_json(js.decode("utf-8", "replace"))
    c(f"eslint_{m.set_name}", f"eslint {spec['lint_dir']}", proj, "eslint", "Lint the library code.",
      lambda o, e, x: L.eslint(o, results), "eslint")
    sym, big = spec["symbol"], spec["big"]
    if not (proj / big).is_file():         # a release moved its files: read the biggest one instead
        big = str(max((proj / spec["lint_dir"]).rglob("*.js"), key=lambda p: p.stat().st_size).relative_to(proj))
    c(f"grep_js_{m.set_name}", f"grep -rn '{sym}' {spec['lint_dir']}", proj, "grep", f"Find where {sym} is defined.",
      lambda o, e, x: L.regex(o, rf"(function {sym}\b|\.{sym} = |{sym}\s*\(.*\)\s*\{{)"), "grep")
    every = lambda o, e, x: L.every_line(o)  # noqa: E731
    lines = (proj / big).read_text().count("\n")
    a = lines // 2
    for cid, cmd, intent in [(f"read_sed_js_{m.set_name}", f"sed -n '{a},{a + 45}p' {big}", f"Read {big} lines."),
                             (f"read_head_js_{m.set_name}", f"head -n 60 {big}", f"Read the top of {big}."),
                             (f"read_nl_js_{m.set_name}", f"nl -ba {big} | sed -n '{a - 40},{a}p'", f"Read {big}.")]:
        m.case(cid, cmd, proj, "read", intent, every, "sed", source, notes="agent-style bounded read")
    for cid, code, intent in spec["crash"]:
        c(f"node_{m.set_name}_{cid}", f"node -e {shlex.quote(code)}", proj, "node_trace", intent,
          lambda o, e, x: L.node_trace(o), "node")


def own_history(m, repo: Path) -> None:
    """This repository's own git history: a real, busy log."""
    clone = m.work / "own-repo"
    m.sh(f"rm -rf {clone} && git clone -q {repo} {clone}", m.work)
    first = lambda o, e, x: L.first_match(o, r"^(commit [0-9a-f]{40}|[0-9a-f]{7,} )")  # noqa: E731
    for cid, cmd, intent in [("git_log_oneline_own", "git log --oneline -n 300", "What landed recently?"),
                             ("git_log_stat_own", "git log --stat -n 25", "Which files changed lately?"),
                             ("git_log_p_own", "git log -p -n 6 -- benchmarks", "How did the benchmarks change?")]:
        m.case(cid, cmd, clone, "git", intent, first, "git", "git:capsule")


def docker_cases(m, spec: dict) -> None:
    out, code = m.sh("docker info --format '{{.ServerVersion}}'", m.work)
    if code != 0:
        print("  docker engine not up: no docker cases", file=__import__("sys").stderr)
        return
    have, _ = m.sh("docker images --format '{{.Repository}}:{{.Tag}}'", m.work)
    images = have.decode().split()
    base = next((i for i in images if i.startswith("capsule-base")), images[0] if images else None)
    if not base:
        return
    s = m.set_name
    m.case(f"docker_history_{s}", f"docker history {base}", m.work, "docker", "How was the base image built?",
           None, "docker", f"docker:{base}")
    m.case(f"json_docker_inspect_{s}", f"docker image inspect {base}", m.work, "json", "Which user and entrypoint?",
           lambda o, e, x: L.regex(o, r'^\s+"(User|Entrypoint|WorkingDir)": '), "docker", f"docker:{base}")
    crash = spec["docker_crash"]
    m.case(f"docker_run_traceback_{s}", f"docker run --rm {base} python3 -c {shlex.quote(crash)}", m.work, "docker",
           "Run the check inside the container.", lambda o, e, x: L.python_traceback(o), "docker", f"docker:{base}")
