"""``POST /v1/events``: append a batch of journal events (the ``episodic ingest`` format)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from episodic.errors import Forbidden
from episodic.http.auth import Caller
from episodic.http.deps import Mem, WriteAdmission
from episodic.http.errors import ERRORS
from episodic.http.models import Strict

MAX_BATCH_EVENTS = 1000

# Every route here writes: each is counted in the line of writes (503 past its bound).
router = APIRouter(dependencies=[WriteAdmission])


class EventsIn(Strict):
    """A batch of journal events (the ``episodic ingest`` format). ``workspace`` may be
    left out: it is the key's workspace."""

    events: list[Any] = Field(min_length=1, max_length=MAX_BATCH_EVENTS)


class ItemError(BaseModel):
    index: int = Field(description="0-based position in the batch")
    field: str
    message: str


class NotAdmittedOut(BaseModel):
    index: int = Field(description="0-based position in the batch")
    id: str
    type: str
    severity: str
    rule: str = Field(description="the admission rule that refused it")
    reason: str
    fix: str | None = Field(description="how to keep such an event; null when nothing can")


class NotAdmittedCountOut(BaseModel):
    rule: str
    reason: str
    fix: str | None
    count: int


class IngestOut(BaseModel):
    received: int
    stored: int
    duplicates: int
    admitted: int
    errors: list[ItemError]
    deprecated_fields: list[str] = Field(
        description="old field names the batch used (workspace_id for workspace ...): "
        "still read for one minor version"
    )
    not_admitted: list[NotAdmittedOut] = Field(
        description="events stored in the journal but not kept as memories, each with the "
        "admission rule that refused it, why, and how to keep it (the first 1000)"
    )
    not_admitted_by_reason: list[NotAdmittedCountOut] = Field(
        description="how many events each admission rule refused, by reason"
    )


@router.post("/v1/events", response_model=IngestOut, responses=ERRORS, tags=["write"])
def post_events(body: EventsIn, caller: Caller, mem: Mem) -> dict[str, Any]:
    """Append journal events. Bad events are reported by position and skipped; the
    others are stored. An event naming a workspace, agent or crew the key may not write
    for is one of the bad events: the rest of the batch is still stored."""
    items: list[Any] = []
    positions: list[int] = []  # where each item handed to ingest stood in the batch
    refused: list[dict[str, Any]] = []
    for index, raw in enumerate(body.events):
        if isinstance(raw, dict):
            item = dict(raw)
            name = "workspace"
            try:
                _bind(item, name, caller.workspace)
                if caller.key.agent_id is not None and not caller.is_admin:
                    name = "agent"
                    _bind(item, name, caller.agent)
                if caller.key.crew_id is not None and not caller.is_admin:
                    name = "crew"
                    _bind(item, name, caller.crew)
            except Forbidden as exc:
                refused.append({"index": index, "field": name, "message": str(exc)})
                continue
            items.append(item)
        else:
            items.append(raw)
        positions.append(index)
    report = mem.ingest(items).to_json()
    report["received"] = len(body.events)
    errors = [
        {"index": positions[e["line"] - 1], "field": e["field"], "message": e["message"]}
        for e in report["errors"]
    ]
    report["errors"] = sorted(errors + refused, key=lambda e: int(e["index"]))
    report["not_admitted"] = [
        {"index": positions[n.pop("line") - 1], **n} for n in report["not_admitted"]
    ]
    return report


def _bind(item: dict[str, Any], name: str, check: Callable[[str | None], str | None]) -> None:
    """Fill an event's id field from the key, or check the one it names against the key
    (``Forbidden`` when it differs). A value of the wrong type is left for the event
    parser to report by position, like any other bad field. An event that uses the field's
    old name (``workspace_id`` ...) is bound under that name."""
    if name not in item and name + "_id" in item:
        name += "_id"
    value = item.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        item[name] = check(None)
    elif isinstance(value, str):
        item[name] = check(value.strip())
