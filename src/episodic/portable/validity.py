"""A memory's validity in markdown: when it was true and what replaced it.

Written only when it differs from the default, so a file of a memory nothing replaced
reads as before (and exports older than supersession still import)::

    valid_from: '2026-03-01T09:00:00+00:00'     only when not the memory's ts
    valid_to: '2026-03-23T09:00:00+00:00'       when a newer memory replaced it
    superseded_by: card-b                       that memory's id
    supersedes:                                 on the newer memory: what it replaced
    - id: card-a
      decided_by: offline:rule
      reason: same slot, newer value
      decided_at: '2026-03-23T09:00:00+00:00'
      reverted_at: '2026-03-24T10:00:00+00:00'  only when the replacement was undone
      reverted_by: cli                          (the old memory is active again)

A superseded memory keeps its file (``status: superseded``): history is never lost.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from episodic.errors import InvalidInput
from episodic.model import Memory, MemoryStatus
from episodic.portable.fields import text_field, when_field
from episodic.store.supersession import Supersession

# Frontmatter keys of this module, in the order they are written.
VALIDITY_FIELDS = ("valid_from", "valid_to", "superseded_by", "supersedes")
_LINK_FIELDS = ("id", "decided_by", "reason", "decided_at", "reverted_at", "reverted_by")


def _ts(value: datetime) -> str:
    return value.astimezone(UTC).isoformat()


def validity_frontmatter(m: Memory, links: Iterable[Supersession] = ()) -> dict[str, Any]:
    """The validity keys of ``m``'s file that differ from the defaults; ``links`` are
    those whose newer end is ``m``."""
    out: dict[str, Any] = {}
    if m.valid_from is not None and m.valid_from != m.ts:
        out["valid_from"] = _ts(m.valid_from)
    if m.valid_to is not None:
        out["valid_to"] = _ts(m.valid_to)
    if m.superseded_by:
        out["superseded_by"] = m.superseded_by
    replaced = [_link_frontmatter(link) for link in links if link.new_id == m.id]
    if replaced:
        out["supersedes"] = replaced
    return out


def _link_frontmatter(link: Supersession) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": link.old_id,
        "decided_by": link.decided_by,
        "reason": link.reason,
        "decided_at": _ts(link.decided_at),
    }
    if link.reverted_at is not None:
        out["reverted_at"] = _ts(link.reverted_at)
        out["reverted_by"] = link.reverted_by or ""
    return out


def read_validity(
    head: Mapping[str, Any], memory_id: str, ts: datetime, status: MemoryStatus
) -> tuple[datetime | None, datetime | None, str | None]:
    """``valid_from``, ``valid_to`` and ``superseded_by`` of a file, checked against its
    status; ``InvalidInput`` naming the field at fault."""
    valid_from = when_field(head, "valid_from")
    valid_to = when_field(head, "valid_to")
    superseded_by = text_field(head, "superseded_by") or None
    # A valid_to before valid_from is not refused: the store can hold one (a memory
    # replaced by name with one written before it), and what an export wrote must import.
    if superseded_by == memory_id:
        raise InvalidInput("superseded_by", "a memory cannot replace itself")
    if status is MemoryStatus.SUPERSEDED and superseded_by is None:
        raise InvalidInput("superseded_by", "required when status is superseded")
    if status is not MemoryStatus.SUPERSEDED and superseded_by is not None:
        raise InvalidInput("superseded_by", "only a superseded memory names what replaced it")
    # The store keeps "from its ts" as no value, so both spellings read back the same.
    return (None if valid_from == ts else valid_from), valid_to, superseded_by


def read_links(head: Mapping[str, Any], memory: Memory) -> list[Supersession]:
    """The ``supersedes`` list of ``memory``'s file: the older memories it replaced."""
    entries = head.get("supersedes", [])
    if not isinstance(entries, Sequence) or isinstance(entries, str):
        raise InvalidInput("supersedes", "expected a list of {id, decided_by, reason, decided_at}")
    links: list[Supersession] = []
    for n, entry in enumerate(entries):
        name = f"supersedes[{n}]"
        if not isinstance(entry, Mapping):
            raise InvalidInput(name, "expected id, decided_by, reason and decided_at")
        unknown = sorted(str(k) for k in entry if k not in _LINK_FIELDS)
        if unknown:
            raise InvalidInput(f"{name}.{unknown[0]}", f"unknown; use {', '.join(_LINK_FIELDS)}")
        try:
            old_id = text_field(entry, "id")
            decided_by = text_field(entry, "decided_by")
            reason = text_field(entry, "reason") or ""
            decided_at = when_field(entry, "decided_at") or memory.valid_since
            reverted_at = when_field(entry, "reverted_at")
            reverted_by = text_field(entry, "reverted_by") or None
        except InvalidInput as exc:
            raise InvalidInput(f"{name}.{exc.field}", exc.message) from None
        if not old_id or not old_id.strip():
            raise InvalidInput(f"{name}.id", "required: the id of the memory replaced")
        if old_id == memory.id:
            raise InvalidInput(f"{name}.id", "a memory cannot replace itself")
        if not decided_by or not decided_by.strip():
            raise InvalidInput(f"{name}.decided_by", "required: who decided, e.g. explicit")
        links.append(
            Supersession(
                old_id,
                memory.id,
                decided_by,
                reason,
                decided_at,
                reverted_at,
                None if reverted_at is None else (reverted_by or "unknown"),
            )
        )
    return links
