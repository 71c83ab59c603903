"""Shim installation: write the one thin shim program and a name for each tool it covers.

Not responsible for what the shims do at run time (shim_template/: capsule_shim.c decides,
capsule_capture.c captures, capsule_shim.py the import-free fallback) nor for the engine behind the
socket (supervisor/control_server.py). Invariant: installing twice gives the same files; no shim imports capsule.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from capsule.ground import paths
from capsule.agents import clients, limits
from capsule.ground import switches

PROGRAM = "capsule-shim"
TEMPLATE = Path(__file__).with_name("shim_template") / "capsule_shim.py"
C_TEMPLATE = TEMPLATE.with_name("capsule_shim.c")
SHIM_PROTOCOL = TEMPLATE.with_name("shim_protocol.py")   # its text goes where the shim says @PROTOCOL@
PY_PROGRAM = PROGRAM + ".py"        # beside a compiled capsule-shim: the Python shim it hands the agent's view to
PY_DIR = ".py"                      # DIR/.py/<tool> -> ../capsule-shim.py (the tool's name reaches it as argv[0])
ENV_TEMPLATE = TEMPLATE.with_name("agent_env.sh")
ENV_FILE = "capsule-env.sh"        # in the shim dir: CLAUDE_ENV_FILE / BASH_ENV for the agent's shells
TOOLS_FILE = Path(__file__).with_name("tools.txt")
NESTED = switches.IN_SHIM
TIMEOUT_S = 2.0                     # engine round trip; slower than this (+ PER_MIB_S per MiB sent): raw output
PER_MIB_S = 1.0                     # a large output's bytes take their time through the engine
MAX_BYTES = 32 << 20                # larger outputs pass raw (the engine has a streaming path instead)
STREAM_AFTER_S = switches.STREAM_AFTER_S  # a call still running then streams raw; $JACKIN_CTX_STREAM_AFTER overrides
MARKER = "# capsule-shim:"          # how doctor recognises a capsule shim
# The real command gets the caller's argv[0] ("sed", not "/usr/bin/sed": `sed --version`, error
# messages), except these, which look argv[0] up on PATH to find their own installation and would
# find the shim there (CPython: a venv's python3 would lose its venv); they get the real path.
ARGV0_PATH = ("python", "python3")
REPLY_SLACK = 64 << 10              # a reply's body is at most 2 x the request's stdout+stderr + this


def tool_table() -> dict[str, tuple[str, ...]]:
    """tools.txt as {name: raw-argument tokens}; see the file's header for the syntax."""
    table: dict[str, tuple[str, ...]] = {}
    for n, line in enumerate(TOOLS_FILE.read_text(encoding="utf-8").splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, _, rest = line.partition(" ")
        rest = rest.strip()
        if rest and not rest.startswith("raw:"):
            raise ValueError(f"{TOOLS_FILE} line {n}: expected NAME or NAME raw: TOKENS, got {line!r}")
        table[name] = tuple(rest[4:].split()) if rest else ()
    return table


def tools() -> list[str]:
    return list(tool_table())


def shim_python() -> str:
    """The interpreter the shim runs under: the system python3 (fast, no venv), else ours."""
    for cand in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(cand, os.X_OK):
            return cand
    return getattr(sys, "_base_executable", None) or sys.executable


def render(shim_dir: Path, python: str | None = None, socket: str | None = None, timeout_s: float = TIMEOUT_S,
           per_mib_s: float = PER_MIB_S) -> str:
    """The Python shim; timeout_s and per_mib_s: its engine round trip's deadline (`ctx run`'s own
    engine, cli/own_engine.py, is cold: its first request pays the imports, the tokenizer's load)."""
    values = {
        "@PYTHON@": python or shim_python(),
        "@SHIM_DIR@": repr(str(shim_dir)),
        "@PROGRAM@": repr(PROGRAM),
        "@SOCKET@": repr(socket if socket is not None else str(paths.socket_path())),
        "@TIMEOUT_S@": repr(timeout_s),
        "@PER_MIB_S@": repr(per_mib_s),
        "@MAX_BYTES@": repr(MAX_BYTES),
        "@SW_DISABLE@": repr(switches.DISABLE),
        "@SW_NO_SHIMS@": repr(switches.NO_SHIMS),
        "@ENV_SOCKET@": repr(switches.SOCKET),
        "@ENV_SCOPE@": repr(switches.SCOPE),
        "@ENV_MARKER@": repr(switches.AGENT_MARKER),
        "@ENV_NESTED@": repr(NESTED),
        "@ENV_FORWARD@": repr(limits.env_names()),
        "@ENV_OUT@": repr(switches.AGENT_OUT),
        "@TOOL_MARKS@": repr({c.name: (c.tool_env, c.tool_value) for c in clients.all_clients().values()}),
        "@ENV_STREAM_AFTER@": repr(switches.STREAM_AFTER),
        "@STREAM_AFTER_S@": repr(STREAM_AFTER_S),
        "@RAW_ARGS@": repr({k: v for k, v in tool_table().items() if v}),
        "@ARGV0_PATH@": repr(ARGV0_PATH),
        "@REPLY_SLACK@": repr(REPLY_SLACK),
    }
    # One script from two files (each short enough to read): the protocol half first, so its own
    # placeholders are filled with the rest.
    return _fill(TEMPLATE, {"@PROTOCOL@": SHIM_PROTOCOL.read_text(encoding="utf-8"), **values})


def render_env(shim_dir: Path) -> str:
    text = ENV_TEMPLATE.read_text(encoding="utf-8")
    for key, value in (("@SHIM_DIR@", shlex.quote(str(shim_dir))), ("@ENV_OUT@", switches.AGENT_OUT),
                       ("@ENV_CHAIN@", switches.CHAIN_ENV)):
        text = text.replace(key, value)
    return text


CAPTURE = "capsule-capture"          # compiled: the agent's own view (capture, engine, emission)
CAPTURE_TEMPLATE = TEMPLATE.with_name("capsule_capture.c")
CAPTURE_PROTOCOL = TEMPLATE.with_name("capture_protocol.c")   # its text goes where the capture says @PROTOCOL@
# The shim first freestanding (no libc to load: each shimmed exec of a script costs ~nothing over the
# real command), else with libc; the capture statically linked, else dynamically. First that builds wins.
SHIM_FLAGS = (("-O2", "-static", "-nostdlib", "-ffreestanding", "-fno-stack-protector", "-fno-pie", "-no-pie",
               "-fno-asynchronous-unwind-tables", "-fno-tree-loop-distribute-patterns", "-DCAPSULE_FREESTANDING"),
              ("-O2", "-static"), ("-O2",))
CAPTURE_FLAGS = (("-O2", "-static"), ("-O2",))


def _c(value: str) -> str:
    return json.dumps(value)        # a JSON string of these (paths, names) is a C string literal


def _c_list(values) -> str:
    return "".join(_c(v) + ", " for v in values)


def render_c(shim_dir: Path, socket: str | None = None) -> str:
    raw = [item for name, tokens in tool_table().items() if tokens for item in (name, " ".join(tokens))]
    values = {
        "@GENERATED@": "Generated from capsule/shims/shim_template/capsule_shim.c; do not edit.",
        "@SHIM_DIR@": _c(str(shim_dir)), "@PROGRAM@": _c(PROGRAM),
        "@SOCKET@": _c(socket if socket is not None else str(paths.socket_path())),
        "@PY_DIR@": _c(str(shim_dir / PY_DIR)), "@CAPTURE@": _c(str(shim_dir / CAPTURE)),
        "@SW_DISABLE@": _c(switches.DISABLE), "@SW_NO_SHIMS@": _c(switches.NO_SHIMS),
        "@ENV_SOCKET@": _c(switches.SOCKET), "@ENV_MARKER@": _c(switches.AGENT_MARKER), "@ENV_NESTED@": _c(NESTED),
        "@ENV_OUT@": _c(switches.AGENT_OUT), "@RAW_ARGS@": _c_list(raw), "@ARGV0_PATH@": _c_list(ARGV0_PATH),
        "@TOOL_MARKS@": _c_list(v for c in clients.all_clients().values() for v in (c.name, c.tool_env, c.tool_value)),
    }
    return _fill(C_TEMPLATE, values)


def render_capture(socket: str | None = None) -> str:
    values = {
        "@GENERATED@": "Generated from capsule/shims/shim_template/capsule_capture.c; do not edit.",
        "@SOCKET@": _c(socket if socket is not None else str(paths.socket_path())),
        "@TIMEOUT_S@": repr(TIMEOUT_S), "@PER_MIB_S@": repr(PER_MIB_S), "@MAX_BYTES@": f"{MAX_BYTES}LL", "@STREAM_AFTER_S@": repr(float(STREAM_AFTER_S)),
        "@ENV_SOCKET@": _c(switches.SOCKET), "@ENV_SCOPE@": _c(switches.SCOPE), "@ENV_NESTED@": _c(NESTED),
        "@ENV_OUT@": _c(switches.AGENT_OUT), "@ENV_STREAM_AFTER@": _c(switches.STREAM_AFTER),
        "@ENV_FORWARD@": _c_list(limits.env_names()), "@ALNUM@": _alnum_c(),
        "@ARGV0_PATH@": _c_list(ARGV0_PATH), "@REPLY_SLACK@": f"{REPLY_SLACK}u",
    }
    # One translation unit from two files (each short enough to read): the protocol half first, so
    # its own placeholders are filled with the rest.
    values = {"@PROTOCOL@": CAPTURE_PROTOCOL.read_text(encoding="utf-8"), **values}
    return _fill(CAPTURE_TEMPLATE, values)


ALNUM_FILE = TEMPLATE.with_name("alnum.ranges")


def alnum_ranges() -> list[tuple[int, int]]:
    """Code points above ASCII where this Python's str.isalnum() holds, as (lo, hi) runs (~730):
    the compiled capture quotes a command line exactly as the Python shim does. `\\w` is
    isalnum() or "_" (re's definition), so one regex pass finds them."""
    import array
    import re

    text = array.array("I", range(0x80, 0x110000)).tobytes().decode("utf-32-le", "surrogatepass")
    return [(m.start() + 0x80, m.end() + 0x7F) for m in re.finditer(r"[^\W_]+", text)]


@functools.lru_cache(maxsize=1)
def _alnum_c() -> str:
    """alnum_ranges() as C pairs, from alnum.ranges when it was made for this Unicode version (~0.1 s saved)."""
    import unicodedata

    try:
        head, *rows = ALNUM_FILE.read_text(encoding="utf-8").splitlines()
        runs = [tuple(int(x, 16) for x in row.split()) for row in rows] if head.split()[-1] == \
            unicodedata.unidata_version else alnum_ranges()
    except (OSError, ValueError, IndexError):
        runs = alnum_ranges()
    return ", ".join(f"{{{lo:#x}, {hi:#x}}}" for lo, hi in runs)


def _fill(template: Path, values: dict[str, str]) -> str:
    text = template.read_text(encoding="utf-8")
    for key, value in values.items():
        text = text.replace(key, value)
    return text


def compiler() -> str | None:
    """The system C compiler ($CC, cc, gcc), or None: then the Python shim is installed alone."""
    for cand in (os.environ.get("CC"), "cc", "gcc"):
        if cand and shutil.which(cand):
            return shutil.which(cand)
    return None


def _build(shim_dir: Path, cc: str, socket: str | None) -> bool:
    """DIR/capsule-shim and DIR/capsule-capture compiled; False (nothing replaced) when the shim
    will not build. Without the capture the shim hands the agent's view to the Python shim."""
    if not _compile(shim_dir, cc, PROGRAM, render_c(shim_dir, socket), SHIM_FLAGS):
        return False
    if not _compile(shim_dir, cc, CAPTURE, render_capture(socket), CAPTURE_FLAGS):
        (shim_dir / CAPTURE).unlink(missing_ok=True)
    return True


def build_capture(directory: Path, name: str = CAPTURE) -> Path | None:
    """DIR/NAME: the compiled capture alone, for `capsule ctx run` (the engine daemon builds it beside
    its socket; ctx run passes --socket); None without a C compiler or when it will not build."""
    cc = compiler()
    if cc is None:
        return None
    directory.mkdir(parents=True, exist_ok=True)
    if not _compile(directory, cc, name, render_capture(), CAPTURE_FLAGS):
        return None
    (directory / name).chmod(0o700)              # in the state dir, everything is owner-only
    (directory / f"{name}.c").chmod(0o600)
    return directory / name


def _compile(shim_dir: Path, cc: str, name: str, source: str, flag_sets) -> bool:
    """DIR/NAME from source with the first flag set that builds; rebuilt only when the source changed."""
    src, program = shim_dir / (name + ".c"), shim_dir / name
    if src.is_file() and src.read_text(encoding="utf-8") == source and _is_elf(program):
        return True
    tmp = shim_dir / f"{name}.build.{os.getpid()}"     # two builders never share a file
    for flags in flag_sets:
        try:
            done = subprocess.run([cc, *flags, "-o", str(tmp), "-x", "c", "-"], input=source.encode(),
                                  capture_output=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            return False
        if done.returncode == 0 and _is_elf(tmp) and _runs(tmp):
            tmp.chmod(0o755)
            tmp.replace(program)
            write_atomic(src, source, 0o644)
            return True
        tmp.unlink(missing_ok=True)
    return False


def _runs(program: Path) -> bool:
    """A build that links may still not run here (a freestanding start on an odd kernel): run it
    once with no PATH, where either program answers at once (127: not found; 2: usage)."""
    try:
        done = subprocess.run([str(program)], env={}, capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode in (2, 127)


def _is_elf(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def install(shim_dir: Path | str, names: list[str] | None = None, python: str | None = None,
            socket: str | None = None, compiled: bool = True) -> list[Path]:
    """Write DIR/capsule-shim and DIR/<tool> -> capsule-shim for each tool; returns the tool paths.

    With a C compiler (and `compiled`), DIR/capsule-shim is the compiled shim and the Python shim is
    DIR/capsule-shim.py behind DIR/.py/<tool>; without one, DIR/capsule-shim is the Python shim."""
    shim_dir = Path(shim_dir).absolute()
    shim_dir.mkdir(parents=True, exist_ok=True)
    program = shim_dir / PROGRAM
    text = render(shim_dir, python, socket)
    cc = compiler() if compiled else None
    tools_ = names or tools()
    if cc and _build(shim_dir, cc, socket):
        write_atomic(shim_dir / PY_PROGRAM, text, 0o755)
        # every tool of the directory, not only these: an earlier install's links now run the compiled shim
        earlier = [p.name for p in shim_dir.iterdir() if p.is_symlink() and os.readlink(p) == PROGRAM]
        _links(shim_dir / PY_DIR, list(dict.fromkeys([*tools_, *earlier])), "../" + PY_PROGRAM)
    else:
        write_atomic(program, text, 0o755)
    write_atomic(shim_dir / ENV_FILE, render_env(shim_dir), 0o644)
    return _links(shim_dir, tools_, PROGRAM)


def _links(where: Path, names: list[str], target: str) -> list[Path]:
    where.mkdir(parents=True, exist_ok=True)
    written = []
    for name in names:
        link = where / name
        if link.is_symlink() and os.readlink(link) == target:
            written.append(link)
            continue
        if link.exists() or link.is_symlink():
            link.unlink()
        link.symlink_to(target)
        written.append(link)
    return written


def write_atomic(path: Path, text: str, mode: int) -> None:
    try:
        if path.is_file() and path.read_bytes() == text.encode("utf-8"):
            return
    except OSError:
        pass
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.chmod(mode)
    tmp.replace(path)


def is_capsule_shim(path: Path) -> bool:
    try:
        real = Path(path).resolve()
        with open(real, "rb") as f:
            head = f.read(256)
            if head.startswith(b"\x7fELF"):     # the compiled shim holds the marker as a string
                head += f.read(1 << 20)
    except OSError:
        return False
    return MARKER.encode() in head
