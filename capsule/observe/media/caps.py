"""Image caps and token formulas per model family, read from data/caps.toml.

Responsible for: which family a model is in, the size the API itself would shrink an image to, the
size capsule sends (the family's cap, or a role's, within the API's own limit), and the tokens an image of a size costs.
Not responsible for pixels (image.py). Invariant: pure arithmetic on sizes; the size `target()`
returns is never larger than the image, never over the family's cap, and costs no more by its
formula than the image as it came.
"""

from __future__ import annotations

import fnmatch
import math
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=1)
def data() -> dict:
    return tomllib.loads(resources.files("capsule.observe.media").joinpath("data/caps.toml").read_text())


@dataclass(frozen=True)
class Family:
    name: str
    api_name: str
    formula: str
    api: dict
    cap: dict
    checked: str
    sources: tuple[str, ...]

    def with_cap(self, long_edge: int | None = None, max_pixels: int | None = None) -> "Family":
        """A role's cap ([context.media] image_long_edge / image_max_pixels): lower, or higher up to the
        API's own limit (a role that needs pixel-level detail on a high-resolution family)."""
        cap = dict(self.cap)
        if long_edge:
            if self.formula == "tiles":
                cap["fit_square"] = min(int(long_edge), int(self.api["fit_square"]))
            else:
                cap["long_edge"] = min(int(long_edge), int(self.api.get("long_edge", long_edge)))
        if max_pixels:
            if self.formula == "pixels":
                cap["max_pixels"] = min(int(max_pixels), int(self.api["max_pixels"]))
            elif self.formula == "patches":
                patch = int(self.api["patch"])
                cap["max_patches"] = min(int(max_pixels) // (patch * patch), int(self.api["max_patches"]))
        return Family(self.name, self.api_name, self.formula, self.api, cap, self.checked, self.sources)


def family(name: str) -> Family:
    spec = data()["families"][name]
    return Family(name, spec["api_name"], spec["formula"], dict(spec["api"]), dict(spec["cap"]),
                  spec["checked"], tuple(spec["sources"]))


def family_for(model: str | None, api: str = "anthropic") -> Family:
    """The family of `model` (first pattern that matches), else the API's default family."""
    m = (model or "").strip().lower()
    if m:
        for name, spec in data()["families"].items():
            if any(fnmatch.fnmatchcase(m, p) for p in spec["models"]):
                return family(name)
    return family(data()["default_for"].get(api, "anthropic"))


def _scale(w: int, h: int, s: float) -> tuple[int, int]:
    if s >= 1.0:
        return w, h
    return max(1, int(w * s)), max(1, int(h * s))


def _pixels_fit(w: int, h: int, long_edge: int | None, max_pixels: int | None) -> tuple[int, int]:
    s = 1.0
    if long_edge:
        s = min(s, long_edge / max(w, h))
    if max_pixels:
        s = min(s, math.sqrt(max_pixels / (w * h)))
    return _scale(w, h, s)


def _tiles_fit(w: int, h: int, fit_square: int, short_side: int) -> tuple[int, int]:
    w, h = _scale(w, h, min(1.0, fit_square / max(w, h)))
    return _scale(w, h, min(1.0, short_side / min(w, h)))


def _patches(w: int, h: int, patch: int) -> int:
    return math.ceil(w / patch) * math.ceil(h / patch)


def _patches_fit(w: int, h: int, patch: int, max_patches: int) -> tuple[int, int]:
    if _patches(w, h, patch) <= max_patches:
        return w, h
    s = math.sqrt(max_patches * patch * patch / (w * h))
    while True:     # the square-root estimate can leave a partial patch row over: shrink until it fits
        nw, nh = _scale(w, h, s)
        if _patches(nw, nh, patch) <= max_patches:
            return nw, nh
        s *= 0.995


def api_size(fam: Family, w: int, h: int) -> tuple[int, int]:
    """The size the API itself reads an image of w x h at (its own downscale)."""
    a = fam.api
    if fam.formula == "pixels":
        return _pixels_fit(w, h, a["long_edge"], a["max_pixels"])
    if fam.formula == "tiles":
        return _tiles_fit(w, h, a["fit_square"], a["short_side"])
    return _patches_fit(w, h, a["patch"], a["max_patches"])


def target(fam: Family, w: int, h: int) -> tuple[int, int]:
    """The size capsule sends: the family's cap, and never past what the API would read."""
    c = fam.cap
    if fam.formula == "pixels":
        tw, th = _pixels_fit(w, h, c.get("long_edge"), c.get("max_pixels"))
    elif fam.formula == "tiles":
        tw, th = _tiles_fit(w, h, c["fit_square"], c["short_side"])
    else:
        tw, th = _patches_fit(w, h, fam.api["patch"], c["max_patches"])
        if c.get("long_edge"):
            tw, th = _pixels_fit(tw, th, c["long_edge"], None)
    aw, ah = api_size(fam, w, h)
    return (tw, th) if tw * th <= aw * ah else (aw, ah)


def tokens(fam: Family, w: int, h: int) -> int:
    """Tokens an image of w x h costs as sent (after the API's own downscale), by the family's formula."""
    w, h = api_size(fam, w, h)
    a = fam.api
    if fam.formula == "pixels":
        return math.ceil(w * h / a["pixels_per_token"])
    if fam.formula == "tiles":
        return int(a["base"]) + int(a["per_tile"]) * math.ceil(w / a["tile"]) * math.ceil(h / a["tile"])
    return math.ceil(min(_patches(w, h, a["patch"]), a["max_patches"]) * float(a["multiplier"]))


def label(fam: Family) -> str:
    """The ledger's token label for a count by formula."""
    return f"formula:{fam.name}@{fam.checked}"
