"""The HTML rendering of a report dict: one self-contained page (data/report.html + the data), the
one renderer of `capsule ctx report --html` and `capsule fleet report --html` (fleet/fleet_html.py
hands in its figures in the same shape).

Not responsible for computing anything. Invariant: the page loads nothing from anywhere (no
network, no CDN; a CSP forbids it); the charts are inline SVG drawn by the page's own script from
the JSON embedded in it; a section without data says what would fill it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

TEMPLATE = Path(__file__).with_name("data") / "report.html"
PLACEHOLDER = "/*REPORT_DATA*/"


def render(report: dict, generated_at: float | None = None, title: str = "capsule report") -> str:
    """`report`: measure.report.build's dict (with its "window"), or the fleet's view of the same shape."""
    meta = {"generated_at": round(time.time() if generated_at is None else generated_at), "title": title}
    data = json.dumps({**report, "meta": meta}, sort_keys=True, default=str)
    # Inside <script>, "</script" or "<!--" in a command line would end the element early: every
    # "<" (only ever inside JSON strings) becomes its \u escape.
    data = data.replace("<", "\\u003c")
    page = TEMPLATE.read_text(encoding="utf-8")
    if PLACEHOLDER not in page:
        raise RuntimeError(f"{TEMPLATE} lost its {PLACEHOLDER} placeholder")
    return page.replace(PLACEHOLDER, data)
