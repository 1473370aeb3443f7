"""Mem0's self-hosted REST routes, with its bodies and answers, over
``episodic.compat.mem0.Memory`` in the API key's workspace.

They are always served under ``/mem0`` (``router``): a path of their own beside ``/v1``,
so nothing of episodic's is shadowed. ``episodic serve --compat mem0`` serves them at the
root paths too (``root_router``: ``POST /memories``, ``POST /search`` ...), where Mem0's
server has them, so a program written for that server needs only its base URL changed.
The key goes in ``Authorization: Bearer`` or, as Mem0's server takes it, ``X-API-Key``.
Mem0's server has no per-agent scoping, so every route needs an admin key (an agent key
is refused, never widened)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field, RootModel

from episodic.compat.mem0 import Memory
from episodic.errors import InvalidInput
from episodic.http.auth import bearer_secret
from episodic.http.deps import Mem, Recalls, WriteAdmission
from episodic.http.errors import ERRORS
from episodic.http.models import Id
from episodic.logs import current_request
from episodic.service import Episodic
from episodic.tenancy import Principal

router = APIRouter(prefix="/mem0", tags=["mem0"], responses=ERRORS)
root_router = APIRouter(tags=["mem0"], responses=ERRORS)

# Declared for the OpenAPI document; ``caller`` reads the headers itself.
_BEARER = HTTPBearer(auto_error=False, description="an API key: `episodic keys create`")
_API_KEY = APIKeyHeader(
    name="X-API-Key", auto_error=False, description="the same API key, as Mem0's server takes it"
)


def caller(
    request: Request,
    mem: Mem,
    _bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)],
    _key: Annotated[str | None, Depends(_API_KEY)],
) -> Principal:
    """The admin key in ``Authorization: Bearer`` or ``X-API-Key``."""
    found = mem.authenticate(bearer_secret(request) or request.headers.get("x-api-key"))
    info = current_request()
    if info is not None:
        info.workspace = found.workspace_id  # for the request's log line
    found.require_admin("Mem0's routes (no per-agent scoping)")
    return found


Caller = Annotated[Principal, Depends(caller)]


def _unsupported(**given: object) -> None:
    """Mem0 options episodic has no counterpart for: refused by name when set, never
    dropped silently."""
    for name, value in given.items():
        if value not in (None, False):
            raise InvalidInput(name, "not supported by episodic's Mem0 routes; leave it out")


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: str = "user"
    content: str
    name: str | None = None


class MemoryCreate(BaseModel):
    messages: list[Message] = Field(min_length=1)
    user_id: Id | None = None
    agent_id: Id | None = None
    run_id: Id | None = None
    metadata: dict[str, Any] | None = None
    infer: bool | None = None  # None: True, as Mem0's server takes it
    # Mem0's server takes these; episodic has no counterpart, so they are refused if set.
    expiration_date: str | None = None
    memory_type: str | None = None
    prompt: str | None = None


class SearchRequest(BaseModel):
    query: str = Field(min_length=1)
    user_id: Id | None = None
    agent_id: Id | None = None
    run_id: Id | None = None
    filters: dict[str, Any] | None = None
    limit: int | None = Field(default=None, ge=1)
    top_k: int | None = Field(default=None, ge=1)
    threshold: float | None = None
    explain: bool | None = None  # refused if true: no per-hit score breakdown here
    show_expired: bool | None = None  # nothing expires here: the same answer either way


class MemoryUpdate(BaseModel):
    # Mem0's server has taken the new text as ``text``; older clients send ``memory``
    # or ``data``.
    text: str | None = None
    memory: str | None = None
    data: str | None = None
    metadata: dict[str, Any] | None = None
    expiration_date: str | None = None


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
    detail: str | None = None  # NONE: what it matched (e.g. the cosine and the memory)
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


def _memory(who: Principal, mem: Episodic) -> Memory:
    return Memory(episodic=mem, workspace=who.workspace_id)


def _routes(r: APIRouter) -> None:
    """Mem0's nine routes on ``r``; their answers are Mem0's server's, word for word."""

    @r.post("/memories", dependencies=[WriteAdmission], response_model=AddOut)
    def add(body: MemoryCreate, who: Caller, mem: Mem) -> dict[str, Any]:
        """Store messages (``infer`` false: each as it is) for the ids given."""
        _unsupported(
            expiration_date=body.expiration_date, memory_type=body.memory_type, prompt=body.prompt
        )
        return _memory(who, mem).add(
            [m.model_dump(exclude_none=True) for m in body.messages],
            user_id=body.user_id,
            agent_id=body.agent_id,
            run_id=body.run_id,
            metadata=body.metadata,
            infer=body.infer is not False,
        )

    @r.get("/memories", response_model=Results)
    def get_all(
        who: Caller,
        mem: Mem,
        user_id: Annotated[Id | None, Query()] = None,
        agent_id: Annotated[Id | None, Query()] = None,
        run_id: Annotated[Id | None, Query()] = None,
        limit: Annotated[int | None, Query(ge=1)] = None,
        top_k: Annotated[
            int | None, Query(ge=1, description="Mem0's server's name of limit")
        ] = None,
    ) -> dict[str, Any]:
        """The memories of the ids given (with none: the workspace's), newest first."""
        return _memory(who, mem).get_all(
            user_id=user_id, agent_id=agent_id, run_id=run_id, limit=top_k or limit or 100
        )

    @r.get("/memories/{memory_id}", response_model=MaybeItem)
    def get(memory_id: str, who: Caller, mem: Mem) -> dict[str, Any] | None:
        """One memory, or null when there is none (as Mem0 answers)."""
        return _memory(who, mem).get(memory_id)

    @r.put("/memories/{memory_id}", dependencies=[WriteAdmission], response_model=Mem0MessageOut)
    def update(memory_id: str, body: MemoryUpdate, who: Caller, mem: Mem) -> dict[str, Any]:
        """New text and/or metadata; the old text stays in the memory's history."""
        _unsupported(expiration_date=body.expiration_date)
        text = body.text or body.memory or body.data
        return _memory(who, mem).update(memory_id, text, metadata=body.metadata)

    @r.delete("/memories/{memory_id}", dependencies=[WriteAdmission], response_model=Mem0MessageOut)
    def delete(memory_id: str, who: Caller, mem: Mem) -> dict[str, Any]:
        _memory(who, mem).delete(memory_id)
        return {"message": "Memory deleted successfully"}

    @r.delete("/memories", dependencies=[WriteAdmission], response_model=Mem0MessageOut)
    def delete_all(
        who: Caller,
        mem: Mem,
        user_id: Annotated[Id | None, Query()] = None,
        agent_id: Annotated[Id | None, Query()] = None,
        run_id: Annotated[Id | None, Query()] = None,
    ) -> dict[str, Any]:
        """Forget the memories of the ids given; refused with none (see ``reset``)."""
        _memory(who, mem).delete_all(user_id=user_id, agent_id=agent_id, run_id=run_id)
        return {"message": "All relevant memories deleted"}

    @r.get("/memories/{memory_id}/history", response_model=Changes)
    def history(memory_id: str, who: Caller, mem: Mem) -> list[dict[str, Any]]:
        return _memory(who, mem).history(memory_id)

    @r.post("/search", response_model=Found)
    async def search(
        body: SearchRequest, who: Caller, mem: Mem, recalls: Recalls
    ) -> dict[str, Any]:
        _unsupported(explain=body.explain)
        memory = _memory(who, mem)

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

    @r.post("/reset", dependencies=[WriteAdmission], response_model=Mem0MessageOut)
    def reset(who: Caller, mem: Mem, confirm: Annotated[bool, Query()] = False) -> dict[str, Any]:
        """Forget the whole workspace; only with ``?confirm=true`` (Mem0's server resets
        on the bare call: here a stray call must not wipe a memory store)."""
        _memory(who, mem).reset(confirm=confirm)
        return {"message": "All memories reset"}


_routes(router)
_routes(root_router)
