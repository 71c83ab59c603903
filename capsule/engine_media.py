"""The engine's media stage: a media Observation (an image or a PDF a door saw) -> one Emission whose
`parts` are what to send, the original archived under its handle; Engine.observe records its one
ledger row (tokens before and after by the family's formula).

Not responsible for finding media in a door's wire format (the proxy and MCP doors do) or for pixels
(capsule/observe/media). Invariant (fail open): never raises; off, an unknown format or any fault ->
a raw, unrecorded emission (parts None: the door sends the original; a warning is logged for faults,
and a refusal's reason is the emission's first `warnings` line, for a door that must say why);
measure -> parts None and a row of what would have been sent.
"""

from __future__ import annotations

import logging
from pathlib import Path

from capsule.ground import tokens
from capsule.ground.types import Media, Observation, Part
from capsule.observe import media, pipeline
from capsule.observe.media import caps, media_budget
from capsule.observe.media import image as media_image
from capsule.policy import media_policy as media_policy
from capsule.retrieve import workspace as workspace_files

log = logging.getLogger("capsule.media")


def observation(raw: bytes, *, door: str, path: str | None, scope: str | None, media_type: str | None,
                model: str | None, api: str, table: dict | None, context_mode: str | None,
                workspace=None, pages=None, sent_images=None) -> Observation | None:
    """The Observation a door hands Engine.observe for an image or a PDF; None for other bytes."""
    kind = media.kind_of(media_type, raw)
    if kind is None:
        return None
    return Observation(raw, command=f"{door}:{kind} {path or media_type or ''}".strip(), stream=kind, path=path,
                       scope=scope, media=Media(model=model, api=api, table=tuple((table or {}).items()),
                                                context_mode=context_mode,
                                                workspace=str(workspace) if workspace is not None else None,
                                                media_type=media_type, pages=tuple(pages) if pages else None,
                                                sent_images=tuple(sent_images) if sent_images else None))


def emission(engine, obs: Observation) -> pipeline.Emission:
    """The engine's answer to a media observation; a raw, unrecorded emission when off or failing."""
    m = obs.media
    policy = media_policy.from_table(dict(m.table), m.context_mode)
    if policy.mode == "off":
        return pipeline.raw_emission(obs.raw)
    try:
        fam = media.family_for(m.model, m.api, policy)
        result = media.transform(obs.raw, m.media_type, fam, policy, workspace=m.workspace, path=obs.path,
                                 pages=list(m.pages) if m.pages else None)
        if m.sent_images is not None:
            result.tokens_before = sum(caps.tokens(fam, *media.image.probe(img)[1:]) for img in m.sent_images)
            result.details["priced_as"] = f"the client's {len(m.sent_images)} page images"
    except media.MediaError as exc:
        log.info("media: %s sent as it came (%s)", obs.command, exc)
        refused = pipeline.raw_emission(obs.raw)
        refused.warnings.append(str(exc))
        return refused
    except Exception as exc:  # noqa: BLE001 - the media layer fails open
        log.warning("media: transform failed on %s (%r); the original is sent", obs.command, exc)
        failed = pipeline.raw_emission(obs.raw)
        failed.warnings.append(f"the media transform failed ({type(exc).__name__})")
        return failed
    active = policy.active and result.parts is not None
    handle, parts, after = None, result.parts, result.tokens_after
    if active:
        try:
            handle = engine.archive.put(obs.raw, obs.command)
        except Exception as exc:  # noqa: BLE001 - an original that cannot be archived is never replaced
            log.warning("media: archive failed (%r); the original is sent", exc)
            return pipeline.raw_emission(obs.raw)
        parts, after = _with_handle(parts, handle, after)
    data = b"".join(p.data or p.text.encode("utf-8", "surrogatepass") for p in parts) if active else obs.raw
    return pipeline.Emission(
        data, result.tokens_before, after if active else None, "media", f"media:{result.kind}:{result.action}",
        handle=handle, applied=active, known_would_emit=after, raw_bytes=len(obs.raw),
        token_label=caps.label(result.family), ledger_manifest=[],
        ledger_reports=[{"name": "media", "family": result.family.name, "policy": policy.reason, **result.details}],
        parts=parts if active else None)


def _with_handle(parts: list[Part], handle: str, after: int) -> tuple[list[Part], int]:
    """Text answers (a PDF's text, a pointer) end with the original's handle, as every shrunk output does."""
    footer = f"\n[original: capsule ctx expand <<ccr:{handle}>>]"
    for i, p in enumerate(parts):
        if p.kind == "text":
            out = list(parts)
            out[i] = Part("text", p.text.rstrip("\n") + footer)
            return out, after + tokens.count(footer)
    return parts, after


def refusal(data: bytes, rel: str, table: dict, context_mode: str | None, warnings=()) -> str | None:
    """Why a PDF read sends nothing, for the door's error: the media layer's own reason when it is on
    and refused this PDF (`warnings`: the emission's, a 10,000-page or encrypted PDF, a time budget),
    else that the layer is off or measuring; None for an image (its original is sent unchanged)."""
    if media.kind_of(None, data) != "pdf":
        return None
    policy = media_policy.from_table(table, context_mode)
    if policy.mode == "on":
        why = warnings[0] if warnings else "its text would cost more than the PDF as it is"
        return f"{rel}: this PDF is not served by ctx_read ({why}); read it with the client's own Read tool"
    return (f"{rel} is a PDF and the media layer is {policy.mode} ({policy.reason}); "
            "ctx_read serves its text only when [context.media] is on")


def mime(data: bytes) -> str:
    """An image's media type by its bytes (image/png when they cannot be probed)."""
    try:
        return media_image.probe(data)[0]
    except media_image.MediaError:
        return "image/png"


# ---- what the proxy door asks before and around Engine.observe -------------------------------------
def image_size(data: bytes) -> tuple[int, int] | None:
    """An image's width and height by its bytes; None when they cannot be probed."""
    try:
        _, w, h = media_image.probe(data)
    except (media_image.MediaError, ValueError):
        return None
    return w, h


def deadline(seconds: float):
    """A context in which media work (and the worker threads it starts) stops by `seconds` from now:
    the proxy's request budget, so an abandoned worker does not decode on."""
    return media_budget.deadline(seconds)


def layer_on(table: dict | None, context_mode: str | None) -> bool:
    """Whether the media layer looks at media at all ([context.media] or the mode say off: no)."""
    return media_policy.from_table(table, context_mode).mode != "off"


def pdf_as_text(table: dict | None, context_mode: str | None) -> bool:
    """Whether a PDF goes as its text (the layer on or measuring, with pdf = "text")."""
    policy = media_policy.from_table(table, context_mode)
    return policy.mode != "off" and policy.pdf == "text"


def workspace_file(root: Path, path: str, max_bytes: int) -> bytes | None:
    """A file a request names, read only inside the workspace (the path is hostile until checked);
    None, logged, when it is outside, missing or unreadable."""
    try:
        real = workspace_files.resolve(root, path)
        rel = workspace_files.relative(root, real)
        return workspace_files.read_inside(root, real, rel, max_bytes)
    except (workspace_files.WorkspaceError, OSError) as exc:
        log.info("proxy: PDF pages of %s not read (%s); sent as the client's images", path, exc)
        return None
