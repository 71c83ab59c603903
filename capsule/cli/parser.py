"""The one argparse parser class every `capsule` command and subcommand is built with.

Not responsible for any command's arguments (each cli module adds its own). Invariants: no flag is
ever taken from an abbreviation (`up --rol x` is an error, never `--role`); an error names the
subcommand it happened in, prints that subcommand's usage and, for a near miss, "did you mean";
every `--help` ends with examples, read from cli/data/examples.toml only when help is printed (a
`ctx run` on every tool call must not pay for a TOML parse).
"""

from __future__ import annotations

import argparse
import re
import sys

_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")


class Parser(argparse.ArgumentParser):
    """argparse.ArgumentParser with abbreviations off, errors in the failing subcommand's own
    words and examples after the help. add_subparsers hands the class down to every subparser."""

    def __init__(self, *args, **kwargs):
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args=None, namespace=None):
        ns, extras = super().parse_known_args(args, namespace)
        # A subparser reports its own unknown arguments (argparse leaves them to the top-level
        # parser, which prints `capsule`'s usage for a mistake made in `capsule ctx gain`).
        if extras and self.prog != "capsule":
            self.error(self._unrecognized(extras))
        return ns, extras

    def _unrecognized(self, extras: list[str]) -> str:
        import difflib  # noqa: PLC0415 - bench_startup "capsule --help"; only on an error: a cold `ctx run` does not pay for it

        msg = f"unrecognized arguments: {' '.join(extras)}"
        flags = [s for a in self._actions for s in a.option_strings]
        for extra in extras:
            if extra.startswith("-"):
                near = difflib.get_close_matches(extra.split("=", 1)[0], flags, n=1, cutoff=0.6)
                if near:
                    return f"{msg} (did you mean {near[0]}?)"
        return msg

    def error(self, message: str):
        m = _CHOICE.search(message)
        if m:
            import difflib  # noqa: PLC0415 - bench_startup "capsule --help"

            choices = [c.strip().strip("'") for c in m.group(2).split(",")]
            near = difflib.get_close_matches(m.group(1), choices, n=1, cutoff=0.6)
            if near:
                message = f"{message}; did you mean {near[0]!r}?"
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")

    def format_help(self) -> str:
        text = super().format_help()
        examples = _examples().get(self.prog)
        if examples:
            text += "\nexamples:\n" + "".join(f"  {line}\n" for line in examples)
        return text


def _examples() -> dict[str, list[str]]:
    import tomllib  # noqa: PLC0415 - bench_startup "ctx run, warm engine"
    from importlib import resources  # noqa: PLC0415 - bench_startup "ctx run, warm engine"

    data = tomllib.loads(resources.files("capsule.cli").joinpath("data/examples.toml").read_text("utf-8"))
    return data["examples"]
