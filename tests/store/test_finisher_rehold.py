"""store/finisher.py's kept hold (unlock, rehold): a long-lived writer locks the same file again per
call; a reader waits while it is locked, clears it while it is free (as a dead finisher's), and the
next rehold then makes a new file, so readers always see a locked file while rows are owed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

from capsule.store import finisher

READER = textwrap.dedent("""
    import sys, time
    from capsule.store import finisher
    t0 = time.monotonic()
    finisher.wait(sys.argv[1], timeout=10)
    print(round(time.monotonic() - t0, 3))
""")


def _reader(state) -> subprocess.Popen:
    """A ledger reader of another process (flock conflicts between processes, as in use)."""
    return subprocess.Popen([sys.executable, "-c", READER, str(state)], stdout=subprocess.PIPE, text=True)


def test_a_kept_hold_is_waited_for_while_locked_and_cleared_while_free(tmp_path):
    held = finisher.hold(tmp_path, "engine")
    pending = tmp_path / finisher.DIR
    first = held[1]
    reader = _reader(tmp_path)
    time.sleep(1.0)
    finisher.unlock(held)                       # rows written: the reader goes on
    assert 0.8 < float(reader.communicate(timeout=30)[0]) < 5
    assert list(pending.iterdir()) == []        # and cleared the free file

    held = finisher.rehold(held, tmp_path, "engine")
    assert held is not None and held[1] != first and [p.name for p in pending.iterdir()] == [held[1].rsplit("/", 1)[1]]
    finisher.unlock(held)
    kept = finisher.rehold(held, tmp_path, "engine")   # no reader between: the same file, locked again
    assert kept == held
    reader = _reader(tmp_path)
    time.sleep(0.5)
    assert reader.poll() is None                # waits for the kept hold
    finisher.release(kept)
    assert float(reader.communicate(timeout=30)[0]) >= 0.4
    assert list(pending.iterdir()) == []
