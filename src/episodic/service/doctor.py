"""``episodic doctor``: is the database reachable, is an embedder there, do the stored
vectors match it, is the indexer behind; with ``deep``, does the derived data agree with
the journal and the memories. Every failure is reported as a check with its fix, never
raised.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from episodic.embed.pull import MODEL_REPO as LOCAL_MODEL_ID
from episodic.embed.pull import hub_offline, without_the_hub
from episodic.recall.engine import MODE_VECTOR
from episodic.service.context import Context
from episodic.store.base import StoreStats
from episodic.store.urls import display_url


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    status: str  # "ok" | "warn" | "error"
    detail: str
    fix: str | None = None
    # Rows (or engine messages) found wrong; deep checks only.
    count: int | None = None


@dataclass(frozen=True, slots=True)
class DoctorReport:
    episodic: str  # "vector" | "sparse-only"
    checks: list[Check]
    stats: StoreStats | None

    @property
    def ok(self) -> bool:
        return all(c.status != "error" for c in self.checks)

    def to_json(self) -> dict[str, Any]:
        return {
            "episodic": self.episodic,
            "ok": self.ok,
            "checks": [
                {
                    "name": c.name,
                    "status": c.status,
                    "detail": c.detail,
                    "fix": c.fix,
                    "count": c.count,
                }
                for c in self.checks
            ],
            "stats": None
            if self.stats is None
            else {
                "events": self.stats.events,
                "memories": self.stats.memories,
                "active_memories": self.stats.active_memories,
                "vectors": self.stats.vectors,
                "pending_vectors": self.stats.pending_vectors,
                "vector_model": self.stats.vector_model,
                "vector_dim": self.stats.vector_dim,
                "schema_version": self.stats.schema_version,
            },
        }


def run_doctor(ctx: Context, *, deep: bool = False) -> DoctorReport:
    """Check the database and the embedder. ``deep`` also checks that the keyword
    index, the vectors and the link tables agree with the journal and the memories
    (``Store.deep_check``; it reads every row)."""
    checks: list[Check] = []
    stats: StoreStats | None = None
    try:
        stats = ctx.store.stats()
        meta = ctx.store.meta()
        engine = (
            f"PostgreSQL {meta['server_version']}, pgvector {meta.get('pgvector_version')}"
            if "server_version" in meta
            else str(meta.get("journal_mode", "?"))
        )
        checks.append(
            Check(
                "store",
                "ok",
                f"{display_url(ctx.store.url)} (schema v{stats.schema_version}, {engine})",
            )
        )
    except Exception as exc:  # doctor reports every failure instead of dying
        checks.append(Check("store", "error", str(exc), "check --db / EPISODIC_DB"))
    mode, why = ctx.models.embedder_status()
    if mode == MODE_VECTOR:
        checks.append(Check("embedder", "ok", why))
    else:
        checks.append(
            Check(
                "embedder",
                "warn",
                f"sparse-only (keyword recall, no vectors): {why}",
                _embedder_fix(ctx.settings.embedder, stats),
            )
        )
    embedder = ctx.models.embedder
    if stats is not None and stats.vector_model and embedder is not None:
        if stats.vector_model != embedder.model_id:
            checks.append(
                Check(
                    "vectors",
                    "error",
                    f"stored vectors are {stats.vector_model} ({stats.vector_dim}-d), the "
                    f"embedder is {embedder.model_id}",
                    "run `episodic reindex` to re-embed with the current model",
                )
            )
        else:
            checks.append(
                Check("vectors", "ok", f"{stats.vectors} vectors, {stats.pending_vectors} pending")
            )
    if stats is not None and stats.pending_vectors and mode == MODE_VECTOR:
        waiting = "1 memory waits" if stats.pending_vectors == 1 else "memories wait"
        if stats.pending_vectors > 1:
            waiting = f"{stats.pending_vectors} {waiting}"
        checks.append(
            Check(
                "indexer",
                "warn",
                f"{waiting} for embedding",
                "run `episodic index --once` (or keep `episodic index` running)",
            )
        )
    checks.append(metrics_check())
    if deep and stats is not None:
        try:
            found = ctx.store.deep_check()
        except Exception as exc:  # as above: a failed check is reported, not raised
            checks.append(Check("deep", "error", f"the deep check failed: {exc}"))
        else:
            checks += [Check(c.name, c.status, c.detail, c.fix, c.count) for c in found]
    return DoctorReport(mode, checks, stats)


def metrics_check() -> Check:
    """Whether a server of this install can serve Prometheus metrics: a warning only
    where a server can run (FastAPI is there) without them."""
    from episodic import metrics
    from episodic.extras import DISTRIBUTION, installed

    missing = metrics.unavailable()
    if missing is None:
        return Check("metrics", "ok", "GET /metrics and `serve --metrics-port` can serve them")
    if not installed("fastapi"):
        return Check(
            "metrics",
            "ok",
            "no HTTP server in this install, so no metrics: the [server] extra adds both",
        )
    return Check(
        "metrics",
        "warn",
        "prometheus-client is not installed: the server answers GET /metrics with 501",
        f"pip install '{DISTRIBUTION}[server]'",
    )


def _embedder_fix(choice: str, stats: StoreStats | None = None) -> str:
    if stats is not None and stats.vectors and stats.vector_model:
        stored = stats.vector_model
        # Another embedder would meet vectors it cannot compare with (and refuse them):
        # the fix is the embedder that made them, or a reindex.
        return (
            f"the stored vectors were made by {stored} ({stats.vector_dim}-d): "
            f"{stored_embedder_fix(stored)}; to change embedder instead, set it and run "
            "`episodic reindex`"
        )
    if choice == "none":
        return "set EPISODIC_EMBEDDER=local to use the bundled MiniLM model"
    if choice == "ollama":
        return (
            "start Ollama (`ollama serve`) and `ollama pull nomic-embed-text`, or set "
            "EPISODIC_EMBEDDER=local"
        )
    if choice == "openai":
        return "set EPISODIC_OPENAI_API_KEY / EPISODIC_OPENAI_BASE_URL, or EPISODIC_EMBEDDER=local"
    return local_model_fix(os.environ)


def stored_embedder_fix(model_id: str) -> str:
    """How to bring back the embedder whose model id the stored vectors carry."""
    kind, _, model = model_id.partition("/")
    if kind == "ollama":
        return (
            f"set EPISODIC_EMBEDDER=ollama (EPISODIC_OLLAMA_MODEL={model}), start Ollama "
            f"(`ollama serve`) and `ollama pull {model}`"
        )
    if kind == "openai":
        return (
            f"set EPISODIC_EMBEDDER=openai (EPISODIC_OPENAI_EMBED_MODEL={model}) with "
            "EPISODIC_OPENAI_API_KEY / EPISODIC_OPENAI_BASE_URL"
        )
    if model_id == LOCAL_MODEL_ID:
        return f"set EPISODIC_EMBEDDER=local; {local_model_fix(os.environ)}"
    return f"configure the embedder that serves {model_id}"


def local_model_fix(env: Mapping[str, str]) -> str:
    """How to get the local model, for the way episodic was installed, and how to place it
    by hand when the hub cannot be reached."""
    if hub_offline(env):
        return f"{without_the_hub(env)}; then `episodic index --once`"
    if source_checkout():
        get = "run `make demo` (it installs the model), then `episodic index --once`"
    else:
        get = "run `episodic model pull`, then `episodic index --once`"
    return f"{get}; {without_the_hub(env)}"


def source_checkout() -> bool:
    """True when episodic runs from a source checkout (an editable install: the Makefile
    and pyproject.toml sit beside ``src/episodic``), where ``make`` targets exist."""
    root = Path(__file__).resolve().parents[3]
    return (
        (root / "Makefile").is_file()
        and (root / "pyproject.toml").is_file()
        and (root / "src" / "episodic").is_dir()
    )
