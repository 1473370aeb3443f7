"""What both backends share about passages: a long memory's later passages are searched
beside memories' own vectors, and a memory scores by its best one; its passages' text is
searched beside memories' own (``merge_sparse``).

A passage row is ``(memory_id, cosine, start, stop)``; ``merge_dense`` folds them into
the dense leg's candidates, each memory once, at its best cosine, with the passage that
gave it (None when its own vector, which reads its start, did best).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from episodic.errors import ModelMismatch
from episodic.model import Candidate, Scope, ScopeFilter
from episodic.store.base import Vector
from episodic.store.dense import DenseIndex, DenseRows

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
else:
    from episodic.lazy import np

# Joins a memory id and a passage number into one row name of the passage index.
PASSAGE_SEP = "\x1f"
# A passage search looks this many times deeper than the leg's limit: one long memory's
# passages can fill several of the top places before they are folded into one.
PASSAGE_DEPTH = 3

PassageRow = tuple[str, float, int, int]


def merge_dense(
    memories: Iterable[tuple[str, float]], passages: Iterable[PassageRow], limit: int
) -> list[Candidate]:
    """The dense leg's (memory id, cosine) pairs, best first, with the passages' folded
    in: best cosine per memory, ranked best first (ties by the order found), at most
    ``limit``."""
    return _fold({memory_id: (score, None) for memory_id, score in memories}, passages, 1.0, limit)


def merge_sparse(
    memories: Sequence[Candidate], passages: Iterable[PassageRow], weight: float, limit: int
) -> list[Candidate]:
    """The sparse leg's candidates with the passages' folded in: each memory at the
    better of its own BM25 and ``weight`` x its best passage's (carrying that passage
    when it won), ranked best first (ties by the order found), at most ``limit``.

    A long memory's own row is its whole text, where BM25's length normalisation buries
    a fact in its middle; its passages are each about as long as a short memory. The
    weight is how much a passage's score counts beside a whole memory's: the best of
    many passages draws higher than one memory does."""
    return _fold({c.memory_id: (c.score, c.passage) for c in memories}, passages, weight, limit)


def _fold(
    best: dict[str, tuple[float, tuple[int, int] | None]],
    passages: Iterable[PassageRow],
    weight: float,
    limit: int,
) -> list[Candidate]:
    """``best`` (a memory's score and the passage that gave it) raised by any passage
    scoring higher at ``weight``, ranked best first (ties by the order found)."""
    for memory_id, score, start, stop in passages:
        scaled = weight * score
        held = best.get(memory_id)
        if held is None or scaled > held[0]:
            best[memory_id] = (scaled, (start, stop))
    ordered = sorted(best.items(), key=lambda item: item[1][0], reverse=True)[:limit]
    return [
        Candidate(memory_id, score, rank, passage)
        for rank, (memory_id, (score, passage)) in enumerate(ordered, start=1)
    ]


class PassageIndex(DenseIndex):
    """The in-process index of a workspace's passages (SQLite): rows named
    ``"<memory id>\\x1f<n>"``, with where each lies in its memory's content."""

    def __init__(self) -> None:
        super().__init__()
        self.spans: dict[str, tuple[str, int, int]] = {}
        # Each row's memory as a number (-1: a row without a span), by row position, for
        # ``best``; and each number's memory id.
        self._owners: npt.NDArray[np.int64] = np.empty(0, np.int64)
        self._owner_codes: dict[str, int] = {}

    def _upsert(self, rows: DenseRows) -> None:
        super()._upsert(rows)
        if self._owners.size < self._n:
            grown = np.full(max(self._n, int(self._owners.size * 1.5)), -1, np.int64)
            grown[: self._owners.size] = self._owners
            self._owners = grown
        codes, spans, pos = self._owner_codes, self.spans, self._pos
        for key in rows.memory_ids:
            held = spans.get(key)
            if held is None:
                self._owners[pos[key]] = -1
            else:
                self._owners[pos[key]] = codes.setdefault(held[0], len(codes))

    def best(
        self, flt: ScopeFilter, scope: Scope | None, query: Vector, limit: int
    ) -> list[PassageRow]:
        """``found`` of ``search_pairs(flt, scope, query, limit, unit=True)``: each
        memory's best passage among the ``limit`` best, best first. An exact search picks
        them among its arrays (the first row of each memory in the best-first order)
        instead of naming every passage it found: a BEAM recall reads 300 passages of
        a few dozen memories."""
        if self._n == 0 or limit <= 0:
            return []
        if query.shape != (self.dim,):
            model, dim = self.model or "?", self.dim or 0
            raise ModelMismatch(model, dim, "the query's embedder", int(query.size))
        return self._shared(lambda: self._best(flt, scope, query, limit))

    def _best(
        self, flt: ScopeFilter, scope: Scope | None, q: Vector, limit: int
    ) -> list[PassageRow] | None:
        rows = np.flatnonzero(self._visible(flt, scope))
        if rows.size == 0:
            return []
        if self._approximate(int(rows.size)):
            pairs = self._search(flt, scope, q, limit)
            return None if pairs is None else self.found(pairs)
        at, scores = self._exact(rows, q, limit)
        owners = self._owners[at]
        held = np.flatnonzero(owners >= 0)
        # np.unique's first index of each memory, in the best-first order again.
        _, first = np.unique(owners[held], return_index=True)
        picked = held[np.sort(first)]
        ids, spans = self.ids, self.spans
        found: list[PassageRow] = []
        for i, score in zip(at[picked].tolist(), scores[picked].tolist(), strict=True):
            memory_id, start, stop = spans[ids[i]]
            found.append((memory_id, score, start, stop))
        return found

    def found(self, pairs: Iterable[tuple[str, float]]) -> list[PassageRow]:
        """The passages a search of this index found (``search_pairs``, best first), as
        ``PassageRow``s: each memory's first, its best. A memory scores by its best
        passage and a later one never beats it (``_fold`` keeps the first of equals), so
        the rest are left out: a search reads hundreds of passages of a few dozen long
        memories, and folding each cost a BEAM recall ~0.5 ms."""
        rows: list[PassageRow] = []
        spans = self.spans
        seen: set[str] = set()
        for key, score in pairs:
            held = spans.get(key)
            if held is not None and held[0] not in seen:
                seen.add(held[0])
                rows.append((held[0], score, held[1], held[2]))
        return rows


def passage_key(memory_id: str, n: int) -> str:
    return f"{memory_id}{PASSAGE_SEP}{n}"
