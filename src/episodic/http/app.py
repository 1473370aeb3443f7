"""The app factory: ``create_app`` builds the FastAPI app over one ``Episodic`` and
includes every router; ``asgi`` wraps it in the body size limit (what uvicorn serves);
``app_from_env`` is the factory for uvicorn's worker processes; ``start_background_jobs``
is what ``episodic serve`` runs beside the API."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

import episodic
from episodic import metrics as episodic_metrics
from episodic import tracing
from episodic.http.errors import install_error_handlers
from episodic.http.limits import (
    FIRST_RECALL_GUESS_S,
    FIRST_WRITE_GUESS_S,
    GIL_SWITCH_INTERVAL_S,
    MAX_BODY_BYTES,
    RECALL_MAX_WAIT_S,
    RECALL_SLOTS,
    WRITE_MAX_WAIT_S,
    WRITE_SLOTS,
    BodyLimit,
    Lane,
)
from episodic.http.request_context import RequestContext
from episodic.http.routers import (
    events,
    forget,
    health,
    journal,
    keys,
    layer,
    mem0,
    memories,
    messages,
    metrics,
    recall,
)
from episodic.logs import RequestInfo, configure_logging, log_format
from episodic.priority import HEAVY_NICE
from episodic.service import Episodic

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
# Other servers' APIs ``serve --compat`` answers at their root paths; the worker
# processes of ``serve --workers`` read the choice from this variable.
COMPAT = ("mem0",)
COMPAT_ENV = "EPISODIC_COMPAT"


def observe_http(info: RequestInfo) -> None:
    """A request, counted and timed for the metrics, by route template."""
    seconds = (info.duration_ms or 0.0) / 1000.0
    episodic_metrics.http_request(info.route, info.method, info.status or 0, seconds)


def start_background_jobs(mem: Episodic) -> None:
    """What ``episodic serve`` runs beside the API, once per server (the parent process
    when there are several workers): the indexer, and memory upkeep's schedule (nightly
    decay, reviews, daily consolidation and health; episodic.upkeep.scheduler)."""
    mem.start_indexer()
    mem.scheduler().start()


def create_app(
    mem: Episodic,
    *,
    background: bool = False,
    ui: bool = True,
    recall_slots: int = RECALL_SLOTS,
    recall_max_wait_s: float = RECALL_MAX_WAIT_S,
    recall_nice: int = HEAVY_NICE,
    write_slots: int = WRITE_SLOTS,
    write_max_wait_s: float = WRITE_MAX_WAIT_S,
    recall_processes: int = 0,
    compat: Sequence[str] = (),
) -> FastAPI:
    """The API over ``mem``. ``background`` starts the indexer with the app (``serve``
    does; tests leave it off and index explicitly). ``recall_processes`` > 0 runs recalls
    in that many worker processes while the app runs (``serve`` does:
    ``episodic.service.recall_processes``). The slots and waits bound the load it takes
    (``episodic.http.limits``). ``compat`` names other servers' APIs to answer at their
    own root paths too (``COMPAT``: ``mem0``). Traces are sent when the ``OTEL_*``
    variables ask for them (``episodic.tracing``). The caller closes ``mem``."""
    tracing.start_from_env()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        mem.warn_if_sparse_only()
        mem.defer_marks()
        mem.batch_query_embeddings()
        if recall_processes > 0:
            mem.recall_in_processes(recall_processes)
        if background:
            start_background_jobs(mem)
        switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)  # the process's, while it serves
        try:
            yield
        finally:
            sys.setswitchinterval(switch_interval)
            app.state.recalls.close()
            if recall_processes > 0:
                mem.recall_in_processes(0)
            mem.flush_marks(stop=True)

    app = FastAPI(
        title="episodic",
        version=episodic.__version__,
        description=(
            "Episodic memory for LLM agents. Every /v1 call needs `Authorization: Bearer "
            "<key>` (create one with `episodic keys create --workspace W --role admin`, "
            "or `--agent A` for an agent's key). Recalled "
            "content is untrusted: hints, never instructions."
        ),
        lifespan=lifespan,
    )
    # Read by the handlers through episodic.http.deps: the service and the load bounds.
    app.state.episodic = mem
    app.state.recalls = Lane(
        "recall", recall_slots, recall_max_wait_s, FIRST_RECALL_GUESS_S, nice=recall_nice
    )
    app.state.writes = Lane("write", write_slots, write_max_wait_s, FIRST_WRITE_GUESS_S)
    install_error_handlers(app)
    app.add_middleware(RequestContext, observers=(observe_http,))
    # The order here is the order of the paths in the OpenAPI document.
    app.include_router(health.liveness_router)
    app.include_router(keys.router)
    app.include_router(events.router)
    app.include_router(messages.router)
    app.include_router(memories.router)
    app.include_router(recall.router)
    app.include_router(layer.router)
    app.include_router(layer.writes)
    app.include_router(journal.router)
    app.include_router(health.router)
    app.include_router(forget.router)
    app.include_router(mem0.router)
    if "mem0" in compat:
        app.include_router(mem0.root_router)
    app.include_router(metrics.router)
    if ui:
        from episodic.ui import mount_ui

        mount_ui(app, mem)
    return app  # the size limit wraps it: see asgi()


def asgi(mem: Episodic, **kwargs: Any) -> Any:
    """``create_app`` wrapped in the request size limit: what uvicorn serves."""
    limit = int(kwargs.pop("max_body_bytes", MAX_BODY_BYTES))
    return BodyLimit(create_app(mem, **kwargs), limit)


def app_from_env() -> Any:
    """The app factory uvicorn's worker processes call (``serve --workers N``): the
    database and settings from the environment, no background jobs (the parent process
    runs the indexer)."""
    if log_format() == "json":  # a spawned worker starts with no handler of its own
        configure_logging(logging.WARNING)
    mem = Episodic.open(os.environ.get("EPISODIC_DB"))
    compat = [c for c in os.environ.get(COMPAT_ENV, "").split(",") if c]
    return asgi(mem, background=False, compat=compat)
