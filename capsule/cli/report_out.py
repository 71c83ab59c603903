"""How the report commands (`ctx report`, `fleet report`) hand over a report dict: --html as one
self-contained page written atomically, --json on stdout, else the caller prints its text.

Not responsible for building or rendering a report. Invariant: a bad --html path is refused before
any work is done; the page appears whole or not at all (temp file, then rename).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from capsule.ground.errors import UserError


def html_target(html: str | None) -> Path | None:
    """--html FILE checked up front: a directory or a missing folder exits 2 naming the option."""
    if not html:
        return None
    target = Path(html)
    if target.is_dir() or not target.parent.is_dir():
        raise UserError(f"--html {html}: not a writable file path (a directory, or its folder is missing)")
    return target


def write(data: dict, target: Path | None, as_json: bool, render_html) -> bool:
    """Write the page (target) or the JSON; False when neither was asked (the caller prints text)."""
    if target is not None:
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_text(render_html(data), encoding="utf-8")
        tmp.replace(target)
        print(f"wrote {target} ({target.stat().st_size:,} bytes)")
        return True
    if as_json:
        from capsule.ground.numbers import finite_json  # noqa: PLC0415 - bench_startup "capsule --help"; JSON has no Infinity/NaN

        json.dump(finite_json(data), sys.stdout, indent=2, default=str, allow_nan=False)
        print()
        return True
    return False
