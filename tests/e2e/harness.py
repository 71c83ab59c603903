"""The agent session of issues 9 and 25, run through the real Claude Code and the real Codex.

A scripted fake model (local Messages / Responses API on 127.0.0.1) asks for the same shell calls
in plain mode (`claude …` / `codex …`) and in capsule mode (`capsule up --role python-dev --local --
claude|codex …`); the tool results the fake receives are what the model would see. The session is
issue 25's: a failing test that names `refund_half`, `git log --stat`, 400 records as a JSON array
written one record a line and the same records as JSON Lines (one failed), and a `grep -rn TODO`
whose decisive hit differs from 300 routine ones.
Not a model and not a judge of style: it checks named facts and counts cl100k tokens.
Shared by tests/e2e/test_agents_e2e.py and benchmarks/bench_agents.py (one place for the session).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from capsule.ground.tokens import count
from tests.fakes.anthropic import MessagesAPI, result_text, tool_results_in
from tests.fakes.gemini import GenerateContentAPI, function_responses_in, offered
from tests.fakes.openai import ResponsesAPI, outputs_in

REPO = Path(__file__).resolve().parents[2]
CODEX_MODEL = "gpt-5.5"
TIMEOUT_S = 300
PROMPT = "Investigate why checkout drops orders."


@dataclass(frozen=True)
class Call:
    name: str
    command: str
    description: str          # what Claude Code's Bash tool states as the call's goal
    facts: tuple[str, ...]    # strings the model needs to see in the tool result


# ---- the fixture workspace (made with the real git and pytest; deterministic) ----------------------
BAD_ID = "ord-00251"
BAD_ERROR = "card_declined: issuer timeout after 30s (gateway=adyen, attempt=3)"
DECISIVE = "src/shop/refunds.py:5:    # TODO refund_half subtracts one cent before rounding"
HEAD_SUBJECT = "checkout: stop retrying payment capture on gateway 502"
FAILING_TEST = "test_refund_half_of_an_even_total"
FAILING_ASSERT = "assert 4.99 == 5.0"
ROUTINE_TODOS = 300       # `# TODO tidy imports in module D.M`, the template the decisive hit breaks

CALLS = (
    Call("pytest", "python -m pytest tests", "Run the test suite",
         (FAILING_TEST, FAILING_ASSERT)),
    Call("git log", "git log --stat -15", "Show the last 15 commits with the files they touched",
         ("HEAD_HASH", HEAD_SUBJECT)),
    Call("cat json", "cat data/orders.json", "Read the order export to find the failed order",
         (BAD_ID, BAD_ERROR)),
    Call("cat jsonl", "cat data/orders.jsonl", "Read the order event stream to find the failed order",
         (BAD_ID, BAD_ERROR)),
    Call("grep", "grep -rn TODO src", "Find the TODO that explains the failing refund",
         (DECISIVE.split(":", 2)[2].strip(),)),
)

_MODULES = ("cart", "catalog", "checkout", "customers", "inventory", "invoices", "payments", "shipping",
            "taxes", "reports", "search", "users")
_STEPS = ROUTINE_TODOS // len(_MODULES)


def _git(ws: Path, *args: str, date: str | None = None) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "Ana Dev", "GIT_AUTHOR_EMAIL": "ana@example.com",
           "GIT_COMMITTER_NAME": "Ana Dev", "GIT_COMMITTER_EMAIL": "ana@example.com",
           "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    if date:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
    return subprocess.run(["git", *args], cwd=ws, env=env, check=True, capture_output=True, text=True).stdout


def _module_text(name: str, rev: int) -> str:
    d = _MODULES.index(name) + 1
    lines = [f'"""The {name} module of the demo shop (revision {rev})."""', ""]
    for i in range(_STEPS):
        lines += [f"def {name}_step_{i}(value):", f"    # TODO tidy imports in module {d}.{i + 1}",
                  f"    return value + {i + rev}", ""]
    return "\n".join(lines)


CHECKOUT = '''"""Checkout: capture the payment, then confirm the order."""

import time

RETRIES = 0


def capture(gateway, order):
    response = gateway.capture(order["total"])
    return response


def backoff(attempt):
    return min(2 ** attempt, 30)


def confirm(order):
    order["status"] = "confirmed"
    return order


def attempt_capture(gateway, order):
    for attempt in range(RETRIES + 1):
        response = capture(gateway, order)
        if response.ok:
            return confirm(order)
        time.sleep(backoff(attempt))
    return None


def checkout(gateway, order):
    if not order.get("items"):
        raise ValueError("empty order")
    if response_code(gateway) == 502:
        return None
    return attempt_capture(gateway, order)


def response_code(gateway):
    return getattr(gateway, "last_code", 200)
'''

REFUNDS = '''"""Refunds: give back part of an order's total."""


def refund_half(total):
    # TODO refund_half subtracts one cent before rounding
    return round(total / 2 - 0.01, 2)


def refund_full(total):
    return round(total, 2)
'''

PRICES = '''def bulk_price(unit, quantity):
    total = unit * quantity
    if quantity > 10:
        total = total * 0.9
    return round(total, 2)
'''


def _tests_text() -> str:
    parts = ["import pytest", "", "from shop.prices import bulk_price", "from shop.refunds import refund_half", ""]
    for i in range(40):
        parts += [f"def test_price_case_{i:02d}():", f"    assert bulk_price({i + 1}.0, 1) == {i + 1}.0", ""]
    parts += [f"def {FAILING_TEST}():", "    assert refund_half(10.0) == 5.0", ""]
    parts += ["@pytest.mark.parametrize('quantity', range(1, 21))",
              "def test_small_orders_have_no_discount(quantity):",
              "    assert bulk_price(2.0, quantity) == 2.0 * quantity or quantity > 10", ""]
    return "\n".join(parts)


def _orders() -> list[dict]:
    rows = []
    for i in range(1, 401):
        row = {"id": f"ord-{i:05d}", "customer": f"cust-{(i * 37) % 211:04d}", "status": "shipped",
               "total": round(10 + (i * 7.31) % 400, 2), "items": 1 + i % 9,
               "created": f"2026-10-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:00Z", "error": None}
        if row["id"] == BAD_ID:
            row.update(status="failed", error=BAD_ERROR)
        rows.append(row)
    return rows


def _orders_json() -> str:
    """A JSON array written one record a line (what `json.dump` per row, pandas `to_json(lines=False)`
    with a line per row, and many exporters write)."""
    return "[\n" + ",\n".join(json.dumps(r) for r in _orders()) + "\n]\n"


def _orders_jsonl() -> str:
    return "".join(json.dumps(r) + "\n" for r in _orders())


def build_workspace(ws: Path) -> str:
    """Create the fixture repository; returns the HEAD commit hash."""
    (ws / "src" / "shop").mkdir(parents=True)
    (ws / "tests").mkdir()
    (ws / "data").mkdir()
    _git(ws, "init", "-q", "-b", "main")
    for n in range(18):
        day = f"2026-10-{n + 1:02d}T10:00:00+00:00"
        touched = [_MODULES[(n + k) % len(_MODULES)] for k in range(1 + n % 3)]
        for name in touched:
            (ws / "src" / "shop" / f"{name}.py").write_text(_module_text(name, n))
        if n == 0:
            (ws / "src" / "shop" / "__init__.py").write_text("")
            (ws / "src" / "shop" / "prices.py").write_text(PRICES)
            (ws / "src" / "shop" / "refunds.py").write_text(REFUNDS)
            (ws / "tests" / "test_prices.py").write_text(_tests_text())
            (ws / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["src"]\n')
            (ws / "data" / "orders.json").write_text(_orders_json())
            (ws / "data" / "orders.jsonl").write_text(_orders_jsonl())
        _git(ws, "add", "-A")
        _git(ws, "commit", "-q", "-m", f"{touched[0]}: revision {n} of the {' and '.join(touched)} steps",
             "-m", f"Refs #{100 + n}.", date=day)
    # the head commit rewrites checkout's top and keeps its routine steps (and their TODOs)
    (ws / "src" / "shop" / "checkout.py").write_text(CHECKOUT + "\n\n" + _module_text("checkout", 18).split("\n", 2)[2])
    _git(ws, "add", "-A")
    _git(ws, "commit", "-q", "-m", HEAD_SUBJECT, date="2026-10-20T10:00:00+00:00")
    path, line, text = DECISIVE.split(":", 2)
    assert text == (ws / path).read_text().splitlines()[int(line) - 1]
    return _git(ws, "rev-parse", "HEAD").strip()


def facts_for(call: Call, head: str) -> tuple[str, ...]:
    return tuple(head if f == "HEAD_HASH" else f for f in call.facts)


# ---- fake model APIs ------------------------------------------------------------------------------
class Timed:
    """A fake that notes when each request arrived (`times`): the gap from one answer to the next
    request is the client's tool call, hooks and shims included (bench_agents.py: +ms per call)."""

    def respond(self, body, *args, **kw):
        self.__dict__.setdefault("times", []).append(time.monotonic())
        return super().respond(body, *args, **kw)

    def gaps(self) -> list[float]:
        t = self.__dict__.get("times", [])
        return [b - a for a, b in zip(t, t[1:])]


class FakeClaudeModel(Timed, MessagesAPI):
    """Messages API (tests/fakes): the next scripted Bash call while fewer results than calls came back."""

    results_in = staticmethod(tool_results_in)

    def __init__(self, calls=CALLS):
        self.calls = calls
        super().__init__()

    def answer(self, body: dict) -> list[dict]:
        return self._blocks(body)

    def _blocks(self, body: dict) -> list[dict]:
        offered = any(t.get("name") == "Bash" for t in body.get("tools") or [])
        done = len(self.results_in(body))
        if offered and done < len(self.calls):
            call = self.calls[done]
            return [{"type": "tool_use", "id": f"toolu_{done:02d}", "name": "Bash",
                     "input": {"command": call.command, "description": call.description}}]
        return [{"type": "text", "text": "done"}]

    def tool_results(self) -> list[str]:
        return [result_text(r) for r in super().tool_results()]


class FakeCodexModel(Timed, ResponsesAPI):
    """Responses API (tests/fakes): the next scripted `exec_command` while fewer outputs than calls came
    back; an empty item from `_item` fails the stream."""

    outputs_in = staticmethod(outputs_in)

    def __init__(self, calls=CALLS):
        self.calls = calls
        super().__init__(model=CODEX_MODEL)

    def answer(self, body: dict) -> list[dict] | None:
        item = self._item(body)
        return [item] if item else None

    def _item(self, body: dict) -> dict:
        done = len(self.outputs_in(body))
        if done < len(self.calls):
            return {"type": "function_call", "id": f"fc_{done}", "call_id": f"call_{done}", "name": "exec_command",
                    "arguments": json.dumps({"cmd": self.calls[done].command}), "status": "completed"}
        return {"type": "message", "role": "assistant", "id": "msg_done",
                "content": [{"type": "output_text", "text": "done", "annotations": []}]}


class FakeOpenCodeModel(FakeClaudeModel):
    """OpenCode's Anthropic provider speaks the Messages API; its shell tool is `bash`. Usage differs
    per call and fills every bucket (a reader that drops or double counts one fails)."""

    def usage(self, body: dict, n: int) -> dict:
        return {"input_tokens": 100 + n, "cache_read_input_tokens": 1000 * n, "cache_creation_input_tokens": 50 + n,
                "cache_creation": {"ephemeral_5m_input_tokens": 50 + n, "ephemeral_1h_input_tokens": 0},
                "output_tokens": 7 + n}

    def _blocks(self, body: dict) -> list[dict]:
        offered_bash = any(t.get("name") == "bash" for t in body.get("tools") or [])
        done = len(self.results_in(body))
        if offered_bash and done < len(self.calls):
            call = self.calls[done]
            return [{"type": "tool_use", "id": f"toolu_{done:02d}", "name": "bash",
                     "input": {"command": call.command, "description": call.description}}]
        return [{"type": "text", "text": "done"}]


class FakeGeminiModel(GenerateContentAPI):
    """streamGenerateContent (tests/fakes/gemini.py): the next scripted `run_shell_command` while
    fewer functionResponses than calls came back. Usage differs per call and has every bucket,
    so a reader that drops or double counts one fails."""

    def __init__(self, calls=CALLS):
        self.calls = calls
        super().__init__()

    def answer(self, body: dict) -> list[dict]:
        done = len(function_responses_in(body))
        if done < len(self.calls) and "run_shell_command" in offered(body):
            call = self.calls[done]
            return [{"functionCall": {"name": "run_shell_command",
                                      "args": {"command": call.command, "description": call.description}}}]
        return [{"text": "done"}]

    def usage(self, body: dict, n: int) -> dict:
        prompt, cached, out, thoughts = 1000 + 100 * n, 200 + n, 20 + n, 7 * n
        return {"promptTokenCount": prompt, "cachedContentTokenCount": cached, "candidatesTokenCount": out,
                "thoughtsTokenCount": thoughts, "totalTokenCount": prompt + out + thoughts}


# Per-run lines a client adds to every result (Codex's chunk and wall time, Gemini CLI's process group).
_RUN_NOISE = re.compile(r"(?m)^(?:Chunk ID|Wall time|Process Group PGID): .*\n")


# ---- one session ----------------------------------------------------------------------------------
@dataclass
class Session:
    client: str
    mode: str                 # plain | capsule
    results: list[str]
    home: Path
    stdout: str = ""
    stderr: str = ""
    facts: list[tuple[str, ...]] = field(default_factory=list)
    requests: list[dict] = field(default_factory=list)    # every model request, as the fake received it
    fake: object = None       # the fake model itself (its usage log), where a test reads it back
    elapsed_s: float = 0.0    # the client's whole run (capsule's start included in capsule mode)
    gaps: list[float] = field(default_factory=list)   # answer -> next request: each tool call's time

    def tool_names(self) -> set[str]:
        return {t.get("name") or t.get("type") for b in self.requests for t in b.get("tools") or []}

    def offered(self, tool: str) -> bool:
        """The client offered `tool` to the model: its definition, or (Claude Code 2.1.332 defers MCP
        tools behind ToolSearch) its name in the deferred-tools list of a request."""
        return tool in self.tool_names() or any(
            DEFERRED in t and f"\n{tool}\n" in t for b in self.requests for t in _texts(b))

    def saw(self, text: str) -> bool:
        """True when any model request carried `text` (system prompt, instructions, messages)."""
        return any(text in json.dumps(b, ensure_ascii=False) for b in self.requests)

    def tokens(self) -> list[int]:
        """Tokens of each tool result, without the client's per-call timing lines (Codex's
        `Chunk ID:` / `Wall time:`), which differ between any two runs of the same command."""
        return [count(_RUN_NOISE.sub("", r)) for r in self.results]

    def missing(self, i: int) -> list[str]:
        return [f for f in self.facts[i] if f not in self.results[i]]


DEFERRED = "The following deferred tools are now available via ToolSearch"


def _texts(body: dict):
    for m in body.get("messages") or []:
        for c in m.get("content") if isinstance(m.get("content"), list) else []:
            if isinstance(c, dict) and isinstance(c.get("text"), str):
                yield c["text"]


def client_path(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} is not installed; run scripts/setup-clients.sh"
    return path


def tested_client(name: str, which: str = "newest") -> str:
    """The binary of `name`'s oldest or newest tested release (capsule/agents/data/clients/<name>.toml):
    the pin on PATH when it is that release, else the install scripts/setup-clients.sh made apart."""
    import tomllib  # noqa: PLC0415

    from capsule.agents import clients  # noqa: PLC0415

    version = clients.get(name).tested[("oldest", "newest").index(which)]
    pin = next(c for c in tomllib.loads((REPO / "image/agent-clis.toml").read_text())["cli"] if c["command"] == name)
    if pin["version"] == version:
        return client_path(name)
    out = subprocess.run([sys.executable, str(REPO / "image/agent_clis.py"), "matrix"], capture_output=True,
                         text=True, check=True).stdout
    for line in out.splitlines():
        cmd, spec, prefix = line.split(" ", 2)
        if cmd == name and spec.endswith(f"@{version}"):
            path = Path(prefix) / "node_modules" / ".bin" / name
            assert path.exists(), f"{spec} is not installed in {prefix}; run scripts/setup-clients.sh"
            return str(path)
    raise AssertionError(f"no install of {name} {version}: run scripts/setup-clients.sh")


def base_env(home: Path) -> dict[str, str]:
    """A clean user: HOME in a tmp dir, the venv's python (with pytest) first on PATH."""
    keep = ("PATH", "LANG", "LC_ALL", "TERM", "TMPDIR", "USER", "LOGNAME", "SHELL")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", os.defpath)])
    env.update(HOME=str(home), XDG_STATE_HOME=str(home / ".local" / "state"),
               XDG_CONFIG_HOME=str(home / ".config"), PYTHONDONTWRITEBYTECODE="1")
    return env


def capsule_prefix(role: str = "python-dev") -> list[str]:
    return [sys.executable, "-m", "capsule", "up", "--role", role, "--local", "--"]


def run_claude(ws: Path, home: Path, mode: str, head: str, calls=CALLS, extra_env: dict | None = None) -> Session:
    home.mkdir(parents=True, exist_ok=True)
    fake = FakeClaudeModel(calls)
    try:
        env = {**base_env(home), "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{fake.port}", "ANTHROPIC_API_KEY": "test",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
               "MCP_CONNECTION_NONBLOCKING": "0", **(extra_env or {})}
        argv = [client_path("claude"), "-p", PROMPT,
                "--allowedTools", "Bash", "--output-format", "json"]
        if mode == "capsule":
            argv = capsule_prefix() + argv
        t0 = time.monotonic()
        proc = subprocess.run(argv, cwd=ws, env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, f"claude ({mode}) exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
        return Session("claude", mode, fake.tool_results(), home, proc.stdout, proc.stderr,
                       [facts_for(c, head) for c in calls], fake.requests, time.monotonic() - t0, fake.gaps())
    finally:
        fake.close()


def run_codex(ws: Path, home: Path, mode: str, head: str, calls=CALLS, extra_env: dict | None = None,
              model: str = CODEX_MODEL) -> Session:
    home.mkdir(parents=True, exist_ok=True)
    fake = FakeCodexModel(calls)
    try:
        codex_home = home / ".codex"
        codex_home.mkdir(exist_ok=True)
        # Codex runs `bash -lc`, and /etc/profile resets PATH: this user keeps the venv in ~/.profile.
        (home / ".profile").write_text(f'export PATH="{Path(sys.executable).parent}:$PATH"\n')
        (codex_home / "config.toml").write_text(fake.provider_config(model))
        env = {**base_env(home), "OPENAI_API_KEY": "test", **(extra_env or {})}
        argv = [client_path("codex"), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
                PROMPT]
        if mode == "capsule":
            argv = capsule_prefix() + argv
        t0 = time.monotonic()
        proc = subprocess.run(argv, cwd=ws, env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, f"codex ({mode}) exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
        return Session("codex", mode, fake.tool_results(), home, proc.stdout, proc.stderr,
                       [facts_for(c, head) for c in calls], fake.requests, time.monotonic() - t0, fake.gaps())
    finally:
        fake.close()


def run_opencode(ws: Path, home: Path, mode: str, head: str, calls=CALLS, extra_env: dict | None = None) -> Session:
    """`opencode run`, its Anthropic provider pointed at the fake in the user's own config
    (~/.config/opencode/opencode.json), autoupdate and sharing off, bash allowed."""
    home.mkdir(parents=True, exist_ok=True)
    fake = FakeOpenCodeModel(calls)
    try:
        cfg = home / ".config" / "opencode"
        cfg.mkdir(parents=True, exist_ok=True)
        (cfg / "opencode.json").write_text(json.dumps({
            "provider": {"anthropic": {"options": {"baseURL": f"http://127.0.0.1:{fake.port}/v1", "apiKey": "test"}}},
            "model": "anthropic/claude-sonnet-4-5", "autoupdate": False, "share": "disabled",
            "permission": {"bash": "allow", "edit": "allow"}}))
        env = {**base_env(home), "XDG_DATA_HOME": str(home / ".local" / "share"), "SHELL": "/bin/bash",
               **(extra_env or {})}
        argv = [client_path("opencode"), "run", PROMPT]
        if mode == "capsule":
            argv = capsule_prefix() + argv
        proc = subprocess.run(argv, cwd=ws, env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, f"opencode ({mode}) exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
        return Session("opencode", mode, fake.tool_results(), home, proc.stdout, proc.stderr,
                       [facts_for(c, head) for c in calls], fake.requests, fake)
    finally:
        fake.close()


GEMINI_SETTINGS = {"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
                   "tools": {"sandbox": False}, "general": {"enableAutoUpdate": False},
                   "telemetry": {"enabled": False}, "privacy": {"usageStatisticsEnabled": False}}


def run_gemini(ws: Path, home: Path, mode: str, head: str, calls=CALLS, extra_env: dict | None = None) -> Session:
    """`gemini --yolo -p`, GOOGLE_GEMINI_BASE_URL at the fake, API-key auth, no sandbox, no folder
    trust prompt, no auto-update or telemetry (~/.gemini/settings.json)."""
    home.mkdir(parents=True, exist_ok=True)
    fake = FakeGeminiModel(calls)
    try:
        (home / ".gemini").mkdir(exist_ok=True)
        (home / ".gemini" / "settings.json").write_text(json.dumps(GEMINI_SETTINGS))
        env = {**base_env(home), "GEMINI_API_KEY": "test", "GOOGLE_GEMINI_BASE_URL": f"http://127.0.0.1:{fake.port}",
               "SHELL": "/bin/bash", **(extra_env or {})}
        argv = [client_path("gemini"), "--yolo", "-p", PROMPT]
        if mode == "capsule":
            argv = capsule_prefix() + argv
        proc = subprocess.run(argv, cwd=ws, env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, f"gemini ({mode}) exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
        return Session("gemini", mode, fake.tool_results(), home, proc.stdout, proc.stderr,
                       [facts_for(c, head) for c in calls], fake.requests, fake)
    finally:
        fake.close()


RUNNERS = {"claude": run_claude, "codex": run_codex, "opencode": run_opencode, "gemini": run_gemini}


def run_claude_tools(ws: Path, home: Path, mode: str, calls: list[tuple[str, dict]], extra_env: dict | None = None,
                     allowed: str = "Bash,Read,Grep,Glob", claude: str | None = None) -> tuple[Session, object]:
    """Claude Code with scripted calls of any of its tools (tests/fakes ToolCalls): (the session,
    the fake, closed), the fake's raw bodies kept for what the model saw."""
    from tests.fakes.anthropic import ToolCalls  # noqa: PLC0415

    home.mkdir(parents=True, exist_ok=True)
    fake = type("TimedToolCalls", (Timed, ToolCalls), {})(calls)
    try:
        env = {**base_env(home), "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{fake.port}", "ANTHROPIC_API_KEY": "test",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
               "MCP_CONNECTION_NONBLOCKING": "0", **(extra_env or {})}
        argv = [claude or client_path("claude"), "-p", PROMPT, "--allowedTools", allowed, "--output-format", "json"]
        if mode == "capsule":
            argv = capsule_prefix() + argv
        t0 = time.monotonic()
        proc = subprocess.run(argv, cwd=ws, env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, f"claude ({mode}) exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
        results = [result_text(r) for r in fake.tool_results()]
        return Session("claude", mode, results, home, proc.stdout, proc.stderr, [], fake.requests,
                       time.monotonic() - t0, fake.gaps()), fake
    finally:
        fake.close()


# The clients run_in_container drives (Gemini CLI runs on the CLI layer's node >= 20).
IN_IMAGE = ("claude", "codex", "opencode", "gemini")


def run_in_container(client: str, root: Path, calls=CALLS, role: str = "python-dev") -> Session:
    """The same session with the client inside the capsule image (`capsule up`, no --local): the
    fake listens on the gateway of a docker network made for this run, the container joins it."""
    assert client in IN_IMAGE, f"{client} is not run inside the image (harness.IN_IMAGE)"
    net = f"capsule-bench-{client}-{os.getpid()}"
    subprocess.run(["docker", "network", "create", net], check=True, capture_output=True)
    name = f"capsule-bench-{client}-{os.getpid()}"
    try:
        gateway = subprocess.run(["docker", "network", "inspect", "-f", "{{(index .IPAM.Config 0).Gateway}}", net],
                                 check=True, capture_output=True, text=True).stdout.strip()
        ws = root / f"{client}-container" / "shop"
        ws.mkdir(parents=True)
        head = build_workspace(ws)
        cls = {"claude": FakeClaudeModel, "codex": FakeCodexModel, "opencode": FakeOpenCodeModel,
               "gemini": FakeGeminiModel}[client]
        fake = type("GatewayFake", (cls,), {"host": gateway})(calls)
        env = ["-e", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "-e", "DISABLE_AUTOUPDATER=1"]
        if client == "claude":
            env += ["-e", f"ANTHROPIC_BASE_URL=http://{gateway}:{fake.port}", "-e", "ANTHROPIC_API_KEY=test"]
            argv = ["claude", "-p", PROMPT, "--allowedTools", "Bash", "--output-format", "json"]
        elif client == "opencode":
            (ws / ".opencode-test.json").write_text(json.dumps({
                "provider": {"anthropic": {"options": {"baseURL": f"http://{gateway}:{fake.port}/v1", "apiKey": "test"}}},
                "model": "anthropic/claude-sonnet-4-5", "autoupdate": False, "share": "disabled",
                "permission": {"bash": "allow", "edit": "allow"}}))
            env += ["-e", "OPENCODE_CONFIG=/workspace/.opencode-test.json", "-e", "SHELL=/bin/bash"]
            argv = ["opencode", "run", PROMPT]
        elif client == "gemini":   # the user's Gemini CLI home (GEMINI_CLI_HOME), inside the workspace
            (ws / ".gemini-home" / ".gemini").mkdir(parents=True)
            (ws / ".gemini-home" / ".gemini" / "settings.json").write_text(json.dumps(GEMINI_SETTINGS))
            env += ["-e", "GEMINI_API_KEY=test", "-e", f"GOOGLE_GEMINI_BASE_URL=http://{gateway}:{fake.port}",
                    "-e", "GEMINI_CLI_HOME=/workspace/.gemini-home", "-e", "SHELL=/bin/bash"]
            argv = ["gemini", "--yolo", "-p", PROMPT]
        else:
            (ws / ".codex-home").mkdir()
            (ws / ".codex-home" / "config.toml").write_text(fake.provider_config().replace("127.0.0.1", gateway))
            env += ["-e", "OPENAI_API_KEY=test", "-e", "CODEX_HOME=/workspace/.codex-home"]
            argv = ["codex", "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", PROMPT]
        try:
            # the workspace is root's here: root is the agent only because asked (`up` refuses it by default)
            proc = subprocess.run([sys.executable, "-m", "capsule", "up", "--role", role, "--workspace", str(ws),
                                   "--network", net, "--name", name, "--user", "0:0", *env, "--", *argv],
                                  capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
            assert proc.returncode == 0, f"{client} (container) exited {proc.returncode}:\n{proc.stderr[-3000:]}"
            return Session(client, "container", fake.tool_results(), ws, proc.stdout, proc.stderr,
                           [facts_for(c, head) for c in calls], fake.requests)
        finally:
            fake.close()
    finally:
        subprocess.run([sys.executable, "-m", "capsule", "down", name, role, "--volumes"], capture_output=True)
        subprocess.run(["docker", "network", "rm", net], capture_output=True)


def run_pair(client: str, root: Path, calls=CALLS) -> tuple[Session, Session]:
    """Plain then capsule mode on two identical fresh workspaces (same commits, same hash)."""
    sessions = []
    for mode in ("plain", "capsule"):
        ws = root / f"{client}-{mode}" / "shop"
        ws.mkdir(parents=True)
        head = build_workspace(ws)
        sessions.append(RUNNERS[client](ws, root / f"{client}-{mode}" / "home", mode, head, calls))
    return sessions[0], sessions[1]


def table(pairs: list[tuple[Session, Session]], calls=CALLS) -> str:
    rows = [f"{'client':7} {'call':9} {'plain':>7} {'capsule':>8} {'ratio':>6}  facts plain  facts capsule"]
    for plain, cap in pairs:
        tp, tc = plain.tokens(), cap.tokens()
        for i, call in enumerate(calls):
            n = len(plain.facts[i])
            rows.append(f"{plain.client:7} {call.name:9} {tp[i]:>7} {tc[i]:>8} {tc[i] / max(tp[i], 1):>6.2f}  "
                        f"{n - len(plain.missing(i))}/{n}{'':9} {n - len(cap.missing(i))}/{n}")
        kept_p = sum(len(f) - len(plain.missing(i)) for i, f in enumerate(plain.facts))
        kept_c = sum(len(f) - len(cap.missing(i)) for i, f in enumerate(cap.facts))
        total = sum(len(f) for f in plain.facts)
        rows.append(f"{plain.client:7} {'TOTAL':9} {sum(tp):>7} {sum(tc):>8} {sum(tc) / max(sum(tp), 1):>6.2f}  "
                    f"{kept_p}/{total}{'':9} {kept_c}/{total}")
    return "\n".join(rows)
