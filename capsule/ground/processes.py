"""Whether a process is alive, the one way every module asks it (leftovers of dead processes are
cleared by whoever finds them: session dirs, rehearsal scratch, a standalone proxy's state file).

Not responsible for what is cleared. Invariant: a pid that is not a positive int is not alive; a
live process of another user counts as alive (it is not ours to clear).
"""

from __future__ import annotations

import os


def alive(pid: object) -> bool:
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True
