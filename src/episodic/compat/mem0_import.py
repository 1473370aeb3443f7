"""Reading Mem0's exported memories into episodic (``episodic import --from mem0 FILE``).

The file is the JSON of Mem0's ``get_all`` for one or many users: ``{"results": [...]}``,
a bare list of memories, or ``{"memories": [...]}``. Each memory becomes a note of the
workspace with Mem0's mapping (``user_id`` -> resource ``user:<id>``, ``agent_id`` ->
agent, ``run_id`` -> conversation): its id kept, ``created_at`` its time, ``metadata`` in
its payload, and what else Mem0 gave (``hash``, ``updated_at``, ``categories`` ...) under
``payload["mem0"]``. A bad record is reported with its place and skipped; the rest are
stored. Ids are kept (or derived from the record when it has none), so importing the
same file again stores nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from episodic.compat.mem0 import USER_PREFIX
from episodic.errors import InvalidInput
from episodic.service import Episodic

NOTE_TYPE = "note"  # what ``remember`` stores: imported memories are remembered ones
_KNOWN = {"id", "memory", "user_id", "agent_id", "run_id", "created_at", "metadata"}
_DROPPED = {"score", "event"}  # answers of one call, not part of the memory


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
    embedded: int = 0
    errors: list[RecordError] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "read": self.read,
            "stored": self.stored,
            "unchanged": self.unchanged,
            "embedded": self.embedded,
            "errors": [e.to_json() for e in self.errors],
        }


def records(data: object) -> tuple[str, list[Any]]:
    """The list of memories in an export and the name of its place in the file."""
    if isinstance(data, list):
        return "", data
    if isinstance(data, Mapping):
        for key in ("results", "memories"):
            if isinstance(data.get(key), list):
                return key, list(data[key])
    raise InvalidInput("file", 'expected {"results": [...]}, {"memories": [...]} or a list')


def _opt_text(record: Mapping[str, Any], name: str) -> str | None:
    value = record.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(name, "expected a non-empty string")
    return value


def event_of(record: object, workspace: str) -> dict[str, Any]:
    """The journal event of one Mem0 memory; ``InvalidInput`` naming Mem0's field."""
    if not isinstance(record, Mapping):
        raise InvalidInput("memory", f"expected an object, got {type(record).__name__}")
    text = record.get("memory")
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("memory", "required: the memory's text")
    user = _opt_text(record, "user_id")
    agent = _opt_text(record, "agent_id")
    run = _opt_text(record, "run_id")
    created = _opt_text(record, "created_at")
    metadata = record.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise InvalidInput("metadata", "expected an object")
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
    return {
        "id": memory_id,
        "workspace": workspace,
        "ts": created,
        "type": NOTE_TYPE,
        "summary": text,
        "agent": agent,
        "resource": None if user is None else USER_PREFIX + user,
        "conversation": run,
        "payload": payload,
        "refs": {"episodic": True},
    }


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
    events: list[dict[str, Any]] = []
    places: list[str] = []
    for i, item in enumerate(items):
        place = f"{key}[{i}]" if key else f"[{i}]"
        try:
            events.append(event_of(item, workspace))
        except InvalidInput as exc:
            report.errors.append(RecordError(place, exc.field, exc.message))
            continue
        places.append(place)
    if events:
        ingested = mem.ingest(events)
        for e in ingested.errors:  # 1-based lines of what was handed over
            name = _MEM0_FIELD.get(e.field, e.field)
            report.errors.append(RecordError(places[e.line - 1], name, e.message))
        report.stored = ingested.stored
        report.unchanged = ingested.duplicates
        if ingested.stored:
            report.embedded = mem.index_once().embedded
    report.errors.sort(key=lambda e: _order(e.place))
    return report


def _order(place: str) -> int:
    return int(place.rsplit("[", 1)[1].rstrip("]"))
