"""Names written so that only their repeated parts fold (listings: find, tree): a family of names
that differ only in one number (`snap_0001.json` … `snap_0300.json`) is written as its consecutive
runs, `snap_0001.json…snap_0300.json`; names sharing an extension write it once, brace-expansion
style (`{core,utils}.cpython-311.pyc`); directories holding the same names are written once.

Not responsible for grouping paths by directory (filters/listing_stream.py) nor for choosing lines.
Invariant: lossless — `expand(fold(names))` is the set of `names`; a name that breaks a family's
pattern (another suffix, another padding, a gap in the numbers) is written on its own; deterministic.
"""

from __future__ import annotations

import re
from collections import Counter

RANGE = "…"
MIN_RUN = 3                 # a run of fewer names is written out (`a1 a2` is shorter than `a1…a2`)
_DIGITS = re.compile(r"\d+")


def _keys(name: str) -> list[tuple[str, str, int, int]]:
    """(prefix, suffix, width, number) for each family a number of the name may belong to: width
    0 for unpadded numbers (`mod_9`, `mod_10`), else the padded width (`pkg_07`, `pkg_10`)."""
    out = []
    for m in _DIGITS.finditer(name):
        d = m.group()
        for width in ((len(d),) if d.startswith("0") and len(d) > 1 else (0, len(d))):
            out.append((name[:m.start()], name[m.end():], width, int(d)))
    return out


def fold(names: list[str]) -> list[str]:
    """The names in order of first appearance, each family's consecutive runs of MIN_RUN or more
    written `first…last` where the run's first name stood, then MIN_RUN or more names sharing an
    extension written `{a,b,c}.ext` where the first of them stood."""
    return _by_extension(_runs(names))


def _extension(name: str) -> str | None:
    """From the first dot after the stem (`.cpython-311.pyc`, `.tar.gz`); None for a directory,
    a run, a dot-file or a name that a brace list could not hold."""
    if name.endswith("/") or RANGE in name or any(c in name for c in "{},"):
        return None
    dot = name.find(".", 1)
    return name[dot:] if dot > 0 else None


def _by_extension(items: list[str]) -> list[str]:
    groups: dict[str, list[str]] = {}
    for it in items:
        ext = _extension(it)
        if ext is not None:
            groups.setdefault(ext, []).append(it)
    out = []
    for it in items:
        ext = _extension(it)
        members = groups.get(ext) if ext is not None else None
        if not members or len(members) < MIN_RUN:
            out.append(it)
        elif members[0] == it:
            out.append("{" + ",".join(m[:-len(ext)] for m in members) + "}" + ext)
    return out


def _runs(names: list[str]) -> list[str]:
    keys = {n: _keys(n) for n in names}
    at = {n: i for i, n in reversed(list(enumerate(names)))}
    # a name joins the family (prefix, suffix, width) that most names share: `mod_12.cpython-311.pyc`
    # belongs with `mod_13.cpython-311.pyc`, not with every `*.cpython-<N>.pyc`
    size = Counter(k[:3] for n in dict.fromkeys(names) for k in keys[n])
    family: dict[str, tuple[str, str, int]] = {}
    for n in dict.fromkeys(names):
        best = max(keys[n], key=lambda k: size[k[:3]], default=None)
        if best is not None and size[best[:3]] >= MIN_RUN:
            family[n] = best[:3]
    members: dict[tuple, list[tuple[int, str]]] = {}
    for n, fam in family.items():
        num = next(k[3] for k in keys[n] if k[:3] == fam)
        members.setdefault(fam, []).append((num, n))
    replace: dict[str, str | None] = {}        # first name of a run -> the run; other members -> None
    for fam, nums in members.items():
        nums = sorted(set(nums))
        run: list[tuple[int, str]] = []
        for item in [*nums, None]:
            if item is not None and run and item[0] == run[-1][0] + 1 \
                    and (fam[2] == 0 or len(str(item[0])) <= fam[2]):
                run.append(item)
                continue
            if len(run) >= MIN_RUN:
                first = min(run, key=lambda x: at[x[1]])[1]
                for _, n in run:
                    replace[n] = None
                replace[first] = f"{run[0][1]}{RANGE}{run[-1][1]}"
            run = [item] if item is not None else []
    out = []
    for n in dict.fromkeys(names):
        if n not in replace:
            out.append(n)
        elif replace[n] is not None:
            out.append(replace[n])
    return out


def expand(item: str) -> list[str]:
    """The names one written item stands for (a `{a,b}.ext` list, a `first…last` run, or the name)."""
    if item.startswith("{") and "}" in item:
        stems, ext = item[1:].split("}", 1)
        return [s + ext for s in stems.split(",")]
    if RANGE not in item:
        return [item]
    first, last = item.split(RANGE, 1)
    for a, b in zip(_DIGITS.finditer(first), _DIGITS.finditer(last)):
        prefix, suffix = first[:a.start()], first[a.end():]
        if (prefix, suffix) == (last[:b.start()], last[b.end():]) and int(a.group()) <= int(b.group()):
            width = len(a.group()) if a.group().startswith("0") else 0
            return [f"{prefix}{str(n).zfill(width)}{suffix}" for n in range(int(a.group()), int(b.group()) + 1)]
    return [item]
