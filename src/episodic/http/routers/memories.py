"""``/v1/memories``: create, list, get, retire and delete single memories."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from episodic.http.auth import Caller
from episodic.http.deps import Mem
from episodic.http.errors import ERRORS
from episodic.http.models import ForgetOut, Id, NonEmptyText, ScopeName, Strict
from episodic.service import MAX_PAGE, SOURCES, memory_json

router = APIRouter()


class MemoryIn(Strict):
    content: NonEmptyText
    type: Id = "note"
    importance: float | None = Field(default=None, ge=0.0, le=1.0)
    source: Literal[SOURCES] | None = None  # type: ignore[valid-type]
    evidence: NonEmptyText | None = None
    agent: Id | None = None
    crew: Id | None = None
    resource: Id | None = None
    conversation: Id | None = None
    payload: dict[str, Any] | None = None
    id: Id | None = None
    workspace: Id | None = None


class MemoryOut(BaseModel):
    id: str
    workspace: str
    crew: str | None
    agent: str | None
    resource: str | None
    conversation: str | None
    ts: str
    type: str
    severity: str
    content: str
    payload: dict[str, Any]
    source: str | None
    evidence: str | None
    importance: float
    base_importance: float
    reference_count: int
    last_referenced_at: str | None
    status: str
    keys: str
    source_event_ids: list[str]
    created_at: str | None


class MemoryPageOut(BaseModel):
    items: list[MemoryOut]
    next_cursor: str | None = Field(description="pass back as ?cursor= for the next page")


@router.post(
    "/v1/memories",
    response_model=MemoryOut,
    status_code=201,
    responses=ERRORS,
    tags=["memories"],
)
def create_memory(body: MemoryIn, caller: Caller, mem: Mem) -> dict[str, Any]:
    """Remember one note now (admitted whatever its type, embedded at once)."""
    flt = caller.reading(workspace=body.workspace, agent=body.agent, crew=body.crew)
    memory = mem.remember(
        body.content,
        workspace=flt.workspace_id,
        agent=flt.agent_id,
        crew=flt.crew_id,
        resource=body.resource,
        conversation=body.conversation,
        type=body.type,
        importance=body.importance,
        source=body.source,
        evidence=body.evidence,
        payload=body.payload,
        id=body.id,
    )
    return memory_json(memory)


@router.get("/v1/memories", response_model=MemoryPageOut, responses=ERRORS, tags=["memories"])
def list_memories(
    caller: Caller,
    mem: Mem,
    agent: Annotated[Id | None, Query()] = None,
    crew: Annotated[Id | None, Query()] = None,
    scope: Annotated[ScopeName | None, Query()] = None,
    resource: Annotated[Id | None, Query()] = None,
    conversation: Annotated[Id | None, Query()] = None,
    type: Annotated[list[Id] | None, Query(max_length=20)] = None,
    status: Annotated[Literal["active", "retired", "compacted"] | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
    cursor: Annotated[str | None, Query(max_length=1000)] = None,
    workspace: Annotated[Id | None, Query()] = None,
) -> dict[str, Any]:
    """Memories the key can see, newest first, with filters and cursor pagination."""
    flt = caller.reading(
        workspace=workspace,
        agent=agent,
        crew=crew,
        scope=scope,
        resource=resource,
        conversation=conversation,
        types=tuple(type) if type else None,
    )
    page = mem.list_memories(flt, status=status, limit=limit, cursor=cursor)
    return {"items": [memory_json(m) for m in page.items], "next_cursor": page.next_cursor}


@router.get(
    "/v1/memories/{memory_id}", response_model=MemoryOut, responses=ERRORS, tags=["memories"]
)
def get_memory(memory_id: str, caller: Caller, mem: Mem) -> dict[str, Any]:
    return memory_json(mem.memory(caller.reading(), memory_id))


@router.post(
    "/v1/memories/{memory_id}/retire",
    response_model=MemoryOut,
    responses=ERRORS,
    tags=["memories"],
)
def retire_memory(memory_id: str, caller: Caller, mem: Mem) -> dict[str, Any]:
    """Retire a memory: kept and exported, never recalled again."""
    return memory_json(mem.retire_as(caller, memory_id))


@router.delete(
    "/v1/memories/{memory_id}", response_model=ForgetOut, responses=ERRORS, tags=["forget"]
)
def delete_memory(memory_id: str, caller: Caller, mem: Mem) -> dict[str, Any]:
    """Forget one memory (and what was derived from it) everywhere."""
    return mem.forget_memory_as(caller, memory_id).to_json()
