"""Mem0's self-hosted REST routes under ``/mem0``, with its bodies and answers, over
``episodic.compat.mem0.Memory`` in the API key's workspace. Mem0's server has no
per-agent scoping, so every route needs an admin key (an agent key is refused, never
widened)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field, RootModel

from episodic.compat.mem0 import Memory
from episodic.errors import InvalidInput
from episodic.http.auth import Caller
from episodic.http.deps import Mem, Recalls, WriteAdmission
from episodic.http.errors import ERRORS
from episodic.http.models import Id
from episodic.service import Episodic
from episodic.tenancy import Principal

router = APIRouter(prefix="/mem0", tags=["mem0"], responses=ERRORS)


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: str = "user"
    content: str


class MemoryCreate(BaseModel):
    messages: list[Message] = Field(min_length=1)
    user_id: Id | None = None
    agent_id: Id | None = None
    run_id: Id | None = None
    metadata: dict[str, Any] | None = None
    infer: bool = True


class SearchRequest(BaseModel):
    query: str = Field(min_length=1)
    user_id: Id | None = None
    agent_id: Id | None = None
    run_id: Id | None = None
    filters: dict[str, Any] | None = None
    limit: int | None = Field(default=None, ge=1)
    top_k: int | None = Field(default=None, ge=1)
    threshold: float | None = None


class MemoryUpdate(BaseModel):
    # Mem0's server has taken the new text as ``text``; older clients send ``memory``
    # or ``data``.
    text: str | None = None
    memory: str | None = None
    data: str | None = None
    metadata: dict[str, Any] | None = None


class Item(BaseModel):
    id: str
    memory: str
    hash: str
    metadata: dict[str, Any] | None
    created_at: str | None
    updated_at: str | None
    user_id: str | None
    agent_id: str | None
    run_id: str | None


class Results(BaseModel):
    results: list[Item]


class Scored(Item):
    score: float


class Found(BaseModel):
    results: list[Scored]


class MaybeItem(RootModel[Item | None]):
    pass


class AddEvent(BaseModel):
    id: str | None
    memory: str
    event: str
    reason: str | None = None
    replaced_by: str | None = None


class AddOut(BaseModel):
    results: list[AddEvent]


class Mem0MessageOut(BaseModel):
    message: str


class Change(BaseModel):
    id: str
    memory_id: str
    old_memory: str | None
    new_memory: str | None
    event: str
    created_at: str | None
    updated_at: str | None
    is_deleted: bool
    actor_id: str | None
    role: str | None


class Changes(RootModel[list[Change]]):
    pass


def _memory(caller: Principal, mem: Episodic) -> Memory:
    caller.require_admin("Mem0's routes (no per-agent scoping)")
    return Memory(episodic=mem, workspace=caller.workspace_id)


@router.post("/memories", dependencies=[WriteAdmission], response_model=AddOut)
def add(body: MemoryCreate, caller: Caller, mem: Mem) -> dict[str, Any]:
    """Store messages (``infer`` false: each as it is) for the ids given."""
    return _memory(caller, mem).add(
        [m.model_dump() for m in body.messages],
        user_id=body.user_id,
        agent_id=body.agent_id,
        run_id=body.run_id,
        metadata=body.metadata,
        infer=body.infer,
    )


@router.get("/memories", response_model=Results)
def get_all(
    caller: Caller,
    mem: Mem,
    user_id: Annotated[Id | None, Query()] = None,
    agent_id: Annotated[Id | None, Query()] = None,
    run_id: Annotated[Id | None, Query()] = None,
    limit: Annotated[int, Query(ge=1)] = 100,
) -> dict[str, Any]:
    return _memory(caller, mem).get_all(
        user_id=user_id, agent_id=agent_id, run_id=run_id, limit=limit
    )


@router.get("/memories/{memory_id}", response_model=MaybeItem)
def get(memory_id: str, caller: Caller, mem: Mem) -> dict[str, Any] | None:
    """One memory, or null when there is none (as Mem0 answers)."""
    return _memory(caller, mem).get(memory_id)


@router.put("/memories/{memory_id}", dependencies=[WriteAdmission], response_model=Mem0MessageOut)
def update(memory_id: str, body: MemoryUpdate, caller: Caller, mem: Mem) -> dict[str, Any]:
    text = body.text or body.memory or body.data
    if text is None:
        raise InvalidInput("text", "required: the memory's new text")
    return _memory(caller, mem).update(memory_id, text, metadata=body.metadata)


@router.delete(
    "/memories/{memory_id}", dependencies=[WriteAdmission], response_model=Mem0MessageOut
)
def delete(memory_id: str, caller: Caller, mem: Mem) -> dict[str, Any]:
    return _memory(caller, mem).delete(memory_id)


@router.delete("/memories", dependencies=[WriteAdmission], response_model=Mem0MessageOut)
def delete_all(
    caller: Caller,
    mem: Mem,
    user_id: Annotated[Id | None, Query()] = None,
    agent_id: Annotated[Id | None, Query()] = None,
    run_id: Annotated[Id | None, Query()] = None,
) -> dict[str, Any]:
    """Forget the memories of the ids given; refused with none (see ``/mem0/reset``)."""
    return _memory(caller, mem).delete_all(user_id=user_id, agent_id=agent_id, run_id=run_id)


@router.get("/memories/{memory_id}/history", response_model=Changes)
def history(memory_id: str, caller: Caller, mem: Mem) -> list[dict[str, Any]]:
    return _memory(caller, mem).history(memory_id)


@router.post("/search", response_model=Found)
async def search(body: SearchRequest, caller: Caller, mem: Mem, recalls: Recalls) -> dict[str, Any]:
    memory = _memory(caller, mem)

    def work() -> dict[str, Any]:
        return memory.search(
            body.query,
            user_id=body.user_id,
            agent_id=body.agent_id,
            run_id=body.run_id,
            filters=body.filters,
            limit=body.top_k or body.limit or 100,
            threshold=body.threshold,
        )

    return await recalls.run(work)


@router.post("/reset", dependencies=[WriteAdmission], response_model=Mem0MessageOut)
def reset(caller: Caller, mem: Mem, confirm: Annotated[bool, Query()] = False) -> dict[str, Any]:
    """Forget the whole workspace; only with ``?confirm=true``."""
    _memory(caller, mem).reset(confirm=confirm)
    return {"message": "Memory store reset successfully!"}
