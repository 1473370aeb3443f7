"""The service's area classes by name, each module imported when its class is first
named: ``areas.Upkeep`` loads ``episodic.service.upkeep`` then, not when the facade is
imported. A command that recalls never loads upkeep, editing or the journal search;
one that edits a memory never loads the recall engine's areas."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from episodic.lazy import load as _load

if TYPE_CHECKING:
    from episodic.service.decisions import Decisions
    from episodic.service.editing import Editing
    from episodic.service.journal import Journal
    from episodic.service.operations import Operations
    from episodic.service.recalling import Recalling
    from episodic.service.superseding import Superseding
    from episodic.service.upkeep import Upkeep
    from episodic.service.writing import Writing

_HOMES = {
    "Decisions": "episodic.service.decisions",
    "Editing": "episodic.service.editing",
    "Journal": "episodic.service.journal",
    "Operations": "episodic.service.operations",
    "Recalling": "episodic.service.recalling",
    "Superseding": "episodic.service.superseding",
    "Upkeep": "episodic.service.upkeep",
    "Writing": "episodic.service.writing",
}


def __getattr__(name: str) -> Any:
    return _load(__name__, _HOMES, globals(), name)


__all__ = [
    "Decisions",
    "Editing",
    "Journal",
    "Operations",
    "Recalling",
    "Superseding",
    "Upkeep",
    "Writing",
]
