"""Error types every layer may raise and every door knows how to show.

Not responsible for formatting (each door prints its own way). Invariant: a UserError's message is
one line that names the file, line or key at fault and the fix; the CLI prints it and exits 2.
"""

from __future__ import annotations


class UserError(Exception):
    """A problem with the user's input: printed as one line, exit 2."""
