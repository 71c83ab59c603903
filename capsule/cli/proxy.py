"""`capsule proxy serve [--port N] [--anthropic-upstream URL] [--openai-upstream URL] [--gemini-upstream URL] [--workspace DIR]`:
the proxy door alone.

Not responsible for the proxy's behaviour (capsule/proxy/). For laptops without the supervisor:
point Claude Code at http://127.0.0.1:PORT and Codex's provider base_url at http://127.0.0.1:PORT/openai.
Invariant: it binds 127.0.0.1 only; a bad URL or a busy port exits 2 with the reason.
"""

from __future__ import annotations

from pathlib import Path
import sys
from urllib.parse import urlsplit

from capsule.ground import paths
from capsule.ground.errors import UserError
from capsule.ground import switches


def register(subparsers) -> None:
    p = subparsers.add_parser("proxy", help="the model API proxy door (Anthropic Messages, OpenAI Responses)")
    sub = p.add_subparsers(dest="proxy_command", metavar="SUBCOMMAND", required=True)
    s = sub.add_parser(
        "serve", help="serve the proxy on 127.0.0.1 in the foreground",
        description="Forward the Anthropic Messages API (at /) and the OpenAI Responses API (at /openai) to "
        "their upstreams; tool results pass through capsule's engine once per conversation (memoized, "
        "so prompt caches keep hitting); usage is recorded in the state dir. Point Claude Code at it with "
        "ANTHROPIC_BASE_URL=http://127.0.0.1:PORT and Codex with -c openai_base_url=http://127.0.0.1:PORT/openai.")
    s.add_argument("--port", type=int, default=8787, help="port on 127.0.0.1 (default 8787; 0 picks a free one)")
    s.add_argument("--anthropic-upstream", default=None, help="Anthropic API base (default https://api.anthropic.com)")
    s.add_argument("--openai-upstream", default=None, help="OpenAI API base incl. /v1 (default https://api.openai.com/v1)")
    s.add_argument("--gemini-upstream", default=None,
                   help="Gemini API base (default https://generativelanguage.googleapis.com)")
    s.add_argument("--shims", action="store_true",
                   help="capsule's shims are on for this agent: leave shell-tool results to them (one rewrite path per command)")
    s.add_argument("--workspace", default=None, metavar="DIR",
                   help="the agent's workspace: screenshots of its files become pointers, PDF page ranges its "
                        "files' text (default: none, images are only sized)")
    s.set_defaults(func=_serve)


def _workspace(value: str | None):
    if value is None:
        return None

    path = Path(value).expanduser()
    if not path.is_dir():
        raise UserError(f"--workspace {value!r}: not a directory")
    return path.resolve()


def _url(value: str | None, name: str) -> str | None:
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UserError(f"--{name} {value!r}: expected an http(s) URL such as https://api.example.com")
    return value.rstrip("/")


def _serve(args) -> int:
    from capsule.proxy.app import ANTHROPIC_DEFAULT, GEMINI_DEFAULT, GEMINI_PREFIX, OPENAI_DEFAULT, Settings  # noqa: PLC0415 - bench_startup "capsule --help"
    from capsule.proxy.proxy_server import ProxyServer  # noqa: PLC0415 - bench_startup "capsule --help"

    if not 0 <= args.port <= 65535:
        raise UserError(f"--port {args.port}: expected 0..65535")
    sw = switches.Switches.read()
    if sw.disable or sw.no_proxy:
        raise UserError(f"the proxy is switched off ({switches.DISABLE if sw.disable else switches.NO_PROXY})")
    settings = Settings(state_dir=paths.state_dir(),
                        anthropic_upstream=_url(args.anthropic_upstream, "anthropic-upstream") or ANTHROPIC_DEFAULT,
                        openai_upstream=_url(args.openai_upstream, "openai-upstream") or OPENAI_DEFAULT,
                        gemini_upstream=_url(args.gemini_upstream, "gemini-upstream") or GEMINI_DEFAULT,
                        shims_on=args.shims, workspace=_workspace(args.workspace))
    server = ProxyServer(settings, port=args.port)
    try:
        server.bind()
    except OSError as exc:
        raise UserError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}") from None
    print(f"capsule proxy on {server.url}  (Anthropic: ANTHROPIC_BASE_URL={server.url}; "
          f"OpenAI Responses: {server.openai_url}; Gemini: GOOGLE_GEMINI_BASE_URL={server.url}{GEMINI_PREFIX})",
          file=sys.stderr, flush=True)
    server.serve_forever(bound=True)
    return 0
