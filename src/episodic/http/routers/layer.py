"""The agent-loop hooks over HTTP (seed 002's layer, ``episodic.layer.MemoryLayer``), for a
runtime in another process or language: ``GET /v1/layer/init`` (what the memory holds
for the agent), ``POST /v1/layer/recall`` (the episodes that fit a token budget, as an
``<episodes>`` block), ``POST /v1/layer/complete`` (a finished run's transcript becomes
episodes now, keeping its outcome, and its session ends), and ``POST
/v1/sessions/{session}/end`` (end a session a caller named on its recalls: each memory
they returned is reinforced once).

Each request is one layer bound to what the key may see, with the same names and results
as ``MemoryLayer``; the caller keeps the session's id between requests."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel, Field, StrictInt

from episodic.http.auth import Caller
from episodic.http.deps import Mem, Recalls, WriteAdmission
from episodic.http.errors import ERRORS
from episodic.http.models import Id, NonEmptyText, Strict, Text
from episodic.http.routers.memories import MemoryOut
from episodic.layer import MemoryLayer
from episodic.model import Scope
from episodic.service import Episodic
from episodic.service.pages import memory_json
from episodic.tenancy import Principal

router = APIRouter()
# Completing a run and ending a session write: each is counted in the line of writes.
writes = APIRouter(dependencies=[WriteAdmission])

MAX_TRANSCRIPT_ITEMS = 1000


class Where(Strict):
    """Whose layer: ``workspace`` defaults to the key's; an agent or lead key may name
    only its own agent or crew. ``session`` names the session the layer's recalls belong
    to (a chat's id, say); ``/v1/layer/complete`` ends it."""

    workspace: Id | None = None
    agent: Id | None = None
    crew: Id | None = None
    resource: Id | None = None
    session: Id | None = None


class LayerRecallIn(Where):
    budget_tokens: StrictInt = Field(
        description="the runtime's budget for the block; held to 300..2000 tokens"
    )
    query: NonEmptyText | None = Field(
        default=None, description="with order relevant: the episodes most relevant to it first"
    )
    order: Literal["recent", "relevant"] = "recent"
    policy: Id | None = None


class TranscriptItem(Strict):
    role: Literal["user", "assistant", "tool", "system"]
    content: Text = ""
    name: Id | None = None
    ts: Id | None = Field(default=None, description="ISO 8601; default now")


class CompleteIn(Where):
    transcript: list[TranscriptItem] = Field(max_length=MAX_TRANSCRIPT_ITEMS)
    conversation: Id | None = Field(
        default=None, description="the run's conversation; default: the session"
    )
    outcome: Id | None = Field(
        default=None,
        description='how the run ended ("success", "failed: ..."), kept on each episode',
    )


class SessionEndIn(Strict):
    workspace: Id | None = None
    outcome: Id | None = None


class LayerStateOut(BaseModel):
    workspace: str
    agent: str | None
    resource: str | None
    mode: Literal["vector", "sparse-only"]
    episodes: int
    runs: int
    last_episode_at: str | None


class RecalledOut(BaseModel):
    text: str = Field(description='the <episodes> block; "" when none fits')
    episodes: list[MemoryOut] = Field(description="the episodes in it, oldest first")
    tokens: int
    budget_tokens: int


class CompletedOut(BaseModel):
    episodes: list[MemoryOut] = Field(description="the run's episodes, newest first")
    conversation: str
    reinforced: list[str] = Field(description="the memories the session's end reinforced")


class SessionEndOut(BaseModel):
    session: str
    episodes: int
    reinforced: list[str]


def layer_for(mem: Episodic, caller: Principal, where: Where, **options: Any) -> MemoryLayer:
    """The layer a request acts through: what the key may see, never wider."""
    flt = caller.reading(
        workspace=where.workspace, agent=where.agent, crew=where.crew, resource=where.resource
    )
    return MemoryLayer(
        mem,
        workspace=flt.workspace_id,
        agent=flt.agent_id,
        crew=flt.crew_id,
        resource=flt.resource_id,
        scope=flt.scope if isinstance(flt.scope, Scope) else None,
        session=where.session,
        **options,
    )


@router.get("/v1/layer/init", response_model=LayerStateOut, responses=ERRORS, tags=["layer"])
def init(
    caller: Caller,
    mem: Mem,
    agent: Annotated[Id | None, Query()] = None,
    crew: Annotated[Id | None, Query()] = None,
    resource: Annotated[Id | None, Query()] = None,
    workspace: Annotated[Id | None, Query()] = None,
) -> dict[str, Any]:
    """``MemoryLayer.init``: the recall mode, and the episodes of the last 20 runs."""
    where = Where(workspace=workspace, agent=agent, crew=crew, resource=resource)
    state = layer_for(mem, caller, where).init()
    last = state.last_episode_at
    return {
        "workspace": state.workspace,
        "agent": state.agent,
        "resource": state.resource,
        "mode": state.mode,
        "episodes": state.episodes,
        "runs": state.runs,
        "last_episode_at": None if last is None else last.isoformat(),
    }


@router.post("/v1/layer/recall", response_model=RecalledOut, responses=ERRORS, tags=["layer"])
async def recall(body: LayerRecallIn, caller: Caller, mem: Mem, recalls: Recalls) -> dict[str, Any]:
    """``MemoryLayer.recall``: the episodes that fit ``budget_tokens`` (held to
    300..2000), newest first or most relevant to ``query`` first, listed oldest first
    in an ``<episodes>`` block that says how each run ended."""
    layer = layer_for(mem, caller, body, order=body.order, policy=body.policy)

    def work() -> dict[str, Any]:
        found = layer.recall(body.budget_tokens, body.query)
        return {
            "text": found.text,
            "episodes": [memory_json(m) for m in found.episodes],
            "tokens": found.tokens,
            "budget_tokens": found.budget_tokens,
        }

    return await recalls.run(work)


@writes.post("/v1/layer/complete", response_model=CompletedOut, responses=ERRORS, tags=["layer"])
def complete(body: CompleteIn, caller: Caller, mem: Mem) -> dict[str, Any]:
    """``MemoryLayer.on_complete``: the run's transcript is stored as a conversation
    (default: the session) and becomes episodes now, each keeping ``outcome``; the
    session ends (each memory its recalls returned is reinforced once)."""
    layer = layer_for(mem, caller, body)
    conversation = body.conversation or layer.session
    episodes = layer.on_complete(
        [item.model_dump(exclude_none=True) for item in body.transcript],
        conversation=conversation,
        outcome=body.outcome,
    )
    return {
        "episodes": [memory_json(m) for m in episodes],
        "conversation": conversation,
        "reinforced": layer.reinforced,
    }


@writes.post(
    "/v1/sessions/{session}/end", response_model=SessionEndOut, responses=ERRORS, tags=["layer"]
)
def end_session(
    caller: Caller,
    mem: Mem,
    session: Annotated[Id, Path()],
    body: SessionEndIn,
) -> dict[str, Any]:
    """``Episodic.end_session``: each memory the session's recalls returned (recalls
    that named it as ``session``, or as their ``conversation``) is reinforced once; when
    the session is a conversation, its pending messages become episodes now. A key bound
    to an agent ends only that agent's sessions (403 naming the session otherwise); an
    admin key ends any."""
    return mem.end_session_as(
        caller, session, workspace=body.workspace, outcome=body.outcome
    ).to_json()
