"""Reading Mem0's exported memories into episodic (``episodic import --from mem0 FILE``).

The file is one of the JSON shapes Mem0 gives a user's memories in:

- the answer of ``Memory.get_all`` (the open-source library): ``{"results": [...]}``;
- the answer of the platform's ``GET /v1/memories/``: a bare list, or
  ``{"count", "next", "previous", "results": [...]}`` when paged;
- the platform dashboard's JSON export: ``{"memories": [...], "total": N}``, whose
  memories hold their text under ``content``.

Each memory becomes a note of the workspace with Mem0's mapping (``user_id`` -> resource
``user:<id>``, ``agent_id`` -> agent, ``run_id`` (the platform's ``session_id``) ->
conversation): its id kept, ``created_at`` its time and its creation time, ``metadata``
in its payload, and what else Mem0 gave (``hash``, ``updated_at``, ``categories``,
``app_id`` ...) under ``payload["mem0"]``.

A memory may carry its ``history``: the list Mem0's ``history(memory_id)`` answers
(oldest first). Its ``ADD`` entry is the text the memory was created with and each
``UPDATE`` an edit, kept as the memory's versions (``episodic memory history``), each
written at the time Mem0 gave; ``DELETE`` and ``NONE`` entries change no text.

A memory the platform lists with ``replaced_by`` (Mem0 superseded it) is superseded here
by the memory named, as the import's decision (reversible); when that memory is not
there it stays active and a note says so.

A bad record (or a bad entry of its history) is reported with its place and skipped;
the rest are stored. Ids are kept (or derived from the record when it has none), so
importing the same file again stores and changes nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from episodic.compat.mem0 import USER_PREFIX
from episodic.errors import InvalidInput
from episodic.service import Episodic

NOTE_TYPE = "note"  # what ``remember`` stores: imported memories are remembered ones
# Who an imported edit is recorded as made by when Mem0 names no actor.
IMPORTER = "mem0-import"
_KNOWN = {
    "id",
    "memory",
    "content",
    "user_id",
    "agent_id",
    "run_id",
    "session_id",
    "created_at",
    "metadata",
    "history",
}
_DROPPED = {"score", "event"}  # answers of one call, not part of the memory
_EVENTS = ("ADD", "UPDATE", "DELETE", "NONE")


@dataclass(frozen=True, slots=True)
class RecordError:
    place: str  # where in the file: results[3]
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.place}: {self.field}: {self.message}"

    def to_json(self) -> dict[str, str]:
        return {"place": self.place, "field": self.field, "message": self.message}


@dataclass(slots=True)
class Mem0ImportReport:
    path: str
    read: int = 0
    stored: int = 0
    unchanged: int = 0  # already imported (same id): left as they are
    edits: int = 0  # versions kept from the memories' histories
    replaced: int = 0  # memories Mem0 had replaced (replaced_by), superseded here too
    embedded: int = 0
    errors: list[RecordError] = field(default_factory=list)
    # Stored, but something the record asked could not be done (a replaced_by naming
    # no memory here): said, and no reason to fail the import.
    notes: list[RecordError] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "read": self.read,
            "stored": self.stored,
            "unchanged": self.unchanged,
            "edits": self.edits,
            "replaced": self.replaced,
            "embedded": self.embedded,
            "errors": [e.to_json() for e in self.errors],
            "notes": [n.to_json() for n in self.notes],
        }


@dataclass(frozen=True, slots=True)
class Edit:
    """One later text of a memory, from its Mem0 history: when and by whom."""

    text: str
    at: datetime | None
    by: str


@dataclass(frozen=True, slots=True)
class Record:
    """One Mem0 memory read: the journal event that stores it (with the text it was
    created with), when it was created, and its edits up to its current text."""

    event: dict[str, Any]
    created: datetime | None
    edits: tuple[Edit, ...]
    replaced_by: str | None = None


def records(data: object) -> tuple[str, list[Any]]:
    """The list of memories in an export and the name of its place in the file."""
    if isinstance(data, list):
        return "", data
    if isinstance(data, Mapping):
        for key in ("results", "memories"):
            if isinstance(data.get(key), list):
                return key, list(data[key])
    raise InvalidInput("file", 'expected {"results": [...]}, {"memories": [...]} or a list')


def _opt_text(record: Mapping[str, Any], name: str, where: str = "") -> str | None:
    value = record.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(where + name, "expected a non-empty string")
    return value


def _opt_time(record: Mapping[str, Any], name: str, where: str = "") -> datetime | None:
    value = _opt_text(record, name, where)
    if value is None:
        return None
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInput(where + name, f"expected an ISO 8601 time, got {value!r}") from None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _text_of(record: Mapping[str, Any]) -> str:
    # The dashboard's export names the text ``content``; the APIs name it ``memory``.
    name = "memory" if "memory" in record or "content" not in record else "content"
    text = record.get(name)
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput(name, "required: the memory's text")
    return text


def history_of(rows: object, text: str, updated: datetime | None) -> tuple[str, tuple[Edit, ...]]:
    """The text a memory was created with and its edits, from Mem0's ``history`` rows
    (oldest first) and its current ``text``; ``InvalidInput`` naming the row's field."""
    if not isinstance(rows, Sequence) or isinstance(rows, str):
        raise InvalidInput("history", "expected the list Mem0's history(memory_id) answers")
    first: str | None = None
    edits: list[Edit] = []
    for j, row in enumerate(rows):
        where = f"history[{j}]."
        if not isinstance(row, Mapping):
            raise InvalidInput(where.rstrip("."), "expected an object")
        event = row.get("event")
        if event not in _EVENTS:
            raise InvalidInput(where + "event", f"expected one of {', '.join(_EVENTS)}")
        if event in ("DELETE", "NONE"):
            continue
        new = row.get("new_memory")
        if not isinstance(new, str) or not new.strip():
            raise InvalidInput(where + "new_memory", f"required for {event}: the text")
        # Mem0 keeps an edit's time in ``updated_at`` (``created_at`` is the memory's).
        at = _opt_time(row, "updated_at", where) or _opt_time(row, "created_at", where)
        if first is None and not edits:
            old = row.get("old_memory")
            if event == "ADD":
                first = new
                continue
            first = old if isinstance(old, str) and old.strip() else None
            if first is None:
                raise InvalidInput(where + "old_memory", "the first entry says no text")
        by = _opt_text(row, "actor_id", where) or IMPORTER
        edits.append(Edit(new, at, by))
    start = text if first is None else first
    if (edits[-1].text if edits else start) != text:
        edits.append(Edit(text, updated, IMPORTER))  # the export's text is the current one
    return start, tuple(edits)


def read_record(record: object, workspace: str) -> Record:
    """One Mem0 memory (see the module's docstring); ``InvalidInput`` naming Mem0's
    field."""
    if not isinstance(record, Mapping):
        raise InvalidInput("memory", f"expected an object, got {type(record).__name__}")
    text = _text_of(record)
    user = _opt_text(record, "user_id")
    agent = _opt_text(record, "agent_id")
    run = _opt_text(record, "run_id") or _opt_text(record, "session_id")
    created = _opt_text(record, "created_at")
    created_at = _opt_time(record, "created_at")
    metadata = record.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise InvalidInput("metadata", "expected an object")
    start = text
    edits: tuple[Edit, ...] = ()
    if record.get("history") is not None:
        start, edits = history_of(record["history"], text, _opt_time(record, "updated_at"))
    memory_id = _opt_text(record, "id")
    if memory_id is None:
        # Derived from what the record says, so a second import finds it again.
        key = json.dumps([user, agent, run, created, text])
        memory_id = "mem0-" + hashlib.sha256(key.encode()).hexdigest()[:24]
    extra = {k: v for k, v in record.items() if k not in _KNOWN | _DROPPED}
    payload: dict[str, Any] = {}
    if metadata:
        payload["metadata"] = dict(metadata)
    if extra:
        payload["mem0"] = extra
    event = {
        "id": memory_id,
        "workspace": workspace,
        "ts": created,
        "type": NOTE_TYPE,
        "summary": start,
        "agent": agent,
        "resource": None if user is None else USER_PREFIX + user,
        "conversation": run,
        "payload": payload,
        "refs": {"episodic": True},
    }
    return Record(event, created_at, edits, _opt_text(record, "replaced_by"))


# Episodic's names of the fields back to Mem0's, for the error a user reads.
_MEM0_FIELD = {
    "summary": "memory",
    "ts": "created_at",
    "agent": "agent_id",
    "resource": "user_id",
    "conversation": "run_id",
    "payload": "metadata",
}


def import_mem0(mem: Episodic, path: str | Path, *, workspace: str) -> Mem0ImportReport:
    """Read Mem0's export ``path`` into ``workspace`` (see the module's docstring)."""
    if not isinstance(workspace, str) or not workspace.strip():
        raise InvalidInput("workspace", "required: the workspace the memories go into")
    source = Path(path)
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidInput("file", f"cannot read {source}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput("file", f"{source} is not JSON: {exc}") from None
    key, items = records(data)
    report = Mem0ImportReport(str(source), read=len(items))
    read: list[Record] = []
    places: list[str] = []
    for i, item in enumerate(items):
        place = f"{key}[{i}]" if key else f"[{i}]"
        try:
            read.append(read_record(item, workspace))
        except InvalidInput as exc:
            report.errors.append(RecordError(place, exc.field, exc.message))
            continue
        places.append(place)
    if read:
        ids = [r.event["id"] for r in read]
        before = {m.id for m in mem.store.get_memories(workspace, ids)}
        ingested = mem.ingest([r.event for r in read])
        for e in ingested.errors:  # 1-based lines of what was handed over
            name = _MEM0_FIELD.get(e.field, e.field)
            report.errors.append(RecordError(places[e.line - 1], name, e.message))
        report.stored = ingested.stored
        report.unchanged = ingested.duplicates
        maybe = [r.event["id"] for r in read if r.event["id"] not in before]
        now = {m.id for m in mem.store.get_memories(workspace, maybe)}
        new = {r.event["id"]: r for r in read if r.event["id"] in now}
        report.edits = _keep_history(mem, workspace, new)
        at = dict(zip([r.event["id"] for r in read], places, strict=True))
        _keep_replacements(mem, workspace, new, at, report)
        if ingested.stored:
            report.embedded = mem.index_once().embedded
    report.errors.sort(key=lambda e: _order(e.place))
    return report


def _keep_history(mem: Episodic, workspace: str, new: Mapping[str, Record]) -> int:
    """Give the memories just stored Mem0's creation time and their edits as versions;
    the number of versions kept."""
    from episodic.write.extract import content_hash

    store, kept = mem.store, 0
    for memory in store.get_memories(workspace, list(new)):
        record = new[memory.id]
        if record.created is not None and memory.created_at != record.created:
            store.restore(replace(memory, created_at=record.created))
        current = memory
        for edit in record.edits:
            digest = None if current.content_hash is None else content_hash(edit.text)
            revised = replace(current, content=edit.text, content_hash=digest)
            at = edit.at or mem.clock()
            if store.revise_memory(revised, by=edit.by, at=at):
                kept += 1
                current = revised
    return kept


def _keep_replacements(
    mem: Episodic,
    workspace: str,
    new: Mapping[str, Record],
    at: Mapping[str, str],
    report: Mem0ImportReport,
) -> None:
    """Supersede each memory just stored that Mem0 had replaced (``replaced_by``) by
    the memory that replaced it, recorded as decided by the import (reversible with
    ``episodic memory restore``); when that cannot be done the memory stays active and
    a note says why."""
    for memory_id, record in new.items():
        if record.replaced_by is None:
            continue
        if not mem.store.get_memories(workspace, [record.replaced_by]):
            # supersede would take an unknown id for the text of a new memory
            why = f"stored as active: no memory {record.replaced_by} in {workspace}"
            report.notes.append(RecordError(at[memory_id], "replaced_by", why))
            continue
        try:
            mem.supersede(
                memory_id,
                record.replaced_by,
                workspace=workspace,
                reason=f"replaced in Mem0 by {record.replaced_by} (replaced_by)",
                by=IMPORTER,
            )
        except InvalidInput as exc:
            report.notes.append(
                RecordError(at[memory_id], "replaced_by", f"stored as active: {exc.message}")
            )
            continue
        report.replaced += 1


def _order(place: str) -> int:
    return int(place.rsplit("[", 1)[1].rstrip("]"))
