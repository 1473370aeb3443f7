"""Health: ``GET /healthz`` (liveness: the server answers, in which recall mode; no
key), ``GET /readyz`` (readiness: the database answers at the schema this code knows;
503 when it cannot serve; no key) and ``GET /v1/health`` (the memory health score and
its history).

Two routers, because the app includes them at two places: the OpenAPI document lists
``/healthz`` first and ``/v1/health`` after the recall routes."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

import episodic
from episodic.errors import EpisodicError, NotFound
from episodic.http.auth import Caller
from episodic.http.deps import Mem
from episodic.http.errors import ERRORS, ErrorOut
from episodic.http.models import Id
from episodic.store.migrations import LATEST_VERSION

liveness_router = APIRouter()
router = APIRouter()


class HealthzOut(BaseModel):
    status: Literal["ok"]
    episodic: Literal["vector", "sparse-only"]
    version: str
    schema_version: int


class ReadyCheck(BaseModel):
    ok: bool
    detail: str


class ReadyzOut(BaseModel):
    status: Literal["ready", "not_ready"]
    database: ReadyCheck
    migrations: ReadyCheck
    embedder: ReadyCheck = Field(
        description="vector, or sparse-only while the embedder is unavailable: recall "
        "still answers (by keywords), so it does not make the server unready"
    )


class HealthPointOut(BaseModel):
    """One older snapshot. Only its date and score are promised (the health view belongs
    to memory upkeep); whatever else it carries passes through."""

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
    workspace: str
    crew: str | None = Field(description="the crew it is of; null: the whole workspace")
    freshness: float
    coverage: float
    coherence: float
    efficiency: float
    reachability: float
    score: float
    band: Literal["red", "yellow", "green"]
    snapshot_date: str
    history: list[HealthPointOut] = Field(description="older snapshots, newest first")


@liveness_router.get(
    "/healthz",
    response_model=HealthzOut,
    responses={503: {"model": ErrorOut, "description": "the database is unreachable or busy"}},
    tags=["health"],
)
def healthz(mem: Mem) -> dict[str, Any]:
    """Liveness and the recall mode as it is now (``vector``, or ``sparse-only`` while
    the embedder is unavailable); no key needed."""
    return {
        "status": "ok",
        "episodic": mem.recall_mode(),
        "version": episodic.__version__,
        "schema_version": mem.store.schema_version(),
    }


@liveness_router.get(
    "/readyz",
    response_model=ReadyzOut,
    responses={503: {"model": ReadyzOut, "description": "not ready: see which check failed"}},
    tags=["health"],
)
def readyz(mem: Mem) -> Any:
    """Readiness, for a load balancer or Kubernetes' readiness probe: the database
    answers and its schema is the one this code knows. The embedder's state is reported;
    sparse-only is still ready, since recall answers by keywords meanwhile."""
    try:
        version = mem.store.schema_version()
    except EpisodicError as exc:
        database = ReadyCheck(ok=False, detail=str(exc))
        migrations = ReadyCheck(ok=False, detail="unknown: the database did not answer")
    else:
        database = ReadyCheck(ok=True, detail="answers")
        migrations = ReadyCheck(
            ok=version == LATEST_VERSION,
            detail=f"schema v{version}; this code knows v{LATEST_VERSION}",
        )
    mode, why = mem.recall_mode(), ""
    if mode != "vector":  # why: one probe now, only while it is down
        mode, why = mem.embedder_status()
    embedder = ReadyCheck(ok=mode == "vector", detail=f"{mode}: {why}" if why else mode)
    ready = database.ok and migrations.ok
    body = ReadyzOut(
        status="ready" if ready else "not_ready",
        database=database,
        migrations=migrations,
        embedder=embedder,
    )
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)


@router.get("/v1/health", response_model=HealthOut, responses=ERRORS, tags=["health"])
def health(
    caller: Caller,
    mem: Mem,
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
