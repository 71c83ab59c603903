"""The engine object: role defaults reach every transform's context."""

from __future__ import annotations

from capsule.engine import Engine
from capsule.observe import registry
from capsule.observe.transform_types import TransformResult
from capsule.ground.types import Observation

SEEN: list = []


def _capture(text, ctx):
    SEEN.append(ctx.languages)
    return TransformResult(text, "capture")


def test_role_languages_reach_the_transform(state_dir, monkeypatch):
    registry.register("default", f"{__name__}:_capture")
    try:
        engine = Engine(state_dir, languages=("rust", "go"))
        engine.observe(Observation("".join(f"line {i}\n" for i in range(50)).encode(), command="mystery-tool"))
        engine.observe(Observation("".join(f"line {i}\n" for i in range(50)).encode(), command="mystery-tool",
                       languages=("python",)))
    finally:
        registry.register("default", "capsule.observe.transforms.basic:default_text")
    assert SEEN == [("rust", "go"), ("python",)]
