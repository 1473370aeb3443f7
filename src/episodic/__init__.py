"""episodic: an episodic-memory layer for LLM agents."""

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
from episodic.recall.engine import RecallResult
from episodic.recall.policies import POLICIES, RecallPolicy
from episodic.recall.render import render_block
from episodic.service import DoctorReport, Episodic, IngestReport
from episodic.upkeep.health import HealthView
from episodic.upkeep.lease import JobResult
from episodic.upkeep.reviews import ReviewReport
from episodic.upkeep.scheduler import UpkeepScheduler

__version__ = "0.1.0"

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
