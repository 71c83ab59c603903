"""The supervisor's log: warnings (info with --verbose) on stderr, everything in the state dir's log file.

Not responsible for what is logged. Invariant: a log write that fails (closed terminal, disk full)
is dropped, never a traceback on the agent's terminal.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from capsule.ground import paths
from capsule.ground.log_handlers import QuietFileHandler


class _QuietStderr(logging.StreamHandler):
    """The supervisor's stderr log: a failed write (closed terminal) is dropped, never a traceback."""

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802
        pass


def setup_logging(state_dir: Path, verbose: bool = False) -> None:
    handlers: list[logging.Handler] = [_QuietStderr(sys.stderr)]
    try:
        # created owner-only first: logging's FileHandler would make it 0644 under umask 022
        os.close(paths.open_private(state_dir / paths.LOG_FILE, os.O_WRONLY | os.O_CREAT | os.O_APPEND))
        handlers.append(QuietFileHandler(state_dir / paths.LOG_FILE))
    except OSError:
        pass
    for h in handlers:
        h.setFormatter(logging.Formatter("capsule[%(process)d] %(levelname)s %(name)s: %(message)s"))
    handlers[0].setLevel(logging.INFO if verbose else logging.WARNING)
    root = logging.getLogger("capsule")
    root.setLevel(logging.INFO)
    for h in handlers:
        root.addHandler(h)
