"""The engine's media entry: one image or PDF a door saw -> what to send, the original archived under
its handle, one ledger row with the tokens before and after by the family's formula.

Not responsible for finding media in a door's wire format (the proxy and MCP doors do) or for pixels
(capsule/observe/media). Kept beside engine.py so the one door contract can take it in whole.
Invariant (fail open): never raises; off, measure, an unknown format or any fault -> parts None and the
door sends the original bytes (a warning is logged for faults).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from capsule.ground import logs
from capsule.ground import tokens
from capsule.measure.ledger import Row
from capsule.observe import media
from capsule.observe.media import caps
from capsule.observe.media.pdf import Part
from capsule.policy.media import MediaPolicy

log = logs.get("capsule.media")


@dataclass
class MediaOutcome:
    parts: list[Part] | None           # None: send the original
    handle: str | None = None
    emission_id: int | None = None
    result: media.Result | None = None


def observe_media(engine, data: bytes, media_type: str | None, *, model: str | None, api: str,
                  policy: MediaPolicy, scope: str | None = None, path: str | None = None,
                  workspace: Path | str | None = None, door: str = "proxy", pages: list[int] | None = None,
                  sent_images: list[bytes] | None = None) -> MediaOutcome:
    """`pages`: the page range a client read of a PDF; `sent_images`: what the client really sent for
    it (its own page images, priced by the family's formula) instead of a document block."""
    if policy.mode == "off" or not data:
        return MediaOutcome(None)
    try:
        fam = media.family_for(model, api, policy)
        result = media.transform(data, media_type, fam, policy, workspace=workspace, path=path, pages=pages)
        if sent_images is not None:
            result.tokens_before = sum(caps.tokens(fam, *media.image.probe(img)[1:]) for img in sent_images)
            result.details["priced_as"] = f"the client's {len(sent_images)} page images"
    except media.MediaError as exc:
        log.info("media: %s %s sent as it came (%s)", door, path or media_type, exc)
        return MediaOutcome(None)
    except Exception as exc:  # noqa: BLE001 - the media layer fails open
        log.warning("media: transform failed on %s (%r); the original is sent", path or media_type, exc)
        return MediaOutcome(None)
    command = f"{door}:{result.kind} {path or media_type or ''}".strip()
    active = policy.active and result.parts is not None
    handle = None
    parts = result.parts
    after = result.tokens_after
    if active:
        try:
            handle = engine.archive.put(data, command)
        except Exception as exc:  # noqa: BLE001 - an original that cannot be archived is never replaced
            log.warning("media: archive failed (%r); the original is sent", exc)
            return MediaOutcome(None, result=result)
        parts, after = _with_handle(parts, handle, after)
    emitted_bytes = sum(len(p.data) or len(p.text.encode("utf-8", "surrogatepass")) for p in parts) if active \
        else len(data)
    row = Row(scope=scope or engine.scope, command=command, family="media",
              transform=f"media:{result.kind}:{result.action}", stream=result.kind, mode=policy.mode,
              applied=active, raw_tokens=result.tokens_before,
              emitted_tokens=after if active else result.tokens_before, raw_bytes=len(data),
              emitted_bytes=emitted_bytes, exit_code=None, handle=handle, duration_ms=None,
              token_label=caps.label(result.family), would_emit_tokens=after,
              reports=[{"name": "media", "family": result.family.name, "policy": policy.reason, **result.details}])
    emission_id = engine.record(row)
    return MediaOutcome(parts if active else None, handle, emission_id, result)


def _with_handle(parts: list[Part], handle: str, after: int) -> tuple[list[Part], int]:
    """Text answers (a PDF's text, a pointer) end with the original's handle, as every shrunk output does."""
    footer = f"\n[original: capsule ctx expand <<ccr:{handle}>>]"
    for i, p in enumerate(parts):
        if p.kind == "text":
            out = list(parts)
            out[i] = Part("text", p.text.rstrip("\n") + footer)
            return out, after + tokens.count(footer)
    return parts, after
