"""Classify a command line: lex it, peel prefixes, and find the one filter for its output.

Not responsible for content sniffing (classify.sniff_content) nor for running filters.
Invariant: an unattestable line (backticks, $( ), file redirects, heredocs) is passthrough;
a compound line gets a filter only when every segment whose output reaches the agent is
claimed by a rule (built-ins such as `cd` are ignored); the last segment's filter wins.
A segment with content or unknown output makes the whole line None (content sniffing).
"""

from __future__ import annotations

from capsule.observe import lexer
from capsule.observe.transform_types import Classification
from capsule.observe.rules import Rule, match, normalise
from capsule.observe.filters import filter_engine

TRANSFORM_ID = "filter"


def classify_command_line(command: str, cwd: str | None = None) -> Classification | None:
    try:
        lexed = lexer.lex(command)
    except lexer.LexError as exc:
        return Classification("unknown", passthrough=True, reason=f"unparseable command line: {exc}")
    if lexed.unattestable:
        return Classification("unknown", passthrough=True,
                              reason="unattestable: " + ", ".join(lexed.unattestable))
    extra = filter_engine.refresh_extra(cwd)
    chosen: list[tuple[str, str, str, str]] = []      # (filter, family, reason, transform)
    for segment in lexed.segments:
        stage = segment.visible
        words = normalise(stage.words)
        if extra:
            filter_id = filter_engine.match_extra(" ".join(words), extra)
            if filter_id is not None:
                spec = extra[filter_id]
                chosen.append((filter_id, spec.family or "custom", f"trusted filter {spec.name} ({spec.source})",
                               TRANSFORM_ID))
                continue
        found = match(stage.words)
        if found == "ignore":
            continue
        if isinstance(found, Rule):
            chosen.append((found.filter, found.family, f"rule {found.pattern.pattern}", found.transform))
            continue
        return None     # content or unknown output reaches the agent: let content sniffing decide
    if not chosen:
        return None
    name, family, reason, transform = chosen[-1]
    if len({c[0] for c in chosen}) != 1:
        # several tools print: the last one's filter (it also keeps every error line of the others)
        reason = f"last of {len(chosen)} segments: {reason}"
    if transform != TRANSFORM_ID:
        return Classification(family, transform, reason=reason)
    return Classification(family, TRANSFORM_ID, filter_id=name, reason=reason)
