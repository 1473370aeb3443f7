"""episodic: an episodic-memory layer for LLM agents.

The public names below are imported on first use, not with the package: ``import
episodic`` (and so every ``episodic`` command) loads only the modules it goes on to use,
never the server, the model runtime or the async layer unless something asks for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from episodic.lazy import load as _load

if TYPE_CHECKING:
    from episodic.aio import AsyncEpisodic
    from episodic.client import AsyncClient, Client
    from episodic.config import Settings
    from episodic.errors import (
        BadEmbedding,
        EmbedderError,
        EmbedderUnavailable,
        EpisodicError,
        InvalidInput,
        LLMError,
        ModelMismatch,
        NotFound,
        StoreError,
        UnknownPolicy,
    )
    from episodic.layer import RECALL_MEMORY_TOOL, MemoryLayer
    from episodic.model import Event, Hit, Memory, MemoryStatus, Query, Role, Scope, ScopeFilter
    from episodic.recall.policies import POLICIES, RecallPolicy
    from episodic.recall.render import render_block
    from episodic.recall.result import RecallResult
    from episodic.service import DoctorReport, Episodic, IngestReport
    from episodic.upkeep.health import HealthView
    from episodic.upkeep.lease import JobResult
    from episodic.upkeep.reviews import ReviewReport
    from episodic.upkeep.scheduler import UpkeepScheduler

__version__ = "0.1.0"

# public name -> the module that defines it
_HOMES: dict[str, str] = {
    "AsyncEpisodic": "episodic.aio",
    "AsyncClient": "episodic.client",
    "Client": "episodic.client",
    "Settings": "episodic.config",
    "BadEmbedding": "episodic.errors",
    "EmbedderError": "episodic.errors",
    "EmbedderUnavailable": "episodic.errors",
    "EpisodicError": "episodic.errors",
    "InvalidInput": "episodic.errors",
    "LLMError": "episodic.errors",
    "ModelMismatch": "episodic.errors",
    "NotFound": "episodic.errors",
    "StoreError": "episodic.errors",
    "UnknownPolicy": "episodic.errors",
    "RECALL_MEMORY_TOOL": "episodic.layer",
    "MemoryLayer": "episodic.layer",
    "Event": "episodic.model",
    "Hit": "episodic.model",
    "Memory": "episodic.model",
    "MemoryStatus": "episodic.model",
    "Query": "episodic.model",
    "Role": "episodic.model",
    "Scope": "episodic.model",
    "ScopeFilter": "episodic.model",
    "RecallResult": "episodic.recall.result",
    "POLICIES": "episodic.recall.policies",
    "RecallPolicy": "episodic.recall.policies",
    "render_block": "episodic.recall.render",
    "DoctorReport": "episodic.service",
    "Episodic": "episodic.service",
    "IngestReport": "episodic.service",
    "HealthView": "episodic.upkeep.health",
    "JobResult": "episodic.upkeep.lease",
    "ReviewReport": "episodic.upkeep.reviews",
    "UpkeepScheduler": "episodic.upkeep.scheduler",
}


def __getattr__(name: str) -> Any:
    return _load(__name__, _HOMES, globals(), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})


__all__ = [
    "POLICIES",
    "RECALL_MEMORY_TOOL",
    "AsyncClient",
    "AsyncEpisodic",
    "BadEmbedding",
    "Client",
    "DoctorReport",
    "EmbedderError",
    "EmbedderUnavailable",
    "Episodic",
    "EpisodicError",
    "Event",
    "HealthView",
    "Hit",
    "IngestReport",
    "InvalidInput",
    "JobResult",
    "LLMError",
    "Memory",
    "MemoryLayer",
    "MemoryStatus",
    "ModelMismatch",
    "NotFound",
    "Query",
    "RecallPolicy",
    "RecallResult",
    "ReviewReport",
    "Role",
    "Scope",
    "ScopeFilter",
    "Settings",
    "StoreError",
    "UnknownPolicy",
    "UpkeepScheduler",
    "__version__",
    "render_block",
]
