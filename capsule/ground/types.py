"""The values every door hands the engine: one Observation (what ran or was read, its bytes, the
client's output limit, the intent, the session) and the client Limit inside it.

Not responsible for finding these facts (the doors and capsule/agents do) or for acting on them
(the engine). Invariant: plain frozen data; nothing here imports capsule or does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from io import BufferedIOBase


@dataclass(frozen=True)
class Limit:
    """An agent client's own cap on one tool output, and how capsule shapes an output to fit it."""

    client: str          # claude | codex
    model: str | None
    unit: str            # chars | bytes: how the client measures an output
    cap: int             # an output over this is previewed / truncated by the client
    margin: float = 1.0  # the share of the cap one shaped emission may take
    context: int = 4     # fit shape (agents/data/client_limits.toml [shape]): lines around an error,
    head: int = 30       # lines kept from the head and the tail, characters of one kept line
    tail: int = 20
    line_chars: int = 2000

    def size(self, text: str) -> int:
        return len(text) if self.unit == "chars" else len(text.encode("utf-8", "surrogateescape"))

    def budget(self) -> int:
        """What capsule lets one shaped emission (both streams, footer included) take."""
        return int(self.cap * self.margin)


@dataclass(frozen=True)
class Media:
    """What the media layer needs beside an image's or a PDF's bytes, as the door resolved it."""

    model: str | None = None             # the target model (its family's cap and formula)
    api: str = "anthropic"               # anthropic | openai: the default family when the model is unknown
    table: tuple[tuple[str, object], ...] = ()   # the role's [context.media] table, as items
    context_mode: str | None = None      # the role's [context] mode (the media mode follows it)
    workspace: str | None = None         # where a screenshot's source file may be found
    media_type: str | None = None        # as the client labelled the bytes
    pages: tuple[int, ...] | None = None     # a PDF read as a page range
    sent_images: tuple[bytes, ...] | None = None   # ... and sent by the client as these page images


@dataclass(frozen=True)
class Observation:
    """One thing the agent is about to see. `raw` holds the bytes, or `spool` (a seekable file of
    `size` bytes whose first 24 hex of blake3 are `digest`) when a door spooled a large output.
    `view`: the text a door already shaped on the agent's explicit request (a ctx_read mode): the
    engine records it as sent, under `transform`, and changes nothing."""
    # (frozen: one observation is one fact; a door that learns more builds a new one)

    raw: bytes = b""
    command: str | None = None       # what ran (a shell line) or what was read ("ctx_read PATH MODE")
    stream: str = "stdout"           # stdout | stderr | content
    exit_code: int | None = None
    intent: str | None = None        # the step's goal, as the door resolved it
    scope: str | None = None         # the session (conversation, thread) the output belongs to
    limit: Limit | None = None       # the client's cap, as the door resolved it
    budget: int | None = None        # what this emission may take of limit (both streams share one)
    path: str | None = None
    cwd: str | None = None           # where the command ran (a project's trusted filters live there)
    duration_ms: float | None = None
    mode: str | None = None          # the door's mode override; else the engine's
    languages: tuple[str, ...] = ()
    spool: BufferedIOBase | None = None
    size: int = 0
    digest: str = ""
    view: str | None = None          # what the door sends
    would_view: str | None = None    # what it would send when active (a passive door counts, changes nothing)
    transform: str | None = None     # with view: the door's name for what it did ("read:signatures")
    media: Media | None = None       # an image or a PDF: capsule/engine_media.py answers it
