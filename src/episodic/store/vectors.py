"""Vectors, the embedding cache and the indexer's work: ``VectorStore``.

The indexer claims memories that have no vector yet, embeds them, stores their vectors
and links each to its most alike memories by ``similar`` edges (seed 000's
LinkSimilarOnIndex); segmentation and consolidation read stored vectors back. Implemented
by ``vectors.py`` and ``claims.py`` (the claim) of each backend.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeAlias

from episodic.model import Candidate, ScopeFilter
from episodic.store.writes import MemoryReader

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# A string, so that this module (on a keyword-only recall's path) does not import numpy.
Vector: TypeAlias = "npt.NDArray[np.float32]"

RELATIONS = ("similar", "supports", "contradicts")


@dataclass(frozen=True, slots=True)
class PendingVector:
    memory_id: str
    workspace_id: str
    content: str


@dataclass(frozen=True, slots=True)
class Relation:
    """An edge of the memory graph (seed 000): ``similar`` (weight = cosine) from a new
    memory to an older one, ``supports`` (weight 1.0) from a rule to its evidence."""

    src: str
    dst: str
    relation: str
    weight: float


class VectorStore(MemoryReader, Protocol):
    """Stored vectors (one model and dimension per store), their cache by text, and the
    edges the indexer draws between alike memories."""

    def pending_vectors(self, limit: int) -> list[PendingVector]:
        """Active memories that have no vector yet, oldest first, across workspaces."""
        ...

    def index_pending(
        self,
        limit: int,
        model_id: str,
        dim: int,
        embed: Callable[[list[str]], Vector],
    ) -> list[tuple[PendingVector, Vector]]:
        """Embed (``embed(texts) -> float32[n, dim]``) and store vectors for up to
        ``limit`` pending memories, oldest first; returns what was indexed.

        A backend shared by several processes claims the rows first, so two workers never
        embed the same memory (see ``episodic.store.postgres.claims``); a worker killed
        mid-batch releases its rows with its connection. Whatever ``embed`` raises
        propagates, nothing stored."""
        ...

    def put_vectors(self, model_id: str, dim: int, rows: Sequence[tuple[str, Vector]]) -> int:
        """Store L2-normalised float32 vectors for memories. Raises ``ModelMismatch`` when
        the store already holds vectors of another model or dimension. Returns rows written."""
        ...

    def put_passages(
        self, dim: int, rows: Sequence[tuple[str, Sequence[tuple[int, int, Vector]]]]
    ) -> int:
        """Replace the later passages of memories by id (``episodic.scoring.passages``):
        each ``(start, stop, vector)`` the characters [start, stop) of the memory's content
        and their vector, in order; an empty list drops a memory's passages. Written with
        (just before) the memory's own vector; they go when it goes (deleted, re-embedded,
        ``clear_vectors``). Ids with no memory are skipped. Returns passages written."""
        ...

    def get_vectors(self, workspace_id: str, memory_ids: Sequence[str]) -> dict[str, Vector]:
        """The stored vectors of those memories of the workspace (ids without one, or of
        another workspace, are left out)."""
        ...

    def vector_model(self) -> tuple[str, int] | None:
        """(model id, dim) of the stored vectors, or None when there are none."""
        ...

    def clear_vectors(self) -> int:
        """Drop every stored vector (before a reindex). Returns how many were dropped."""
        ...

    def rebuild_text_passages(self) -> int:
        """Write every long memory's passages into the keyword index again (a reindex);
        returns how many passage rows it holds now."""
        ...

    def cache_get(self, model_id: str, content_hashes: Sequence[str]) -> dict[str, Vector]: ...

    def cache_put(self, model_id: str, items: Mapping[str, Vector]) -> None: ...

    def search_dense_many(
        self,
        flt: ScopeFilter,
        queries: Vector,
        limit: int,
        min_score: float | None = None,
        exclude: Sequence[Sequence[str]] | None = None,
    ) -> list[list[Candidate]]:
        """``search_dense`` for each row of ``queries`` (n x dim) at once, exactly; with
        ``min_score`` only candidates whose cosine reaches it, and never the ids in
        ``exclude[i]`` for query i."""
        ...

    def add_relations(self, workspace_id: str, edges: Sequence[Relation]) -> int:
        """Insert edges between memories of that workspace (re-adding one updates its
        weight); raises ``NotFound`` if an end is not a memory of the workspace."""
        ...
