"""The "filter" transform: find the filter the classifier chose and run it.

Responsible for the filter table (built-in files in filters/data/*.toml, plus trusted
project `.capsule/filters.toml` and role filter files), for delegation, and for running a
filter as TOML stages or as a streaming class. Not responsible for trust decisions
(capsule/policy/trust.py) nor for the marker/footer the pipeline adds.
Invariant: a streaming filter that loses a verbatim-class line, or any filter that grows the
text, yields the original unchanged (a filter that raises is caught by the pipeline, which
emits raw); removals account for every dropped line.
"""

from __future__ import annotations

import importlib
import logging
import os
from pathlib import Path

from capsule.observe import markers
from capsule.observe.filters.spec import FilterError, FilterSpec, parse_file
from capsule.observe.filters.stages import run_stages
from capsule.observe.filters.streaming import StreamFilter, run_stream
from capsule.observe.transform_types import Context, TransformResult
from capsule.observe.keep import missing

TRANSFORM_ID = "filter"
PROJECT_FILE = Path(".capsule") / "filters.toml"
_log = logging.getLogger("capsule")
# The built-in filters by path: importlib.resources (and the zipfile module it loads) cost ~6 ms of a
# cold `ctx run`, and capsule is always installed as files.
_DATA = Path(__file__).parent / "data"

_builtin: dict[str, FilterSpec] | None = None
# Trusted project/role filters by id "NAME@SHA12" (the file's pinned digest): an id names
# exactly one verified version of one file, so concurrent projects never see each other's.
_loaded: dict[str, FilterSpec] = {}
_extra_sources: dict[str, tuple[str, dict[str, FilterSpec]]] = {}   # path -> (sha256, {id: spec})
_role_paths: list[tuple[str, str | None]] = []    # (path, pin from the role manifest or None)
MAX_LOADED = 512


def builtin_filters() -> dict[str, FilterSpec]:
    """Every built-in filter, parsed once from the package's data files."""
    global _builtin
    if _builtin is None:
        table: dict[str, FilterSpec] = {}
        data = _DATA
        for entry in sorted(data.iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".toml"):
                for name, spec in parse_file(entry.read_bytes(), f"filters/data/{entry.name}").items():
                    if name in table:
                        raise FilterError(f"filters/data/{entry.name}: filter {name!r} also defined in {table[name].source}")
                    table[name] = spec
        _builtin = table
    return _builtin


def _load_extra_file(path: str, pin: str | None = None) -> dict[str, FilterSpec]:
    """Trusted bytes only: read once, verify the pin, parse exactly those bytes. {id: spec}."""
    from capsule.policy.trust import read_trusted  # noqa: PLC0415 - bench_startup "ctx run cold, no engine"

    data, digest = read_trusted(path, pin)
    if data is None:
        return {}
    cached = _extra_sources.get(path)
    if cached and cached[0] == digest:
        return cached[1]
    try:
        filters = {f"{name}@{digest[:12]}": spec for name, spec in parse_file(data, path, linear=True).items()}
    except FilterError as exc:
        _log.warning("filter file %s not loaded: %s", path, exc)
        return {}
    if len(_loaded) > MAX_LOADED:
        _loaded.clear()
    _loaded.update(filters)
    _extra_sources[path] = (digest, filters)
    return filters


def set_role_filters(entries) -> None:
    """Role filter files (`[context.filters].extra`): paths, or {"path", "sha256"} entries whose
    pin comes from the manifest. A path alone must be pinned with `capsule ctx trust`."""
    out: list[tuple[str, str | None]] = []
    for entry in entries:
        if isinstance(entry, dict):
            out.append((str(entry["path"]), entry.get("sha256")))
        elif isinstance(entry, tuple):
            out.append((str(entry[0]), entry[1]))
        else:
            out.append((str(entry), None))
    _role_paths[:] = out


def refresh_extra(cwd: str | None = None) -> dict[str, FilterSpec]:
    """The trusted filters active in `cwd`: the project's first, then the role's. {id: spec}."""
    table: dict[str, FilterSpec] = {}
    project = Path(cwd or os.getcwd()) / PROJECT_FILE
    if project.is_file():
        table.update(_load_extra_file(str(project)))
    for path, pin in _role_paths:
        table.update(_load_extra_file(path, pin))
    return table


_parsed_files: dict[str, dict[str, FilterSpec]] = {}   # built-in files parsed one at a time (get_filter)
_file_bytes: dict[str, bytes] = {}


def _builtin_filter(name: str) -> FilterSpec | None:
    """One built-in filter, parsing only the file whose `[filters.NAME]` header names it: a cold
    `ctx run` needs one filter, not the ~450 regexes of all of them (builtin_filters() checks the
    set as a whole, names defined twice included). Any other spelling of the header: the full parse."""
    if _builtin is not None:
        return _builtin.get(name)
    header = f"[filters.{name}]".encode()
    if not _file_bytes:
        data = _DATA
        _file_bytes.update((e.name, e.read_bytes()) for e in sorted(data.iterdir(), key=lambda e: e.name)
                           if e.name.endswith(".toml"))
    for file, raw in _file_bytes.items():
        if file not in _parsed_files:
            if not (raw.startswith(header) or b"\n" + header in raw):
                continue
            _parsed_files[file] = parse_file(raw, f"filters/data/{file}")
        if name in _parsed_files[file]:
            return _parsed_files[file][name]
    return builtin_filters().get(name)


def get_filter(filter_id: str) -> FilterSpec | None:
    """A built-in filter by name, or a trusted project/role filter by its NAME@SHA12 id."""
    if "@" in filter_id:
        return _loaded.get(filter_id)
    return _builtin_filter(filter_id)


def match_extra(command: str, active: dict[str, FilterSpec]) -> str | None:
    """The id of the first active trusted filter whose `match` claims this command."""
    for filter_id, spec in active.items():
        if any(p.search(command) for p in spec.match):
            return filter_id
    return None


def _streaming_class(spec: FilterSpec) -> type[StreamFilter]:
    module_name, _, attr = spec.streaming.partition(":")
    if not module_name.startswith("capsule.observe.filters."):
        raise FilterError(f"{spec.source}: filter {spec.name!r}: streaming classes must live in capsule.observe.filters")
    return getattr(importlib.import_module(module_name), attr)


def run_filter(spec: FilterSpec, text: str, exit_code: int | None, command: str | None = None,
               _depth: int = 0, intent: str | None = None, cues=None) -> tuple[str, list, FilterSpec]:
    """Run one filter (following `delegate`); returns (text, removals, filter actually run)."""
    if spec.delegate and _depth < 3:
        for when, target in spec.delegate:
            if when.search(text):
                other = get_filter(target)
                if other is not None:
                    return run_filter(other, text, exit_code, command, _depth + 1, intent, cues)
    if spec.streaming:
        flt = _streaming_class(spec)()
        flt.command, flt.spec = command, spec
        flt.options = dict(spec.options)
        flt.intent = intent
        flt.cues = cues
        out, removals, _ = run_stream(flt, text, exit_code)
    else:
        out, removals, _ = run_stages(spec, text, exit_code, intent)
    return out, removals, spec


def apply(text: str, ctx: Context) -> TransformResult:
    """Transform entry point (registry id "filter")."""
    spec = get_filter(ctx.filter_id or "") if ctx.filter_id else None
    if spec is None:
        return TransformResult(text, TRANSFORM_ID, lossless=True, notes=[f"no filter {ctx.filter_id!r}"])
    out, removals, ran = run_filter(spec, text, ctx.exit_code, ctx.command, intent=ctx.intent,
                                   cues=ctx.cues)
    if ran.streaming and missing(text, out, ctx.exit_code):    # TOML stages protect these by construction
        return TransformResult(text, TRANSFORM_ID, lossless=True,
                               notes=[f"filter {ran.name} lost an error line; kept raw"])
    if len(out) > len(text) and text.strip():
        return TransformResult(text, TRANSFORM_ID, lossless=True, notes=[f"filter {ran.name} did not shrink"])
    notes = [f"filter {ran.name}"]
    if ran.streaming and removals and _streaming_class(ran).ranged_markers:
        notes.append(markers.RANGED_NOTE)     # its cut is marked in the one contract already (streaming.py)
    return TransformResult(out, TRANSFORM_ID, removals=removals, lossless=not removals and out == text,
                           notes=notes)
