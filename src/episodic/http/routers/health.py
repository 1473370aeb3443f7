"""Health: ``GET /healthz`` (is the server up, and in which recall mode; no key) and
``GET /v1/health`` (the memory health score and its history).

Two routers, because the app includes them at two places: the OpenAPI document lists
``/healthz`` first and ``/v1/health`` after the recall routes."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

import episodic
from episodic.errors import NotFound
from episodic.http.auth import Caller
from episodic.http.deps import Mem
from episodic.http.errors import ERRORS, ErrorOut
from episodic.http.models import Id

liveness_router = APIRouter()
router = APIRouter()


class HealthzOut(BaseModel):
    status: Literal["ok"]
    episodic: Literal["vector", "sparse-only"]
    version: str
    schema_version: int


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
