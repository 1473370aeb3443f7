"""The service's editing area: correcting a memory and reading what it said before.

An edit may change what a memory says (``content``), how much it matters
(``importance``) and the structured data it carries (``payload``). Its id, scope,
timestamps and type are not editable: the id and scope are where it belongs and who may
see it, its time is when it happened, and its type decides how it was admitted, scored
and derived (a message or an episode is what a conversation produced). Each edit keeps
the version it replaces in the memory's history, with when and by whom (an API key's
id, ``python`` or ``cli``) it was replaced; an edit that changes nothing keeps nothing.

New text is searchable by keyword at once (both backends index the row as it changes)
and embedded again before ``update`` returns when an embedder is there; if that fails
the old vector is already gone, so recall finds the memory by keyword only until the
indexer's next sweep embeds it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from episodic.errors import InvalidInput
from episodic.model import Memory, ScopeFilter
from episodic.service.context import Context
from episodic.service.operations import Operations
from episodic.service.writing import Writing
from episodic.store.service import MemoryVersion
from episodic.tenancy import Principal

# Who made an edit when no API key did.
PYTHON_EDITOR = "python"
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class Version:
    """One version of a memory, as ``history`` lists them. ``written_by`` is None for
    the text the memory was created with; ``replaced_*`` are None for the current one."""

    version: int
    current: bool
    content: str
    importance: float
    payload: Mapping[str, Any]
    written_at: datetime | None
    written_by: str | None
    replaced_at: datetime | None
    replaced_by: str | None


def versions(memory: Memory, replaced: Sequence[MemoryVersion]) -> list[Version]:
    """The memory's versions, newest (the current one) first, from the versions edits
    replaced (newest first): each one was written when the one before it was replaced."""
    n = len(replaced) + 1
    out: list[Version] = []
    for i in range(n):
        this = None if i == 0 else replaced[i - 1]
        before = replaced[i] if i < len(replaced) else None
        out.append(
            Version(
                version=n - i,
                current=this is None,
                content=memory.content if this is None else this.content,
                importance=memory.importance if this is None else this.importance,
                payload=dict(memory.payload if this is None else this.payload),
                written_at=memory.created_at if before is None else before.replaced_at,
                written_by=None if before is None else before.replaced_by,
                replaced_at=None if this is None else this.replaced_at,
                replaced_by=None if this is None else this.replaced_by,
            )
        )
    return out


def version_json(v: Version) -> dict[str, Any]:
    def when(at: datetime | None) -> str | None:
        return None if at is None else at.isoformat()

    return {
        "version": v.version,
        "current": v.current,
        "content": v.content,
        "importance": v.importance,
        "payload": dict(v.payload),
        "written_at": when(v.written_at),
        "written_by": v.written_by,
        "replaced_at": when(v.replaced_at),
        "replaced_by": v.replaced_by,
    }


class Editing:
    def __init__(self, ctx: Context, writing: Writing, operations: Operations) -> None:
        self.ctx = ctx
        self.writing = writing
        self.operations = operations

    def update(
        self,
        memory_id: str,
        *,
        workspace: str,
        content: str | None = None,
        importance: float | None = None,
        payload: Mapping[str, Any] | None = None,
        by: str = PYTHON_EDITOR,
    ) -> Memory:
        """Correct a memory: new ``content``, ``importance`` (0-1; sets the base the
        decay starts from too) and/or ``payload`` (replaced whole); None leaves a field
        as it is. The version it
        replaces goes to its history (``history``); an edit that changes nothing keeps
        no version. New content is re-embedded (at once when an embedder is there) and
        re-indexed for keyword search. ``by`` records who edited it."""
        if content is None and importance is None and payload is None:
            raise InvalidInput("content", "nothing to change: give content, importance or payload")
        if not isinstance(by, str) or not by.strip():
            raise InvalidInput("by", "name who makes the edit")
        old = self.operations.memory(ScopeFilter(workspace_id=workspace), memory_id)
        new = old
        if content is not None:
            from episodic.write.extract import content_hash  # with the first edit only

            text = self._content(content)
            new = replace(
                new,
                content=text,
                content_hash=None if old.content_hash is None else content_hash(text),
            )
        if importance is not None:
            weight = _importance(importance)
            if weight != old.importance:
                new = replace(new, importance=weight, base_importance=weight)
        if payload is not None:
            new = replace(new, payload=_payload(payload))
        if not self.ctx.store.revise_memory(new, by=by, at=self.ctx.clock()):
            return old
        if new.content != old.content:
            self.writing.index_one(workspace, memory_id)
        return self.ctx.store.get_memory(workspace, memory_id)

    def update_as(
        self,
        caller: Principal,
        memory_id: str,
        *,
        content: str | None = None,
        importance: float | None = None,
        payload: Mapping[str, Any] | None = None,
    ) -> Memory:
        """Correct a memory on behalf of an API key (or an MCP binding): who may forget
        a memory may edit it (an admin key any memory of its workspace, a key bound to
        an agent that agent's own); the edit is recorded as made by the key's id."""
        self.operations.owned_by(caller, memory_id, "update")
        return self.update(
            memory_id,
            workspace=caller.workspace_id,
            content=content,
            importance=importance,
            payload=payload,
            by=caller.key.id,
        )

    def history(self, memory_id: str, *, workspace: str) -> list[Version]:
        """A memory's versions, newest first: the current one (``current`` True), then
        each one an edit replaced, with when and by whom it was written and replaced."""
        return self._history(ScopeFilter(workspace_id=workspace), memory_id)

    def history_as(self, caller: Principal, memory_id: str) -> list[Version]:
        """``history`` of a memory the key can see (``NotFound`` otherwise)."""
        return self._history(caller.reading(), memory_id)

    def _history(self, flt: ScopeFilter, memory_id: str) -> list[Version]:
        memory = self.operations.memory(flt, memory_id)
        return versions(memory, self.ctx.store.memory_history(flt.workspace_id, memory_id))

    def _content(self, value: object) -> str:
        if not isinstance(value, str) or not value.strip():
            raise InvalidInput("content", "required: the memory's new text")
        if "\x00" in value:
            raise InvalidInput("content", "cannot hold a NUL (0x00) character")
        if _SURROGATE.search(value):
            raise InvalidInput("content", "contains text that is not valid UTF-8")
        cap = self.ctx.settings.max_text_chars
        if len(value) > cap:
            raise InvalidInput("content", f"{len(value)} characters is over the cap of {cap}")
        return value


def _importance(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput("importance", "expected a number between 0 and 1")
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise InvalidInput("importance", "must be between 0 and 1")
    return float(value)


def _payload(value: object) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidInput("payload", "expected an object")
    try:
        json.dumps(dict(value), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput("payload", f"not JSON-serialisable: {exc}") from None
    return dict(value)
