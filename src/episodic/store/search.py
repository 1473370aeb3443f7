"""Everything one recall touches: ``SearchStore``.

The candidate legs (dense, sparse, recent), the conversation around a hit, the memory
graph one edge away, the memories they name, and what a recall writes back: a reference
mark on each hit (seed 000) and a pending review (seed 003). The recall engine needs
nothing else from a store. Implemented by ``search.py`` and ``sparse.py`` (the BM25 leg)
of each backend; the tuning both sparse legs share is ``episodic.store.sparse``.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import NamedTuple, Protocol

from episodic.model import Candidate, Memory, ScopeFilter
from episodic.store.supersession import Supersession
from episodic.store.upkeep import ReviewRequest
from episodic.store.vectors import Vector
from episodic.store.writes import MemoryReader

# Read connections a store keeps from its searches (the dense and sparse legs, which hold
# a connection for a recall's longest reads) for everything else: key lookups, the reads
# inside a write, getting memories. With the legs side by side, a few recalls could hold
# every read connection, and each write then waited for a leg to end: under the 64-client
# load, timed inside the server, the key lookup alone waited 9 / 44 ms (p50 / p95) and a
# note's reads 50 / 129 ms.
LOOKUP_READS = 1


def search_reads(connections: int) -> int:
    """How many of ``connections`` read connections searches may hold at once: all but
    ``LOOKUP_READS``, and at least one."""
    return max(1, connections - LOOKUP_READS)


class RankRow(NamedTuple):
    """What ranking a candidate reads of its memory: the columns ``default``'s re-rank
    factors and the time boost use, and its length in characters (kept by the store in
    ``memory_lengths``; None when no length is kept for it). A memory's whole row (its
    text, payload and sources) is read only for the candidates that reach the top.

    A named tuple, not a frozen dataclass: a recall makes one for each of 100-200
    candidates, and a frozen dataclass's ``__init__`` (one ``object.__setattr__`` a
    field) cost about twice as much, ~0.2-0.4 ms of a recall."""

    id: str
    importance: float
    agent: str | None
    crew: str | None
    ts: datetime
    chars: int | None


class SearchStore(MemoryReader, Protocol):
    """The legs return ``Candidate``s best first; only active memories ``flt`` can see
    (superseded ones too when ``flt.superseded`` asks for them)."""

    @property
    def parallel_reads(self) -> bool:
        """Whether two threads' reads run at once (each on a connection of its own), so
        a recall may run its legs side by side (``episodic.recall.legs``)."""
        ...

    def legs_apart(self, workspace_id: str) -> bool:
        """Whether a recall in ``workspace_id`` runs its keyword leg on a helper thread
        beside its dense leg (``episodic.recall.legs``): the store reads in parallel, and
        the dense leg is slow enough to be worth handing the other leg over."""
        ...

    def forget_term_counts(self) -> None:
        """Drop the document counts the keyword search caches for a few seconds
        (``DOC_COUNT_TTL_S``), so the next recall plans its terms on the counts as they
        are now. Recall relies on counts that old; a benchmark, which asks its questions
        right after writing everything, calls this between the two so that its answers
        do not depend on how many seconds the writing took."""
        ...

    def reading(self) -> AbstractContextManager[None]:
        """A block whose reads on this thread share one snapshot and one connection (a
        search's), instead of a transaction each: a recall's ranking reads rows, the
        turns around its hits and their conversations. Writes inside still commit on
        their own."""
        ...

    def supersessions(self, workspace_id: str, memory_ids: Sequence[str]) -> list[Supersession]:
        """Who replaced whom (``episodic.store.supersession``): the links with either end
        among ``memory_ids``, oldest decision first."""
        ...

    def search_dense(self, flt: ScopeFilter, query: Vector, limit: int) -> list[Candidate]:
        """Active memories visible through ``flt`` ranked by cosine to ``query`` (best first)."""
        ...

    def search_sparse(self, flt: ScopeFilter, text: str, limit: int) -> list[Candidate]:
        """Active memories visible through ``flt`` ranked by BM25 for ``text`` (best first,
        higher score = better). Raw user text goes in; escaping is the store's job."""
        ...

    def search_sparse_passages(
        self, flt: ScopeFilter, text: str, limit: int
    ) -> list[tuple[str, float, int, int]]:
        """The long memories visible through ``flt`` ranked by the BM25 of their best
        passage for ``text``: ``(memory id, score, start, stop)``, each memory once, best
        first (a memory no longer than one passage has none)."""
        ...

    def search_recent(
        self,
        flt: ScopeFilter,
        limit: int,
        *,
        start: datetime | None = None,
        end: datetime | None = None,
        types: Sequence[str] | None = None,
    ) -> list[Candidate]:
        """Active memories visible through ``flt``, newest first (score = POSIX time),
        optionally only those with ``start <= ts < end`` and of the given types."""
        ...

    def neighbours(
        self, flt: ScopeFilter, ids: Sequence[str], radius: int
    ) -> dict[str, list[tuple[str, int]]]:
        """For each id that belongs to a conversation: up to ``radius`` active memories of
        its type just before and just after it in the same conversation, visible through
        ``flt``, as (id, offset) with offset -1, -2 … before and +1, +2 … after."""
        ...

    def longest(self, workspace_id: str) -> int:
        """The length in characters of the workspace's longest memory (forgotten ones
        leave it; retired ones still count), 0 when it holds none."""
        ...

    def memories_and_longest(
        self, workspace_id: str, ids: Sequence[str]
    ) -> tuple[list[Memory], int]:
        """``get_memories(workspace_id, ids)`` and ``longest(workspace_id)`` from one
        snapshot: a recall's first whole rows (its leaders') say whether the workspace
        holds a long memory without a read of their own (on PostgreSQL one statement, so
        no round trip of its own)."""
        ...

    def rank_rows(self, workspace_id: str, ids: Sequence[str]) -> dict[str, RankRow]:
        """The ``RankRow`` of each of ``ids`` that is a memory of the workspace; unknown
        ids are left out."""
        ...

    def conversations_of(self, workspace_id: str, ids: Sequence[str]) -> dict[str, str | None]:
        """The conversation of each of ``ids`` that is a memory of the workspace (None for
        a memory outside any conversation); unknown ids are left out."""
        ...

    def texts_of(self, workspace_id: str, ids: Sequence[str]) -> dict[str, str]:
        """The text of each of ``ids`` that is a memory of the workspace, and nothing else
        of its row (no payload, no sources): what a step that reads a few dozen short
        candidates' words needs (``recall/rule_keep.py``). Unknown ids are left out."""
        ...

    def related(
        self, flt: ScopeFilter, ids: Sequence[str], relation: str = "similar"
    ) -> dict[str, list[tuple[str, float]]]:
        """For each id, the active memories one edge away (either direction) that ``flt``
        can see, as (id, weight), heaviest first."""
        ...

    def get_vectors(self, workspace_id: str, memory_ids: Sequence[str]) -> dict[str, Vector]:
        """The stored vectors of those memories (as ``VectorStore``'s): recall compares the
        ones it ranks to find memories about the same subject."""
        ...

    def mark_referenced(self, workspace_id: str, ids: Sequence[str], at: datetime) -> None:
        """reference_count + 1 and last_referenced_at = at, for each id of that workspace."""
        ...

    def add_review(self, review: ReviewRequest) -> int:
        """Record a pending review (one insert); returns its id."""
        ...

    def add_reviews(self, reviews: Sequence[ReviewRequest]) -> None:
        """Record several pending reviews in one transaction (a server's batched recalls)."""
        ...
