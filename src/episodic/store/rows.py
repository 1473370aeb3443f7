"""The schema's rows as the model's dataclasses, and back: one place for both backends.

Both backends store the same columns as the same text (timestamps as fixed-width UTC
text, JSON objects as compact text), so a row read from either turns into a ``Memory``,
an ``Event`` or an ``ApiKey`` here, and a dataclass turns into the row both insert. The
column lists these functions read live beside the other shared SQL text in
``episodic.store.sql``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from functools import lru_cache
from typing import Any

from episodic.errors import InvalidInput
from episodic.model import Event, Memory, MemoryStatus, Role
from episodic.payloads import stored_object
from episodic.store.service import MemoryVersion
from episodic.store.upkeep import HealthSnapshot, PendingReview, ReviewRequest
from episodic.tenancy import ApiKey


def ts_text(dt: datetime) -> str:
    """A datetime as the fixed-width UTC text the schema sorts on (naive means UTC)."""
    dt = dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)
    return dt.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def review_row(review: ReviewRequest) -> tuple[str | None, ...]:
    """``review`` as the values of ``store.sql.REVIEW_INSERT_COLUMNS`` (ids and cosines as JSON)."""
    return (
        review.workspace_id,
        review.agent_id,
        review.crew_id,
        review.conversation_id,
        review.query,
        json.dumps(list(review.memory_ids)),
        json.dumps(list(review.cosines)),
        ts_text(review.recalled_at),
    )


def parse_ts(text: str) -> datetime:
    return datetime.fromisoformat(text)


def opt_ts(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def json_text(field: str, value: Mapping[str, Any]) -> str:
    """A JSON object as the compact text both backends store; ``InvalidInput`` naming
    ``field`` when it cannot be serialised."""
    try:
        return json.dumps(dict(value), ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InvalidInput(field, f"not JSON-serialisable: {exc}") from exc


def unique(items: Sequence[str]) -> list[str]:
    """``items`` without repeats, in first-seen order."""
    return list(dict.fromkeys(items))


def text_sha256(text: str) -> str:
    """The embedding cache's key of a text (``episodic.embed.cache.content_hash``)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# Decoding a row (its JSON payload, its timestamps, the frozen dataclass) costs more than
# reading it, and a recall decodes a hundred or more rows, mostly the same ones the
# previous recall in that workspace decoded. The decoding is a pure function of the row's
# values, so it is memoised on them: a row that changed is another key, and there is
# nothing to invalidate. The Memory handed out is shared, as its type says it may be
# (frozen, with a read-only Mapping payload): code that edits a payload copies it first.
DECODED_ROWS = 8192


def memory_from_row(row: Sequence[Any], sources: Sequence[str]) -> Memory:
    """A ``MEMORY_COLUMNS`` row and its source event ids as a ``Memory``."""
    try:
        return _decoded(tuple(row), tuple(sources))
    except TypeError:  # a column value that cannot be hashed: decode it every time
        return _decode(row, sources)


@lru_cache(maxsize=DECODED_ROWS)
def _decoded(row: tuple[Any, ...], sources: tuple[str, ...]) -> Memory:
    return _decode(row, sources)


def _decode(row: Sequence[Any], sources: Sequence[str]) -> Memory:
    return Memory(
        id=row[0],
        workspace=row[1],
        crew=row[2],
        agent=row[3],
        resource=row[4],
        conversation=row[5],
        ts=parse_ts(row[6]),
        type=row[7],
        severity=row[8],
        content=row[9],
        payload=stored_object(row[10]),
        base_importance=float(row[11]),
        importance=float(row[12]),
        reference_count=int(row[13]),
        last_referenced_at=opt_ts(row[14]),
        status=MemoryStatus(row[15]),
        source_event_ids=tuple(sources),
        created_at=parse_ts(row[16]),
        keys=row[17],
        content_hash=row[18],
        stability=None if row[19] is None else float(row[19]),
        difficulty=None if row[20] is None else float(row[20]),
        last_reviewed_at=opt_ts(row[21]),
        consolidated_at=opt_ts(row[22]),
        valid_from=opt_ts(row[23]),
        valid_to=opt_ts(row[24]),
        superseded_by=row[25],
    )


def memory_row(m: Memory, now: str) -> tuple[Any, ...]:
    """A memory as the values of ``MEMORY_INSERT_COLUMNS``, in that order (``now`` is the
    stored ``updated_at``, and ``created_at`` when the memory has none)."""
    return (
        m.id,
        m.workspace,
        m.crew,
        m.agent,
        m.resource,
        m.conversation,
        ts_text(m.ts),
        m.type,
        m.severity,
        m.content,
        json_text("payload", m.payload),
        float(m.base_importance),
        float(m.importance),
        int(m.reference_count),
        None if m.last_referenced_at is None else ts_text(m.last_referenced_at),
        MemoryStatus(m.status).value,
        now if m.created_at is None else ts_text(m.created_at),
        now,
        m.keys,
        m.content_hash,
        m.stability,
        m.difficulty,
        None if m.last_reviewed_at is None else ts_text(m.last_reviewed_at),
        None if m.consolidated_at is None else ts_text(m.consolidated_at),
        # NULL while it is the memory's own time, so a memory reads back as it was given.
        None if m.valid_from is None or m.valid_from == m.ts else ts_text(m.valid_from),
        None if m.valid_to is None else ts_text(m.valid_to),
        m.superseded_by,
    )


def revision_row(m: Memory, now: str) -> tuple[Any, ...]:
    """An edited memory as ``revise_memory_sql``'s parameters."""
    return (
        m.content,
        m.content_hash,
        float(m.base_importance),
        float(m.importance),
        json_text("payload", m.payload),
        now,
        m.workspace,
        m.id,
    )


def history_row(old: Memory, by: str, now: str) -> tuple[Any, ...]:
    """The version ``old`` as ``history_insert_sql``'s parameters, replaced ``now``."""
    return (
        old.id,
        old.workspace,
        old.content,
        float(old.importance),
        json_text("payload", old.payload),
        now,
        by,
    )


def revised(old: Memory, new: Memory) -> bool:
    """Whether an edit changes what the history keeps."""
    return (old.content, old.importance, dict(old.payload)) != (
        new.content,
        new.importance,
        dict(new.payload),
    )


def version_from_row(row: Sequence[Any]) -> MemoryVersion:
    """A ``HISTORY_COLUMNS`` row as a ``MemoryVersion``."""
    return MemoryVersion(
        content=row[0],
        importance=float(row[1]),
        payload=json.loads(row[2]),
        replaced_at=parse_ts(row[3]),
        replaced_by=row[4],
    )


def event_from_row(row: Sequence[Any]) -> Event:
    """An ``EVENT_COLUMNS`` row as an ``Event``."""
    return Event(
        id=row[0],
        workspace=row[1],
        crew=row[2],
        agent=row[3],
        resource=row[4],
        conversation=row[5],
        ts=parse_ts(row[6]),
        type=row[7],
        severity=row[8],
        summary=row[9],
        payload=stored_object(row[10]),
        refs=stored_object(row[11]),
    )


def event_row(e: Event, *, admitted: bool, now: str) -> tuple[Any, ...]:
    """An event as the values of ``EVENT_INSERT_COLUMNS``, in that order."""
    return (
        e.id,
        e.workspace,
        e.crew,
        e.agent,
        e.resource,
        e.conversation,
        ts_text(e.ts),
        e.type,
        e.severity,
        e.summary,
        json_text("payload", e.payload),
        json_text("refs", e.refs),
        1 if admitted else 0,
        now,
    )


def api_key_from_row(row: Sequence[Any]) -> ApiKey:
    """A ``KEY_COLUMNS`` row as an ``ApiKey``."""
    return ApiKey(
        id=row[0],
        workspace_id=row[1],
        role=Role(row[2]),
        agent_id=row[3],
        crew_id=row[4],
        label=row[5],
        created_at=parse_ts(row[6]),
        revoked_at=opt_ts(row[7]),
    )


def review_from_row(row: Sequence[Any]) -> PendingReview:
    """A ``REVIEW_INSERT_COLUMNS`` row as a ``PendingReview``."""
    cosines = json.loads(row[7])
    return PendingReview(
        id=int(row[0]),
        request=ReviewRequest(
            workspace_id=row[1],
            agent_id=row[2],
            crew_id=row[3],
            conversation_id=row[4],
            query=row[5],
            memory_ids=tuple(json.loads(row[6])),
            cosines=tuple(None if c is None else float(c) for c in cosines),
            recalled_at=parse_ts(row[8]),
        ),
    )


def snapshot_from_row(workspace_id: str, crew_id: str | None, row: Sequence[Any]) -> HealthSnapshot:
    """A ``SNAPSHOT_COLUMNS`` row of that workspace and crew as a ``HealthSnapshot``."""
    return HealthSnapshot(
        workspace_id=workspace_id,
        crew_id=crew_id or None,
        snapshot_date=date.fromisoformat(row[0]),
        freshness=float(row[1]),
        coverage=float(row[2]),
        coherence=float(row[3]),
        efficiency=float(row[4]),
        reachability=float(row[5]),
        score=float(row[6]),
    )
