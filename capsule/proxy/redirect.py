"""Point one agent session at the proxy: where its model API is now, and how to redirect it.

Not responsible for the proxy itself or for any permanent config: Claude Code gets
ANTHROPIC_BASE_URL in its environment, Codex gets `-c` overrides on its command line, OpenCode its
Anthropic provider's baseURL in its session config (capsule/agents/opencode.py); all last only for
the session the supervisor launches. Gemini CLI gets GOOGLE_GEMINI_BASE_URL (the proxy's /gemini
door) when it signs in with an API key. Invariant: when the upstream cannot be determined
safely, `upstream()` says why and the agent keeps its own base URL.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from capsule.proxy.app import ANTHROPIC_DEFAULT, GEMINI_DEFAULT, GEMINI_PREFIX, OPENAI_DEFAULT


@dataclass
class Redirect:
    kind: str
    upstream: str | None             # the agent's own base URL, which the proxy forwards to
    env: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)   # inserted right after the agent's binary
    skip: str | None = None          # why this session does not use the proxy
    provider: str = "openai"         # Codex: the model provider whose base URL is redirected
    base_url: str | None = None      # OpenCode: its Anthropic provider's baseURL for this session
    # Claude Code turns its MCP tool search off for any ANTHROPIC_BASE_URL that is not first-party
    # ("[ToolSearch:optimistic] disabled"), and then inlines every MCP tool's schema into every
    # request. The proxy forwards to first-party Anthropic unchanged, so capsule turns it back on,
    # unless the user set ENABLE_TOOL_SEARCH themselves (theirs wins) or their upstream is not first-party.
    tool_search: bool = False


def upstream(kind: str, env: dict[str, str], workspace: Path | None = None) -> Redirect:
    """The agent's real model API, before any redirect."""
    if kind == "claude":
        url = env.get("ANTHROPIC_BASE_URL") or ANTHROPIC_DEFAULT
        return Redirect(kind, url, tool_search=url.rstrip("/") == ANTHROPIC_DEFAULT and "ENABLE_TOOL_SEARCH" not in env)
    if kind == "codex":
        return _codex(env)
    if kind == "opencode":
        return _opencode(env, workspace or Path.cwd())
    if kind == "gemini":
        return _gemini(env)
    return Redirect(kind, None, skip=f"agent kind {kind} has no known model API")


def redirect(r: Redirect, proxy_url: str, openai_url: str) -> Redirect:
    """Fill env / args that send the agent to the proxy."""
    if r.skip:
        return r
    if r.kind == "claude":
        r.env = {"ANTHROPIC_BASE_URL": proxy_url, **({"ENABLE_TOOL_SEARCH": "true"} if r.tool_search else {})}
    elif r.kind == "codex":
        setting = "openai_base_url" if r.provider == "openai" else f"model_providers.{r.provider}.base_url"
        r.args = ["-c", f"{setting}={json.dumps(openai_url)}"]
    elif r.kind == "opencode":
        r.base_url = proxy_url.rstrip("/") + "/v1"    # the SDK appends /messages to it
    elif r.kind == "gemini":
        r.env = {"GOOGLE_GEMINI_BASE_URL": proxy_url.rstrip("/") + GEMINI_PREFIX}   # the SDK appends /v1beta/…
    return r


GEMINI_KEYS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")


def _gemini(env: dict[str, str]) -> Redirect:
    """Gemini CLI's Gemini API base URL: GOOGLE_GEMINI_BASE_URL, else Google's. Only API-key and gateway
    sign-in talk to it: a Google login goes to the Code Assist backend, Vertex AI to its own host."""
    if (env.get("GOOGLE_GENAI_USE_VERTEXAI") or "").lower() in ("1", "true"):
        return Redirect("gemini", None, skip="Gemini CLI uses Vertex AI (not the Gemini API base URL)")
    home = Path(env.get("GEMINI_CLI_HOME") or env.get("HOME") or Path.home()) / ".gemini"
    try:
        settings = json.loads((home / "settings.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        settings = {}
    auth = ((settings.get("security") or {}).get("auth") or {}) if isinstance(settings, dict) else {}
    chosen = auth.get("selectedType") if isinstance(auth, dict) else None
    # gemini-api-key and gateway (what it picks itself when GOOGLE_GEMINI_BASE_URL is set) use the base URL
    keyed = any(env.get(k) for k in GEMINI_KEYS) or env.get("GOOGLE_GEMINI_BASE_URL")
    if chosen not in (None, "gemini-api-key", "gateway") or not keyed:
        return Redirect("gemini", None, skip=f"Gemini CLI signs in with {chosen or 'no API key'} "
                                             "(only API-key or gateway sign-in uses GOOGLE_GEMINI_BASE_URL)")
    return Redirect("gemini", env.get("GOOGLE_GEMINI_BASE_URL") or GEMINI_DEFAULT)


def _opencode(env: dict[str, str], workspace: Path) -> Redirect:
    """OpenCode's Anthropic provider baseURL, from its config layers in its merge order (global,
    OPENCODE_CONFIG, the project's, OPENCODE_CONFIG_CONTENT; the last that sets it wins)."""
    home = Path(env.get("HOME") or Path.home())
    config_home = Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "opencode"
    layers: list[tuple[str, str | None]] = []
    for path in (config_home / "opencode.json", config_home / "opencode.jsonc",
                 Path(env["OPENCODE_CONFIG"]) if env.get("OPENCODE_CONFIG") else None,
                 workspace / "opencode.json", workspace / "opencode.jsonc"):
        if path is None:
            continue
        try:
            layers.append((str(path), path.read_text(encoding="utf-8")))
        except OSError:
            continue
    layers.append(("OPENCODE_CONFIG_CONTENT", env.get("OPENCODE_CONFIG_CONTENT")))
    url = None
    for where, text in layers:
        if not text or not text.strip():
            continue
        try:
            cfg = json.loads(text)
        except ValueError:
            return Redirect("opencode", None, skip=f"{where} is not plain JSON (comments?): its baseURL is unknown")
        opts = (((cfg.get("provider") or {}).get("anthropic") or {}).get("options") or {}) if isinstance(cfg, dict) else {}
        if isinstance(opts, dict) and isinstance(opts.get("baseURL"), str):
            url = opts["baseURL"]
    if url is None:
        url = (env.get("ANTHROPIC_BASE_URL") or ANTHROPIC_DEFAULT).rstrip("/") + "/v1"
    base = url.rstrip("/")
    if not base.endswith("/v1"):
        return Redirect("opencode", None, skip=f"Anthropic baseURL {url!r} does not end in /v1")
    return Redirect("opencode", base[:-3])


def _codex(env: dict[str, str]) -> Redirect:
    home = Path(env.get("CODEX_HOME") or Path(env.get("HOME", str(Path.home()))) / ".codex")
    try:
        cfg = tomllib.loads((home / "config.toml").read_text(encoding="utf-8"))
    except FileNotFoundError:
        cfg = {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        return Redirect("codex", None, skip=f"{home / 'config.toml'} unreadable ({exc.__class__.__name__})")
    provider = cfg.get("model_provider") or "openai"
    if provider == "openai":
        if _chatgpt_login(home, env):
            return Redirect("codex", None, skip="Codex signs in with ChatGPT (its backend is not a Responses "
                                                "API base URL the proxy can stand in for)")
        url = cfg.get("openai_base_url") or env.get("OPENAI_BASE_URL") or OPENAI_DEFAULT
    else:
        spec = (cfg.get("model_providers") or {}).get(provider)
        if not isinstance(spec, dict) or not isinstance(spec.get("base_url"), str):
            return Redirect("codex", None, skip=f"model provider {provider!r} has no base_url in config.toml")
        if spec.get("wire_api", "responses") != "responses":
            return Redirect("codex", None, skip=f"model provider {provider!r} speaks {spec.get('wire_api')}, "
                                                "not the Responses API")
        url = spec["base_url"]
    return Redirect("codex", url, provider=provider)


def _chatgpt_login(home: Path, env: dict[str, str]) -> bool:
    if env.get("OPENAI_API_KEY"):
        return False
    try:
        auth = json.loads((home / "auth.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(auth.get("tokens")) and not auth.get("OPENAI_API_KEY")


def insert_args(cmd: list[str], args: list[str]) -> list[str]:
    """`codex -c k=v …`: the overrides right after the codex binary (also inside a wrapper command)."""
    if not args:
        return cmd
    for i, word in enumerate(cmd):
        if os.path.basename(word) == "codex":
            return cmd[:i + 1] + args + cmd[i + 1:]
    return cmd
