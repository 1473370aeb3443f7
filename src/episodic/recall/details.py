"""Seed 003's detail levels: which recalled episodes come with the messages they were
made from.

- ``none``: no episode does;
- ``auto`` (the default): the key moments (surprise >= 0.7) ranked in the top
  ``AUTO_DETAIL_RANK``, as seed 003's tool results show them;
- ``full``: every recalled episode.

At most ``MAX_DETAIL_MESSAGES`` messages an episode, the first ones: details show what
happened, they are not a transcript dump.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from episodic.errors import InvalidInput
from episodic.model import Event, Hit
from episodic.policy import EPISODE_TYPE

DETAIL_LEVELS = ("none", "auto", "full")
DEFAULT_DETAIL = "auto"
AUTO_DETAIL_RANK = 2
MAX_DETAIL_MESSAGES = 12


def check_detail(level: str | None) -> str:
    if level is None:
        return DEFAULT_DETAIL
    if level not in DETAIL_LEVELS:
        raise InvalidInput("detail", f"unknown detail level {level!r}; use none, auto or full")
    return level


def wants_details(hits: Sequence[Hit], level: str) -> list[int]:
    """The positions (0-based) of the hits that get their messages at ``level``."""
    if level == "none":
        return []
    return [
        i
        for i, h in enumerate(hits)
        if h.memory.source_event_ids
        and (
            (level == "full" and h.memory.type == EPISODE_TYPE)
            or (level == "auto" and i < AUTO_DETAIL_RANK and h.moment is not None)
        )
    ]


def with_details(
    hits: Sequence[Hit], level: str, events_of: Callable[[Sequence[str]], list[Event]]
) -> list[Hit]:
    """``hits`` with the messages of those ``wants_details`` picks (``events_of`` reads
    events of the hits' workspace by id, in the order asked)."""
    chosen = wants_details(hits, level)
    if not chosen:
        return list(hits)
    wanted = [e for i in chosen for e in hits[i].memory.source_event_ids[:MAX_DETAIL_MESSAGES]]
    found = {e.id: e for e in events_of(wanted)}
    out = list(hits)
    for i in chosen:
        ids = hits[i].memory.source_event_ids[:MAX_DETAIL_MESSAGES]
        out[i] = replace(hits[i], details=tuple(found[e] for e in ids if e in found))
    return out
