"""The table of typed transforms: transform id -> "module:function", imported on first use.

Not responsible for choosing a transform (classify.py does) nor for guarding it (guard.py).
Invariant: importing this module imports no transform; an unknown id raises KeyError.
"""

from __future__ import annotations

import importlib

from capsule.observe.transform_types import TransformFn

# Keep sorted by id. Each target is a pure (text, Context) -> TransformResult.
TRANSFORMS: dict[str, str] = {
    "ansi_strip": "capsule.observe.transforms.basic:ansi_strip",
    "line_budget": "capsule.observe.transforms.basic:line_budget",
    "run_collapse": "capsule.observe.transforms.basic:run_collapse",
    "default": "capsule.observe.transforms.basic:default_text",
    "filter": "capsule.observe.filters.filter_engine:apply",
    # the content door (capsule/observe/content)
    "binary": "capsule.observe.content.binary:describe",
    "html": "capsule.observe.content.markdown:html",
    "json": "capsule.observe.content.json_crusher:crush",
    "logs": "capsule.observe.content.log_lines:cluster",
    "lossless": "capsule.observe.content.gate:lossless",
    "markdown": "capsule.observe.content.markdown:slice_markdown",
    "outline": "capsule.observe.content.outline:transform",
    "prose": "capsule.observe.content.prose:shrink",
    "read_file": "capsule.observe.transforms.read:read_file",
    "read_view": "capsule.observe.transforms.read:view",
    "reflex": "capsule.observe.content.reflex:reflex",
    "search": "capsule.observe.content.search:shape",
    "tabular": "capsule.observe.content.tabular:sample",
    "toml": "capsule.observe.content.yaml_toml:toml",
    "yaml": "capsule.observe.content.yaml_toml:yaml",
}

_loaded: dict[str, TransformFn] = {}


def get(transform_id: str) -> TransformFn:
    fn = _loaded.get(transform_id)
    if fn is None:
        module_name, _, attr = TRANSFORMS[transform_id].partition(":")
        fn = getattr(importlib.import_module(module_name), attr)
        _loaded[transform_id] = fn
    return fn


def register(transform_id: str, target: str) -> None:
    """Add a transform at run time (used by role plug-ins and tests)."""
    TRANSFORMS[transform_id] = target
    _loaded.pop(transform_id, None)
