"""`capsule ctx …`: the engine's own commands (run, pipe, expand, gain, and those others add).

Not responsible for behaviour; each subcommand module registers itself.
"""

from __future__ import annotations

import importlib

# Each module exposes register(subparsers) for the `ctx` group.
CTX_MODULES = [
    "capsule.cli.run",
    "capsule.cli.expand_cmd",
    "capsule.cli.gain",
    "capsule.cli.trust_cmd",
    "capsule.cli.doctor",
    "capsule.cli.audit_cmd",
    "capsule.cli.usage_cmd",
    "capsule.cli.report_cmd",
    "capsule.cli.quota_cmd",
    "capsule.cli.whatif_cmd",
]


def register(sub, only: str | None = None) -> None:
    """only: register just this module's commands (main.FAST_COMMANDS)."""
    parser = sub.add_parser("ctx", help="the context engine: run, pipe, expand, gain, doctor …",
                            description="Observe command output through the context engine and inspect what it saved.")
    ctx_sub = parser.add_subparsers(dest="ctx_command", metavar="SUBCOMMAND")
    for name in [only] if only else CTX_MODULES:
        importlib.import_module(name).register(ctx_sub)
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])
