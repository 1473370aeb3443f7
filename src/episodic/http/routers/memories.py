"""``/v1/memories``: create, list (with a text filter), get, correct, supersede, restore,
retire and delete single memories, a memory's history of versions, its supersession
links and what was decided about it."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field, StrictBool

from episodic.errors import InvalidInput
from episodic.http.auth import Caller
from episodic.http.deps import Mem, WriteAdmission, Writes
from episodic.http.errors import ERRORS
from episodic.http.models import Content, ForgetOut, Id, NonEmptyText, ScopeName, Strict
from episodic.model import Memory
from episodic.service import (
    MAX_PAGE,
    MAX_Q_CHARS,
    SOURCES,
    Episodic,
    memory_json,
    version_json,
)
from episodic.service.decisions import KINDS
from episodic.tenancy import Principal

router = APIRouter()


class MemoryIn(Strict):
    content: Content
    type: Id = "note"
    importance: float | None = Field(default=None, ge=0.0, le=1.0)
    source: Literal[SOURCES] | None = None  # type: ignore[valid-type]
    evidence: Content | None = None
    agent: Id | None = None
    crew: Id | None = None
    resource: Id | None = None
    conversation: Id | None = None
    payload: dict[str, Any] | None = None
    id: Id | None = None
    workspace: Id | None = None
    replaces: Id | None = Field(
        default=None,
        description="the id of a memory this one supersedes (kept, out of default recall)",
    )


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
    valid_from: str = Field(description="since when what it says is true (its ts by default)")
    valid_to: str | None = Field(
        description="until when it was true (a newer memory replaced it); null: still true"
    )
    superseded_by: str | None = Field(description="the id of the memory that replaced it")


class MemoryPatchIn(Strict):
    """The fields an edit may change (see ``Episodic.update``); at least one. With
    ``supersede``, ``content`` is not written over the memory: it becomes a new memory
    that supersedes this one."""

    content: Content | None = None
    importance: Annotated[float, Field(ge=0.0, le=1.0, strict=True)] | None = None
    payload: dict[str, Any] | None = None
    supersede: StrictBool = Field(
        default=False,
        description="keep this memory as superseded and remember content as the new one",
    )


class SupersedeIn(Strict):
    new: Content = Field(description="the replacing memory's id, or the text of a new one")
    reason: NonEmptyText | None = None


class SupersessionOut(BaseModel):
    old: str = Field(description="the memory replaced")
    new: str = Field(description="the memory that replaced it")
    decided_by: str = Field(
        description="explicit (:<key id>, :corrective), offline:<rule> or llm:<model>"
    )
    reason: str
    decided_at: str
    reverted_at: str | None = Field(
        default=None, description="when the replacement was undone (memory restore)"
    )
    reverted_by: str | None = Field(default=None, description="who undid it")


class SupersessionsOut(BaseModel):
    supersessions: list[SupersessionOut] = Field(
        description="the links naming the memory at either end, oldest decided first"
    )


class VersionOut(BaseModel):
    version: int
    current: bool
    content: str
    importance: float
    payload: dict[str, Any]
    written_at: str | None = Field(description="when this version was written")
    written_by: str | None = Field(
        description="the API key id (or python, cli, mcp) that wrote it; null: as created"
    )
    replaced_at: str | None
    replaced_by: str | None


class DecisionOut(BaseModel):
    kind: Literal[KINDS] = Field(  # type: ignore[valid-type]
        description="admitted, importance, not_kept (an entry an episode did not keep), "
        "supersedes, superseded, changes_part_of, partly_changed_by (a newer memory changes "
        "part of an older one, which stays), merged or retired"
    )
    decided_by: str = Field(
        description="the rule or model: policy:<rule>, offline:<rule>, llm:<model>, "
        "explicit, upkeep:<phase> ..."
    )
    reason: str
    other: str | None = Field(description="the other memory or event involved")
    at: str | None
    reverted: bool = Field(description="undone (memory restore); the decision is kept")
    reverted_at: str | None
    reverted_by: str | None


class DecisionsOut(BaseModel):
    memory: str
    decisions: list[DecisionOut] = Field(description="in the order they happened to it")


class HistoryOut(BaseModel):
    versions: list[VersionOut] = Field(description="newest first; the first is the current one")


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
async def create_memory(body: MemoryIn, caller: Caller, mem: Mem, writes: Writes) -> dict[str, Any]:
    """Remember one note now (admitted whatever its type, embedded at once);
    ``replaces`` supersedes a memory the key may edit."""
    # The note is embedded before the write takes its slot: the model is most of a note's
    # write, and every write behind it would wait for the slot (under the 64-client load
    # a note held its slot ~150 ms, p50).
    await writes.ahead(partial(mem.embed_ahead, body.content))
    return await writes.run(partial(_create_memory, body, caller, mem))


def _create_memory(body: MemoryIn, caller: Principal, mem: Episodic) -> dict[str, Any]:
    flt = caller.reading(workspace=body.workspace, agent=body.agent, crew=body.crew)
    if body.replaces is not None:
        mem.replaceable_as(caller, body.replaces)
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
        replaces=body.replaces,
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
    status: Annotated[
        Literal["active", "retired", "compacted", "superseded"] | None, Query()
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
    cursor: Annotated[str | None, Query(max_length=1000)] = None,
    q: Annotated[str | None, Query(min_length=1, max_length=MAX_Q_CHARS)] = None,
    workspace: Annotated[Id | None, Query()] = None,
) -> dict[str, Any]:
    """Memories the key can see, newest first, with filters and cursor pagination.
    ``q`` keeps those holding every word of it (keyword matching: stemmed, long words
    as prefixes, stopwords left out), in the same order, with the same cursors."""
    flt = caller.reading(
        workspace=workspace,
        agent=agent,
        crew=crew,
        scope=scope,
        resource=resource,
        conversation=conversation,
        types=tuple(type) if type else None,
    )
    page = mem.list_memories(flt, status=status, limit=limit, cursor=cursor, q=q)
    return {"items": [memory_json(m) for m in page.items], "next_cursor": page.next_cursor}


@router.get(
    "/v1/memories/{memory_id}", response_model=MemoryOut, responses=ERRORS, tags=["memories"]
)
def get_memory(memory_id: str, caller: Caller, mem: Mem) -> dict[str, Any]:
    return memory_json(mem.memory(caller.reading(), memory_id))


@router.patch(
    "/v1/memories/{memory_id}",
    response_model=MemoryOut,
    responses=ERRORS,
    tags=["memories"],
    dependencies=[WriteAdmission],
)
def update_memory(memory_id: str, body: MemoryPatchIn, caller: Caller, mem: Mem) -> dict[str, Any]:
    """Correct a memory's content, importance and/or payload; the version it replaces
    is kept (``GET .../history``). Who may delete a memory may correct it. With
    ``supersede``, ``content`` becomes a new memory that supersedes this one (returned)."""
    if body.supersede:
        return memory_json(_supersede_with(memory_id, body, caller, mem))
    memory = mem.update_as(
        caller, memory_id, content=body.content, importance=body.importance, payload=body.payload
    )
    return memory_json(memory)


def _supersede_with(
    memory_id: str, body: MemoryPatchIn, caller: Principal, mem: Episodic
) -> Memory:
    if body.content is None:
        raise InvalidInput("content", "supersede needs the content of the new memory")
    for name in ("importance", "payload"):
        if getattr(body, name) is not None:
            raise InvalidInput(name, "cannot be changed with supersede: edit the new memory")
    return mem.supersede_as(caller, memory_id, body.content)


@router.post(
    "/v1/memories/{memory_id}/supersede",
    dependencies=[WriteAdmission],
    response_model=MemoryOut,
    responses=ERRORS,
    tags=["memories"],
)
def supersede_memory(memory_id: str, body: SupersedeIn, caller: Caller, mem: Mem) -> dict[str, Any]:
    """Replace a memory with ``new`` (another memory's id, or the text of a new one):
    the old one is kept as superseded, out of default recall. Returns the memory that
    replaced it. Who may correct a memory may supersede it."""
    return memory_json(mem.supersede_as(caller, memory_id, body.new, reason=body.reason))


@router.get(
    "/v1/memories/{memory_id}/supersessions",
    response_model=SupersessionsOut,
    responses=ERRORS,
    tags=["memories"],
)
def memory_supersessions(memory_id: str, caller: Caller, mem: Mem) -> dict[str, Any]:
    """What replaced this memory and what it replaced: who decided, why, when."""
    return {"supersessions": [s.to_json() for s in mem.supersessions_as(caller, memory_id)]}


@router.get(
    "/v1/memories/{memory_id}/decisions",
    response_model=DecisionsOut,
    responses=ERRORS,
    tags=["memories"],
)
def memory_decisions(memory_id: str, caller: Caller, mem: Mem) -> dict[str, Any]:
    """What was decided about this memory and by what: the rule that admitted it and
    its importance, what it replaced and what replaced it, what it was merged into, the
    phase that retired it; reverted decisions say so."""
    decisions = mem.decisions_as(caller, memory_id)
    return {"memory": memory_id, "decisions": [d.to_json() for d in decisions]}


@router.post(
    "/v1/memories/{memory_id}/restore",
    dependencies=[WriteAdmission],
    response_model=MemoryOut,
    responses=ERRORS,
    tags=["memories"],
)
def restore_memory(memory_id: str, caller: Caller, mem: Mem) -> dict[str, Any]:
    """Undo a supersession or a retirement: the memory is active again, and the decision
    is kept as reverted, so neither detection nor the end of its phase makes it again.
    422 (field ``memory_id``) when it is neither superseded nor retired. Who may supersede
    a memory may restore it."""
    return memory_json(mem.restore_as(caller, memory_id))


@router.get(
    "/v1/memories/{memory_id}/history",
    response_model=HistoryOut,
    responses=ERRORS,
    tags=["memories"],
)
def memory_history(memory_id: str, caller: Caller, mem: Mem) -> dict[str, Any]:
    """A memory's versions, newest first: the current one, then each an edit replaced."""
    return {"versions": [version_json(v) for v in mem.history_as(caller, memory_id)]}


@router.post(
    "/v1/memories/{memory_id}/retire",
    dependencies=[WriteAdmission],
    response_model=MemoryOut,
    responses=ERRORS,
    tags=["memories"],
)
def retire_memory(memory_id: str, caller: Caller, mem: Mem) -> dict[str, Any]:
    """Retire a memory: kept and exported, never recalled again."""
    return memory_json(mem.retire_as(caller, memory_id))


class IndexOneOut(BaseModel):
    id: str
    indexed: bool = Field(description="true when the memory is embedded now")
    detail: str = Field(description="what was done, or why not (sparse-only, embedder down)")


@router.post(
    "/v1/memories/{memory_id}/index",
    dependencies=[WriteAdmission],
    response_model=IndexOneOut,
    responses=ERRORS,
    tags=["memories"],
)
def index_memory(memory_id: str, caller: Caller, mem: Mem) -> dict[str, Any]:
    """Embed one memory now, before the next sweep: a hot path that wants what it just
    wrote found by meaning at its next recall. When it cannot be embedded now,
    ``indexed`` is false and ``detail`` says why; the background indexer still embeds
    it later."""
    return mem.index_one_in(caller.reading(), memory_id).to_json()


@router.delete(
    "/v1/memories/{memory_id}",
    response_model=ForgetOut,
    responses=ERRORS,
    tags=["forget"],
    dependencies=[WriteAdmission],
)
def delete_memory(memory_id: str, caller: Caller, mem: Mem) -> dict[str, Any]:
    """Forget one memory (and what was derived from it) everywhere."""
    return mem.forget_memory_as(caller, memory_id).to_json()
