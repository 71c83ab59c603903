"""The values every door hands the engine: one Observation (what ran or was read, its bytes, the
client's output limit, the intent, the session) and the client Limit inside it.

Not responsible for finding these facts (the doors and capsule/agents do) or for acting on them
(the engine). Invariant: plain immutable data; nothing here imports capsule or does I/O.
"""

from __future__ import annotations

# Named tuples, not dataclasses: every door builds these on every tool call, and a cold `ctx run`
# imports this module before it knows whether there is output at all. A frozen dataclass generates
# and compiles its methods when the class is made (~1 ms each, plus ~7 ms to import dataclasses and
# inspect); a named tuple is immutable, compares and prints the same way, and costs ~0.15 ms.
from collections import namedtuple


class Limit(namedtuple("Limit", ("client", "model", "unit", "cap", "margin", "context", "head", "tail", "line_chars"),
                       defaults=(1.0, 4, 30, 20, 2000))):
    """An agent client's own cap on one tool output, and how capsule shapes an output to fit it.

    client: claude | codex;  unit: chars | bytes, how the client measures an output;
    cap: an output over this is previewed / truncated by the client;
    margin: the share of the cap one shaped emission may take;
    context, head, tail, line_chars: the fit shape (agents/data/client_limits.toml [shape]): lines
    around an error, lines kept from the head and the tail, characters of one kept line."""

    __slots__ = ()

    def size(self, text: str) -> int:
        return len(text) if self.unit == "chars" else len(text.encode("utf-8", "surrogateescape"))

    def budget(self) -> int:
        """What capsule lets one shaped emission (both streams, footer included) take."""
        return int(self.cap * self.margin)


class Part(namedtuple("Part", ("kind", "text", "data", "media_type"), defaults=("", b"", ""))):
    """One piece of what a door sends for an image or a PDF: kind "text" (its text) or "image" (its
    bytes and media type). The media layer makes them, the engine's emission carries them, the
    proxy's memo stores them and the doors write them into their wire format."""

    __slots__ = ()


class Media(namedtuple("Media", ("model", "api", "table", "context_mode", "workspace", "media_type", "pages",
                                 "sent_images"),
                       defaults=(None, "anthropic", (), None, None, None, None, None))):
    """What the media layer needs beside an image's or a PDF's bytes, as the door resolved it.

    model: the target model (its family's cap and formula);
    api: anthropic | openai, the default family when the model is unknown;
    table: the role's [context.media] table, as items; context_mode: the role's [context] mode (the
    media mode follows it); workspace: where a screenshot's source file may be found;
    media_type: as the client labelled the bytes; pages: a PDF read as a page range (a tuple of ints);
    sent_images: ... and sent by the client as these page images (a tuple of bytes)."""

    __slots__ = ()


class Request(namedtuple("Request", ("tool", "root", "target", "mode", "fresh", "scope", "intent", "lines", "grep",
                                     "k", "section", "model", "media", "prompt", "edits"),
                         defaults=("auto", False, "", "", "", "", 10, "", None, (), None, ()))):
    """One read-door tool call, as the door received it (capsule/engine_read.py answers it).

    tool: read | media | search | doc | expand;  root: the workspace;  target: the path, query, document or
    handle;  mode: a read mode (auto, full, signatures, lines:A-B, section:H, anchored);  fresh: no
    stub;  scope: the stub scope ("" = unknown: a whole read, no stub);  intent: the step's goal;
    lines, grep: an expansion's selection;  k: how many search hits;  section: a document's section;
    model, media: for an image or PDF read, the agent's model and the role's [context.media] table (items);
    prompt, edits: the user's last prompt and the session's recent edits, as for an Observation."""

    __slots__ = ()


_OBSERVATION = (
    ("raw", b""),
    ("command", None),       # what ran (a shell line) or what was read ("ctx_read PATH MODE")
    ("stream", "stdout"),    # stdout | stderr | content
    ("exit_code", None),
    ("intent", None),        # the step's goal, as the door resolved it
    ("scope", None),         # the session (conversation, thread) the output belongs to
    ("limit", None),         # the client's cap (a Limit), as the door resolved it
    ("budget", None),        # what this emission may take of limit (both streams share one)
    ("path", None),
    ("cwd", None),           # where the command ran (a project's trusted filters live there)
    ("duration_ms", None),
    ("mode", None),          # the door's mode override; else the engine's
    ("languages", ()),
    ("spool", None),         # a seekable binary file
    ("size", 0),
    ("digest", ""),
    ("view", None),          # what the door sends
    ("would_view", None),    # what it would send when active (a passive door counts, changes nothing)
    ("transform", None),     # with view: the door's name for what it did ("read:signatures")
    ("handle", None),        # with view: the archived original it was cut from (a task-cut read)
    ("media", None),         # an image or a PDF (a Media): capsule/engine_media.py answers it
    ("request", None),       # a read door's tool call (a Request): Engine.request answers it
    ("prompt", None),        # the user's last prompt in this session, as the door resolved it (redacted)
    ("edits", ()),           # the session's recent edits, newest first: "path\nnew text" each (redacted)
)


class Observation(namedtuple("Observation", [name for name, _ in _OBSERVATION],
                             defaults=[default for _, default in _OBSERVATION])):
    """One thing the agent is about to see. `raw` holds the bytes, or `spool` (a seekable file of
    `size` bytes whose first 24 hex of blake3 are `digest`) when a door spooled a large output.
    `view`: the text a door already shaped on the agent's explicit request (a ctx_read mode): the
    engine records it as sent, under `transform`, and changes nothing.
    (Immutable: one observation is one fact; a door that learns more builds a new one.)"""

    __slots__ = ()
