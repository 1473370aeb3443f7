"""Reading memory back: ``POST /v1/recall`` (the memories that matter for a query),
``POST /v1/render`` (the same as a prompt-ready block) and ``GET /v1/recent`` (the newest
episodes)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field, StrictBool, StrictInt

from episodic.http.auth import Caller
from episodic.http.deps import Mem, Recalls
from episodic.http.errors import ERRORS
from episodic.http.models import Id, NonEmptyText, ScopeName, Strict
from episodic.recall.arguments import MAX_RENDER_CHARS
from episodic.recall.engine import RecallResult
from episodic.tenancy import Principal
from episodic.write.episodes import episode_json

router = APIRouter()


class RecallIn(Strict):
    query: NonEmptyText
    k: StrictInt | None = Field(
        default=None,
        description="how many memories, 1-50 (default 5); outside that range: 5, with a warning",
    )
    policy: Id | None = None
    scope: ScopeName | None = None
    agent: Id | None = None
    crew: Id | None = None
    resource: Id | None = None
    conversation: Id | None = None
    types: list[Id] | None = Field(default=None, min_length=1, max_length=20)
    explain: bool = False
    walk: Literal[0, 1] | None = None
    mark: bool = Field(default=True, description="count the hits as referenced")
    detail: Literal["none", "auto", "full"] | None = Field(
        default=None,
        description="which episodes come with their messages: none, auto (the default: "
        "key moments ranked in the top 2) or full (every episode)",
    )
    as_of: Id | None = Field(
        default=None,
        description="an ISO 8601 time: answer as memory stood then (naive times are UTC)",
    )
    include_superseded: StrictBool = Field(
        default=False, description="show memories a newer one replaced too, with their validity"
    )
    learning_type: Id | list[Id] | None = Field(
        default=None,
        description="only learnings of this type (or these): declarative, procedural, "
        "directive, corrective",
    )
    session: Id | None = Field(
        default=None,
        description="the session this recall belongs to (a chat's id, say): its end "
        "(POST /v1/sessions/{session}/end) reinforces each memory returned once; default: "
        "the conversation, when one is named",
    )
    workspace: Id | None = None


class RenderIn(RecallIn):
    max_chars: int | None = Field(default=None, ge=1, le=MAX_RENDER_CHARS)


class DetailOut(BaseModel):
    id: str
    role: str | None
    name: str | None
    ts: str
    content: str


class PassageOut(BaseModel):
    start: int
    stop: int
    text: str


class HitOut(BaseModel):
    id: str
    score: float
    cosine: float | None
    content: str
    passage: PassageOut | None = Field(
        default=None,
        description="a long memory: the passage that matched, content[start:stop]",
    )
    type: str
    severity: str
    workspace: str
    crew: str | None
    agent: str | None
    resource: str | None
    conversation: str | None
    payload: dict[str, Any]
    ts: str
    age_seconds: float
    source: str | None
    evidence: str | None
    importance: float
    reference_count: int
    via: str | None
    moment: Literal["key moment", "flashbulb"] | None = Field(
        description="seed 003's label of a surprising episode"
    )
    details: list[DetailOut] = Field(description="the episode's messages, at this detail level")
    status: str = Field(description="active, or superseded (with as_of or include_superseded)")
    valid_from: str = Field(description="since when what it says is true")
    valid_to: str | None = Field(description="until when it was true; null: still true")
    superseded_by: str | None = Field(description="the id of the memory that replaced it")
    newer: str | None = Field(
        default=None,
        description="a newer memory about the same subject recalled with it: this one is earlier",
    )


class TraceRowOut(BaseModel):
    id: str
    rank: int
    score: float
    detail: dict[str, float] | None = None


class DroppedOut(BaseModel):
    id: str
    stage: str
    reason: str
    detail: str | None = None


class TraceOut(BaseModel):
    policy: str
    query: str
    lexical_query: str
    time_windows: list[str]
    stages: dict[str, list[TraceRowOut]]
    dropped: list[DroppedOut]


class RecallOut(BaseModel):
    hits: list[HitOut]
    institutional: list[HitOut] = Field(
        description="standing knowledge, always loaded apart from the k hits (newest first)"
    )
    mode: Literal["vector", "sparse-only"]
    policy: str
    warnings: list[str]
    trace: TraceOut | None = None


class RenderOut(BaseModel):
    block: str = Field(description='the injection block; "" when nothing was recalled')
    hit_ids: list[str]
    mode: Literal["vector", "sparse-only"]
    policy: str
    warnings: list[str]
    trace: TraceOut | None = None


class EpisodeOut(BaseModel):
    id: str
    title: str
    summary: str
    start: str | None
    end: str | None
    surprise: float
    message_count: int
    key_moment: bool
    flashbulb: bool
    outcome: str | None = Field(None, description="how the run that wrote it ended")
    keyphrases: list[str]
    described_by: str | None
    workspace: str
    conversation: str | None
    agent: str | None
    resource: str | None
    stability: float | None
    difficulty: float | None


class RecentOut(BaseModel):
    episodes: list[EpisodeOut]


# Recall and render embed the query and rank: they wait for a slot on the event loop and
# run in a worker thread of their own (episodic.http.limits.Lane), so a line of
# them holds no thread of the pool that writes and cheap reads run on.
@router.post("/v1/recall", response_model=RecallOut, responses=ERRORS, tags=["recall"])
async def recall(body: RecallIn, caller: Caller, mem: Mem, recalls: Recalls) -> dict[str, Any]:
    """The memories that matter for ``query``, best first; ``explain`` adds the trace."""
    args = _recall_args(body, caller)

    def work() -> dict[str, Any]:
        return _recall_json(mem.recall(body.query, **args), caller)

    return await recalls.run(work)


@router.post("/v1/render", response_model=RenderOut, responses=ERRORS, tags=["recall"])
async def render(body: RenderIn, caller: Caller, mem: Mem, recalls: Recalls) -> dict[str, Any]:
    """The prompt-ready injection block for ``query`` (untrusted hints)."""
    args = _recall_args(body, caller)

    def work() -> dict[str, Any]:
        block, result = mem.render_explained(body.query, max_chars=body.max_chars, **args)
        out = _recall_json(result, caller)
        out.pop("institutional")  # the block shows them
        # The hits the block holds (and only those were marked referenced).
        return {"block": block, "hit_ids": [h["id"] for h in out.pop("hits")], **out}

    return await recalls.run(work)


@router.get("/v1/recent", response_model=RecentOut, responses=ERRORS, tags=["recall"])
def recent(
    caller: Caller,
    mem: Mem,
    agent: Annotated[Id | None, Query()] = None,
    crew: Annotated[Id | None, Query()] = None,
    resource: Annotated[Id | None, Query()] = None,
    conversation: Annotated[Id | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
    workspace: Annotated[Id | None, Query()] = None,
) -> dict[str, Any]:
    """The newest episodes the key can see, newest first."""
    flt = caller.reading(
        workspace=workspace,
        agent=agent,
        crew=crew,
        resource=resource,
        conversation=conversation,
    )
    return {"episodes": [episode_json(m) for m in mem.recent_in(flt, limit)]}


def _recall_args(body: RecallIn, caller: Principal) -> dict[str, Any]:
    flt = caller.reading(
        workspace=body.workspace,
        agent=body.agent,
        crew=body.crew,
        scope=body.scope,
        resource=body.resource,
        conversation=body.conversation,
        types=tuple(body.types) if body.types else None,
    )
    return {
        "workspace": flt.workspace_id,
        "agent": flt.agent_id,
        "crew": flt.crew_id,
        "resource": flt.resource_id,
        "conversation": flt.conversation_id,
        "scope": flt.scope,
        "types": flt.types,
        "k": body.k,
        "policy": body.policy,
        "explain": body.explain,
        "walk": body.walk,
        "mark": body.mark,
        "detail": body.detail,
        "as_of": body.as_of,
        "include_superseded": body.include_superseded,
        "learning_type": body.learning_type,
        "session": body.session,
    }


def _recall_json(result: RecallResult, caller: Principal) -> dict[str, Any]:
    trace = caller.trace_view(result.trace)
    return {
        "hits": [h.to_json() for h in result.hits],
        "institutional": [h.to_json() for h in result.institutional],
        "mode": result.mode,
        "policy": result.policy,
        "warnings": result.warnings,
        "trace": None if trace is None else trace.to_json(),
    }
