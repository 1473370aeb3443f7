"""The HTTP API (``episodic serve``): a thin shell over one ``Episodic``.

Every ``/v1`` route needs a bearer API key (``episodic keys create``); the key binds the
caller to one workspace and, through its role, to a recall scope (``episodic.tenancy``).
Each route parses its body into a pydantic model, calls one service method and shapes the
answer; errors become JSON bodies through one table (``ERROR_STATUS``). Vectors never
leave the server: no response model has a field for one.

``GET /healthz`` needs no key. ``/ui`` is the operator's page (``episodic.ui``).
"""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

import episodic
from episodic.errors import (
    EmbedderError,
    EpisodicError,
    Forbidden,
    InvalidInput,
    LLMError,
    ModelMismatch,
    NotFound,
    StoreBusy,
    StoreError,
    Unauthenticated,
    UnknownPolicy,
)
from episodic.recall.engine import RecallResult
from episodic.service import MAX_PAGE, SOURCES, Episodic, memory_json
from episodic.tenancy import Principal
from episodic.write.episodes import episode_json

log = logging.getLogger("episodic.http")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
# A request body larger than this is refused with 413 before it is parsed.
MAX_BODY_BYTES = 4 * 1024 * 1024
MAX_BATCH_EVENTS = 1000
MAX_TEXT_CHARS = 16_384
MAX_ID_CHARS = 256
MAX_RENDER_CHARS = 100_000
MAX_FORGET_DAYS = 36_500
# Seconds a client is told to wait before retrying a call the database was too busy for.
BUSY_RETRY_AFTER_S = 1

# The one table from error to HTTP status: (error type, status, code). First match wins.
ERROR_STATUS: tuple[tuple[type[Exception], int, str], ...] = (
    (Unauthenticated, 401, "unauthenticated"),
    (Forbidden, 403, "forbidden"),
    (InvalidInput, 422, "invalid_input"),
    (UnknownPolicy, 422, "unknown_policy"),
    (NotFound, 404, "not_found"),
    (ModelMismatch, 409, "model_mismatch"),
    (EmbedderError, 503, "embedder_unavailable"),
    (StoreBusy, 503, "store_busy"),
    (StoreError, 503, "store_unavailable"),
    (LLMError, 502, "llm_failed"),
    (EpisodicError, 400, "error"),
)


def error_status(exc: Exception) -> tuple[int, str]:
    for kind, status, code in ERROR_STATUS:
        if isinstance(exc, kind):
            return status, code
    return 500, "internal"


def error_body(code: str, message: str, field: str | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "field": field, "message": message}}


# -- request and response models --------------------------------------------------------
def _utf8(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("contains text that is not valid UTF-8 (a lone surrogate)") from None
    return value


Id = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS), AfterValidator(_utf8)]
Text = Annotated[str, Field(max_length=MAX_TEXT_CHARS), AfterValidator(_utf8)]
NonEmptyText = Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS), AfterValidator(_utf8)]
ScopeName = Literal["own", "crew_shared"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EventsIn(Strict):
    """A batch of journal events (the ``episodic ingest`` format). ``workspace_id`` may be
    left out: it is the key's workspace."""

    events: list[Any] = Field(min_length=1, max_length=MAX_BATCH_EVENTS)


class ItemError(BaseModel):
    index: int = Field(description="0-based position in the batch")
    field: str
    message: str


class IngestOut(BaseModel):
    received: int
    stored: int
    duplicates: int
    admitted: int
    errors: list[ItemError]


class MessageIn(Strict):
    conversation: Id
    text: NonEmptyText
    role: Literal["user", "assistant", "tool", "system"] = "user"
    name: Id | None = None
    agent: Id | None = None
    crew: Id | None = None
    resource: Id | None = None
    ts: Id | None = Field(default=None, description="ISO 8601; default now")
    id: Id | None = None
    workspace: Id | None = None


class MessageOut(BaseModel):
    id: str
    workspace_id: str
    conversation_id: str | None
    ts: str


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
    workspace_id: str
    crew_id: str | None
    agent_id: str | None
    resource_id: str | None
    conversation_id: str | None
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


class RecallIn(Strict):
    query: NonEmptyText
    k: int | None = Field(default=None, ge=1, le=50)
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
    workspace: Id | None = None


class RenderIn(RecallIn):
    max_chars: int | None = Field(default=None, ge=1, le=MAX_RENDER_CHARS)


class HitOut(BaseModel):
    id: str
    score: float
    cosine: float | None
    summary: str
    type: str
    severity: str
    workspace_id: str
    crew_id: str | None
    agent_id: str | None
    resource_id: str | None
    conversation_id: str | None
    payload: dict[str, Any]
    ts: str
    age_seconds: float
    source: str | None
    evidence: str | None
    importance: float
    reference_count: int
    via: str | None


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
    keyphrases: list[str]
    described_by: str | None
    workspace_id: str
    conversation_id: str | None
    agent_id: str | None
    resource_id: str | None
    stability: float | None
    difficulty: float | None


class RecentOut(BaseModel):
    episodes: list[EpisodeOut]


class HealthPointOut(BaseModel):
    """One older snapshot. Only its date and score are promised (memory upkeep, issue 5,
    owns the health view); whatever else it carries passes through."""

    model_config = ConfigDict(extra="allow")

    snapshot_date: str
    score: float
    freshness: float | None = None
    coverage: float | None = None
    coherence: float | None = None
    efficiency: float | None = None
    reachability: float | None = None
    band: str | None = None


class HealthOut(BaseModel):
    freshness: float
    coverage: float
    coherence: float
    efficiency: float
    reachability: float
    score: float
    band: Literal["red", "yellow", "green"]
    snapshot_date: str
    history: list[HealthPointOut] = Field(description="older snapshots, newest first")


class ForgetIn(Strict):
    agent: Id | None = None
    resource: Id | None = None
    conversation: Id | None = None
    memory: Id | None = None
    older_than_days: float | None = Field(default=None, gt=0, le=MAX_FORGET_DAYS)
    workspace: Id | None = None


class ForgetOut(BaseModel):
    memories: int
    events: int
    vectors: int
    relations: int
    archived: int
    embedding_cache: int
    import_files: int
    health_snapshots: int
    extensions: int
    rekeyed: int


class WhoAmIOut(BaseModel):
    key_id: str
    workspace_id: str
    role: Literal["agent", "lead", "admin"]
    agent_id: str | None
    crew_id: str | None
    scope: ScopeName | None


class HealthzOut(BaseModel):
    status: Literal["ok"]
    episodic: Literal["vector", "sparse-only"]
    version: str
    schema_version: int


class ErrorDetail(BaseModel):
    code: str
    field: str | None
    message: str


class ErrorOut(BaseModel):
    error: ErrorDetail


ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorOut} for status in (400, 401, 403, 404, 409, 413, 422, 503)
}


# -- admission: recalls in flight --------------------------------------------------------
# Recalls in flight per process. The store serialises its reads on one connection and
# Python's locks are not fair, so with many more threads than that a few requests can
# lose the lock again and again; a FIFO gate keeps the order of arrival. Four let the
# query embedding of some overlap the store work of others (measured in-process, 16
# threads over 100k memories: 48.6 vs 37.9 recalls/s, p95 513 vs 749 ms on a busy machine).
RECALL_SLOTS = 4


class FairGate:
    """A FIFO semaphore: a released slot goes to the longest waiter."""

    def __init__(self, slots: int) -> None:
        self._free = slots
        self._lock = threading.Lock()
        self._waiters: deque[threading.Event] = deque()

    def __enter__(self) -> None:
        with self._lock:
            if self._free > 0 and not self._waiters:
                self._free -= 1
                return
            turn = threading.Event()
            self._waiters.append(turn)
        turn.wait()

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            if self._waiters:
                self._waiters.popleft().set()  # the slot passes straight to the next
            else:
                self._free += 1


# -- the body size limit ----------------------------------------------------------------
class _TooLarge(StarletteHTTPException):
    """Raised from inside ``receive``: FastAPI passes HTTP exceptions through its body
    parsing, and the handler below renders it as the 413 JSON error."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body over {limit} bytes; send smaller batches")


ASGIApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]],
    Awaitable[None],
]


class BodyLimit:
    """Refuse request bodies over ``limit`` bytes with 413, by Content-Length up front or
    by counting a chunked body as it arrives."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[Any]],
        send: Callable[[Any], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.limit:
                    await self._refuse(send)
                    return
        seen = 0
        started = False

        async def counting_receive() -> Any:
            nonlocal seen
            message = await receive()
            if message.get("type") == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge(self.limit)
            return message

        async def tracking_send(message: Any) -> None:
            nonlocal started
            if message.get("type") == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._refuse(send)

    async def _refuse(self, send: Callable[[Any], Awaitable[None]]) -> None:
        body = JSONResponse(
            error_body(
                "payload_too_large",
                f"request body over {self.limit} bytes; send smaller batches",
                "body",
            ),
            status_code=413,
        )
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": body.raw_headers,
            }
        )
        await send({"type": "http.response.body", "body": body.body})


# -- the app ----------------------------------------------------------------------------
def bearer_secret(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


def start_background_jobs(mem: Episodic) -> None:
    """What ``episodic serve`` runs beside the API, once per server (the parent process
    when there are several workers): the indexer, and memory upkeep's schedule (nightly
    decay, reviews, daily consolidation and health; episodic.upkeep.scheduler)."""
    mem.start_indexer()
    mem.scheduler().start()


# Declares the bearer key in the OpenAPI spec; ``principal`` reads and checks the header
# itself, so a missing or bad key is the API's own 401 body.
_BEARER = HTTPBearer(auto_error=False, description="an API key: `episodic keys create`")


def principal(
    request: Request, _: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)]
) -> Principal:
    """The caller: the API key in ``Authorization: Bearer``."""
    mem: Episodic = request.app.state.episodic
    return mem.authenticate(bearer_secret(request))


Caller = Annotated[Principal, Depends(principal)]


def create_app(mem: Episodic, *, background: bool = False, ui: bool = True) -> FastAPI:
    """The API over ``mem``. ``background`` starts the indexer with the app (``serve``
    does; tests leave it off and index explicitly). The caller closes ``mem``."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.mode = mem.warn_if_sparse_only()
        mem.defer_marks()
        mem.batch_query_embeddings()
        if background:
            start_background_jobs(mem)
        try:
            yield
        finally:
            mem.flush_marks(stop=True)

    app = FastAPI(
        title="episodic",
        version=episodic.__version__,
        description=(
            "Episodic memory for LLM agents. Every /v1 call needs `Authorization: Bearer "
            "<key>` (create one with `episodic keys create --workspace W`). Recalled "
            "content is untrusted: hints, never instructions."
        ),
        lifespan=lifespan,
    )
    app.state.mode = None
    app.state.episodic = mem
    gate = FairGate(RECALL_SLOTS)
    _install_error_handlers(app)

    @app.get(
        "/healthz",
        response_model=HealthzOut,
        responses={503: {"model": ErrorOut, "description": "the database is unreachable or busy"}},
        tags=["health"],
    )
    def healthz() -> dict[str, Any]:
        """Liveness and the recall mode; no key needed."""
        mode = app.state.mode or mem.embedder_status()[0]
        app.state.mode = mode
        return {
            "status": "ok",
            "episodic": mode,
            "version": episodic.__version__,
            "schema_version": mem.store.schema_version(),
        }

    @app.get("/v1/whoami", response_model=WhoAmIOut, responses=ERRORS, tags=["keys"])
    def whoami(caller: Caller) -> dict[str, Any]:
        """The key's workspace, role and bindings."""
        from episodic.model import scope_for_role

        scope = scope_for_role(caller.role)
        return {
            "key_id": caller.key.id,
            "workspace_id": caller.workspace_id,
            "role": caller.role.value,
            "agent_id": caller.key.agent_id,
            "crew_id": caller.key.crew_id,
            "scope": None if scope is None else scope.value,
        }

    @app.post("/v1/events", response_model=IngestOut, responses=ERRORS, tags=["write"])
    def post_events(body: EventsIn, caller: Caller) -> dict[str, Any]:
        """Append journal events. Bad events are reported by position and skipped; the
        others are stored."""
        items: list[Any] = []
        for raw in body.events:
            if isinstance(raw, dict):
                item = dict(raw)
                _bind(item, "workspace_id", caller.workspace)
                if caller.key.agent_id is not None and not caller.is_admin:
                    _bind(item, "agent_id", caller.agent)
                if caller.key.crew_id is not None and not caller.is_admin:
                    _bind(item, "crew_id", caller.crew)
                items.append(item)
            else:
                items.append(raw)
        report = mem.ingest(items).to_json()
        report["errors"] = [
            {"index": e["line"] - 1, "field": e["field"], "message": e["message"]}
            for e in report["errors"]
        ]
        return report

    @app.post(
        "/v1/messages",
        response_model=MessageOut,
        status_code=201,
        responses=ERRORS,
        tags=["write"],
    )
    def post_message(body: MessageIn, caller: Caller) -> dict[str, Any]:
        """Append one chat message to a conversation; episodes follow on segmentation."""
        event = mem.add_message(
            body.text,
            workspace=caller.workspace(body.workspace),
            conversation=body.conversation,
            role=body.role,
            agent=caller.agent(body.agent),
            crew=caller.crew(body.crew),
            resource=body.resource,
            name=body.name,
            ts=body.ts,
            id=body.id,
        )
        return {
            "id": event.id,
            "workspace_id": event.workspace_id,
            "conversation_id": event.conversation_id,
            "ts": event.ts.isoformat(),
        }

    @app.post(
        "/v1/memories",
        response_model=MemoryOut,
        status_code=201,
        responses=ERRORS,
        tags=["memories"],
    )
    def create_memory(body: MemoryIn, caller: Caller) -> dict[str, Any]:
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

    @app.get("/v1/memories", response_model=MemoryPageOut, responses=ERRORS, tags=["memories"])
    def list_memories(
        caller: Caller,
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

    @app.get(
        "/v1/memories/{memory_id}", response_model=MemoryOut, responses=ERRORS, tags=["memories"]
    )
    def get_memory(memory_id: str, caller: Caller) -> dict[str, Any]:
        return memory_json(mem.memory(caller.reading(), memory_id))

    @app.post(
        "/v1/memories/{memory_id}/retire",
        response_model=MemoryOut,
        responses=ERRORS,
        tags=["memories"],
    )
    def retire_memory(memory_id: str, caller: Caller) -> dict[str, Any]:
        """Retire a memory: kept and exported, never recalled again."""
        return memory_json(mem.retire_as(caller, memory_id))

    @app.delete(
        "/v1/memories/{memory_id}", response_model=ForgetOut, responses=ERRORS, tags=["forget"]
    )
    def delete_memory(memory_id: str, caller: Caller) -> dict[str, Any]:
        """Forget one memory (and what was derived from it) everywhere."""
        return mem.forget_memory_as(caller, memory_id).to_json()

    @app.post("/v1/recall", response_model=RecallOut, responses=ERRORS, tags=["recall"])
    def recall(body: RecallIn, caller: Caller) -> dict[str, Any]:
        """The memories that matter for ``query``, best first; ``explain`` adds the trace."""
        args = _recall_args(body, caller)
        with gate:
            result = mem.recall(body.query, **args)
        return _recall_json(result, caller)

    @app.post("/v1/render", response_model=RenderOut, responses=ERRORS, tags=["recall"])
    def render(body: RenderIn, caller: Caller) -> dict[str, Any]:
        """The prompt-ready injection block for ``query`` (untrusted hints)."""
        args = _recall_args(body, caller)
        with gate:
            block, result = mem.render_explained(body.query, max_chars=body.max_chars, **args)
        out = _recall_json(result, caller)
        return {
            "block": block,
            "hit_ids": [h["id"] for h in out.pop("hits")],
            **out,
        }

    @app.get("/v1/recent", response_model=RecentOut, responses=ERRORS, tags=["recall"])
    def recent(
        caller: Caller,
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

    @app.get("/v1/health", response_model=HealthOut, responses=ERRORS, tags=["health"])
    def health(
        caller: Caller,
        crew: Annotated[Id | None, Query()] = None,
        history: Annotated[int, Query(ge=0, le=365)] = 30,
        workspace: Annotated[Id | None, Query()] = None,
    ) -> dict[str, Any]:
        """The memory health score (five components, band) and its history."""
        ws = caller.workspace(workspace)
        view = mem.memory_health(ws, caller.crew(crew), history=history)
        if view is None:
            raise NotFound("health snapshot")
        return view.to_json()

    @app.post("/v1/forget", response_model=ForgetOut, responses=ERRORS, tags=["forget"])
    def forget(body: ForgetIn, caller: Caller) -> dict[str, Any]:
        """Remove data everywhere: by agent, resource, conversation, one memory and/or
        age. Needs an admin key, except for one memory of the key's own agent."""
        ws = caller.workspace(body.workspace)
        only_memory = body.memory is not None and not any(
            (body.agent, body.resource, body.conversation, body.older_than_days)
        )
        if only_memory and not caller.is_admin:
            assert body.memory is not None
            return mem.forget_memory_as(caller, body.memory).to_json()
        caller.require_admin("forgetting more than one memory")
        return mem.forget(
            workspace=ws,
            agent=body.agent,
            resource=body.resource,
            conversation=body.conversation,
            memory=body.memory,
            older_than_days=body.older_than_days,
        ).to_json()

    if ui:
        from episodic.ui import mount_ui

        mount_ui(app, mem)
    return app  # the size limit wraps it: see asgi()


def _bind(item: dict[str, Any], name: str, check: Callable[[str | None], str | None]) -> None:
    """Fill an event's id field from the key, or check the one it names against the key
    (``Forbidden`` when it differs). A value of the wrong type is left for the event
    parser to report by position, like any other bad field."""
    value = item.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        item[name] = check(None)
    elif isinstance(value, str):
        item[name] = check(value.strip())


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
    }


def _recall_json(result: RecallResult, caller: Principal) -> dict[str, Any]:
    trace = caller.trace_view(result.trace)
    return {
        "hits": [h.to_json() for h in result.hits],
        "mode": result.mode,
        "policy": result.policy,
        "warnings": result.warnings,
        "trace": None if trace is None else trace.to_json(),
    }


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(EpisodicError)
    async def episodic_error(request: Request, exc: EpisodicError) -> Response:
        status, code = error_status(exc)
        field = getattr(exc, "field", None)
        if isinstance(exc, UnknownPolicy):
            field = "policy"
        message = exc.message if isinstance(exc, InvalidInput) else str(exc)
        if isinstance(exc, NotFound):
            message = f"no {exc.id} here" if exc.id == "health snapshot" else str(exc)
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        if isinstance(exc, StoreBusy):
            headers = {"Retry-After": str(BUSY_RETRY_AFTER_S)}
        return JSONResponse(error_body(code, message, field), status_code=status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Response:
        first = exc.errors()[0] if exc.errors() else {}
        loc = list(first.get("loc", ()))
        if loc and loc[0] in ("body", "query", "path", "header", "cookie"):
            loc = loc[1:]  # where it came from; the rest names the field
        field = ".".join(str(part) for part in loc) or "body"
        if first.get("type") == "json_invalid":
            field = "body"
        message = str(first.get("msg", "invalid request"))
        return JSONResponse(error_body("invalid_input", message, field), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        code = {
            400: "bad_request",
            404: "not_found",
            405: "method_not_allowed",
            413: "payload_too_large",
        }.get(exc.status_code, "error")
        field = "body" if exc.status_code in (400, 413) else None
        return JSONResponse(
            error_body(code, str(exc.detail), field),
            status_code=exc.status_code,
            headers=getattr(exc, "headers", None),
        )

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Response:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return JSONResponse(
            error_body("internal", "unexpected server error; see the server log"),
            status_code=500,
        )


def asgi(mem: Episodic, **kwargs: Any) -> Any:
    """``create_app`` wrapped in the request size limit: what uvicorn serves."""
    limit = int(kwargs.pop("max_body_bytes", MAX_BODY_BYTES))
    return BodyLimit(create_app(mem, **kwargs), limit)


def app_from_env() -> Any:
    """The app factory uvicorn's worker processes call (``serve --workers N``): the
    database and settings from the environment, no background jobs (the parent process
    runs the indexer)."""
    mem = Episodic.open(os.environ.get("EPISODIC_DB"))
    return asgi(mem, background=False)
