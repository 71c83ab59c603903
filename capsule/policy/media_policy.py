"""The media policy: a role's [context.media] table, after the kill switches.

Not responsible for validating the table (the role schema does, with file/line/key errors) or for
what the media layer does with it. Invariant: the master switch means off, the measure-only switch
means measure, and a role without the table follows its [context] mode (off -> off, measure ->
measure, standard/aggressive -> on).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from capsule.ground import switches

MODES = ("off", "measure", "on")
PDF_RULES = ("text", "keep")
SCREENSHOT_RULES = ("pointer", "resize")


@dataclass(frozen=True)
class MediaPolicy:
    mode: str = "on"
    image_long_edge: int | None = None      # lower the family's cap (never above the API's)
    image_max_pixels: int | None = None
    pdf: str = "text"                       # text: born-digital PDFs as text; keep: sized pages only
    screenshots: str = "pointer"            # pointer: a screenshot of a workspace file names the file
    screenshot_rules: dict[str, Any] = field(default_factory=dict)   # overrides of rules.toml [screenshot]
    reason: str = "default"

    @property
    def active(self) -> bool:
        return self.mode == "on"


def from_table(table: Mapping[str, Any] | None, context_mode: str | None = None,
               env: Mapping[str, str] | None = None) -> MediaPolicy:
    """The policy for one role ([context.media] table and [context] mode), switches applied."""
    t = dict(table or {})
    if "mode" in t:
        mode, reason = str(t["mode"]), "[context.media] mode"
    elif context_mode in ("off", "measure"):
        mode, reason = context_mode, f"[context] mode {context_mode}"
    else:
        mode, reason = "on", f"[context] mode {context_mode or 'default'}"
    if switches.is_on(switches.DISABLE, env):
        mode, reason = "off", f"switch {switches.DISABLE}"
    elif switches.is_on(switches.MEASURE_ONLY, env) and mode == "on":
        mode, reason = "measure", f"switch {switches.MEASURE_ONLY}"
    if mode not in MODES:
        mode, reason = "off", f"unknown media mode {mode!r}: off"
    rules = {k: v for k, v in (t.get("screenshot") or {}).items()}
    return MediaPolicy(mode=mode, image_long_edge=t.get("image_long_edge"), image_max_pixels=t.get("image_max_pixels"),
                       pdf=str(t.get("pdf", "text")), screenshots=str(t.get("screenshots", "pointer")),
                       screenshot_rules=rules, reason=reason)


def from_engine_mode(engine_mode: str | None, env: Mapping[str, str] | None = None) -> MediaPolicy:
    """A door without a role table (embedded, tests): the engine's mode decides."""
    mode = engine_mode if engine_mode in ("off", "measure") else "standard"
    return from_table(None, mode, env)
