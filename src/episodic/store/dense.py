"""The in-process dense index of one workspace: a float32 matrix plus parallel arrays of the
columns scope filters look at, so a search is one matrix-vector product, a boolean mask and
a partial sort (``np.argpartition``) — no SQL on the hot path.

Past ``ANN_MIN_ROWS`` rows, a search that may see most of the workspace probes an
inverted-file index (faiss ``IndexIVFFlat``: the rows grouped around sqrt(n) centroids,
the query scored against the groups of the nearest quarter of them) instead of scanning
every row. A scan of 100k x 384 float32 reads 150 MB and is bound by memory bandwidth
(5-9 ms on this 2-core machine); the probe reads a quarter of it in groups laid out
contiguously (1.8 ms), and found 97.7% of the exact top 100 on vectors with the spectrum of
MiniLM's (benchmarks/bench_dense.py). Scores are exact cosines either way: only which rows
are looked at is approximate. Narrow scopes (an agent's own memories) keep the exact
gathered scan, which is cheaper for them anyway.

The store owns freshness (what to load and when); this module only holds rows and answers
searches. Searches of one index run in parallel (the matrix product and faiss release the
GIL); loading rows and building the inverted file wait for them and hold them off, so no
search sees a half-loaded index. The mask here must mean exactly what
``episodic.store.sql.scope_where`` means in SQL; the store contract tests run every scope
rule through both legs to keep them equal.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from episodic.blas import one_thread
from episodic.errors import BadEmbedding, ModelMismatch, StoreError
from episodic.model import Candidate, MemoryStatus, Scope, ScopeFilter
from episodic.store.base import CREW_SHARED_MIN_BASE_IMPORTANCE, Vector

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
else:
    from episodic.lazy import np

T = TypeVar("T")
# A vector's float32s as stored, little-endian: a string (numpy reads it as the dtype) so
# that importing this module does not import numpy.
LE_FLOAT32 = "<f4"
FLOAT32_BYTES = 4
_NATIVE_IS_LE = sys.byteorder == "little"

_NONE_CODE = -1  # a NULL column
_ABSENT_CODE = -2  # a filter value no row has: matches nothing

# Below this share of visible rows, gathering them first beats scoring every row (measured
# on 100k x 384: 1 ms vs 5 ms at 5%, even at 20%, twice as slow at 30%).
_GATHER_FRACTION = 0.2
_GROWTH = 1.5

# The approximate path: from this many rows on, for searches that see at least
# _GATHER_FRACTION of them. sqrt(n) lists, a quarter of them probed (see the docstring).
ANN_MIN_ROWS = 20_000
ANN_PROBE_FRACTION = 0.25
# Searches for close neighbours only (cosine >= NEAR_MIN_SCORE, the `similar` links) probe
# this many of the nearest lists.
NEAR_MIN_SCORE = 0.75
NEAR_PROBE_LISTS = 8
# faiss wants ~40 training points per centroid; more only slows training.
_ANN_TRAIN_PER_LIST = 64
# Retrain when the rows grew this much since training: the lists get long and uneven.
_ANN_RETRAIN_GROWTH = 4


@dataclass(frozen=True, slots=True)
class DenseRows:
    """Rows to load, column by column (one tuple per column, all the same length):
    columnar because a full load moves 100k rows and per-row objects cost more than the
    SQL that fetched them."""

    memory_ids: tuple[str, ...]
    vectors: tuple[bytes, ...]  # little-endian float32
    models: tuple[str, ...]
    agent_ids: tuple[str | None, ...]
    crew_ids: tuple[str | None, ...]
    resource_ids: tuple[str | None, ...]
    conversation_ids: tuple[str | None, ...]
    base_importances: tuple[float, ...]
    statuses: tuple[str, ...]
    types: tuple[str, ...] = ()  # empty: every row is of type "" (tests that need no types)
    learning_types: tuple[str | None, ...] = ()  # payload.learning_type; empty: none

    @classmethod
    def from_records(cls, records: Sequence[Sequence[Any]]) -> DenseRows:
        """From rows of (memory_id, vector, model, agent, crew, resource, conversation,
        base_importance, status, type, learning_type), as the store's SELECT returns them."""
        if not records:
            return cls((), (), (), (), (), (), (), (), (), (), ())
        return cls(*zip(*records, strict=True))

    def __len__(self) -> int:
        return len(self.memory_ids)


class SharedLock:
    """Many holders of ``shared()`` at once, or one of ``exclusive()``. A waiting
    exclusive holder goes before shared holders that come after it, so a steady stream
    of searches cannot hold a load off for ever. Not reentrant."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._sharing = 0
        self._exclusive = False
        self._waiting = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            while self._exclusive or self._waiting:
                self._cond.wait()
            self._sharing += 1
        try:
            yield
        finally:
            with self._cond:
                self._sharing -= 1
                if not self._sharing:
                    self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._waiting += 1
            try:
                while self._exclusive or self._sharing:
                    self._cond.wait()
            finally:
                self._waiting -= 1
            self._exclusive = True
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()


def unit_vector(vector: Vector | Sequence[float], dim: int | None = None) -> Vector:
    """``vector`` as a finite, L2-normalised 1-D float32 array; ``BadEmbedding`` if it
    cannot be one (wrong length, NaN/inf, all zeros)."""
    arr = np.asarray(vector, dtype=np.float32).reshape(-1)
    if dim is not None and arr.shape != (dim,):
        raise BadEmbedding(f"expected a {dim}-d vector, got shape {np.shape(vector)}")
    if arr.size == 0 or not bool(np.isfinite(arr).all()):
        raise BadEmbedding("vector is empty or holds NaN/inf values")
    norm = float(np.linalg.norm(arr))
    if norm == 0.0:
        raise BadEmbedding("vector is all zeros; it has no direction to compare")
    unit: Vector = arr / np.float32(norm)
    return unit


class DenseIndex:
    """The vectors of one workspace. Thread-safe: searches share it, ``upsert`` and the
    inverted file's build take it alone."""

    def __init__(self) -> None:
        self.model: str | None = None
        self.dim: int | None = None
        # Freshness bookkeeping, owned by the store.
        self.generation = 0
        self.max_seq = 0
        self.epoch = -1

        self.ids: list[str] = []
        self._pos: dict[str, int] = {}
        self._codes: dict[str, int] = {}
        self._names: list[str] = []  # code -> value
        self._n = 0
        self._matrix: npt.NDArray[np.float32] = np.empty((0, 0), np.float32)
        self._agent: npt.NDArray[np.int32] = np.empty(0, np.int32)
        self._crew: npt.NDArray[np.int32] = np.empty(0, np.int32)
        self._resource: npt.NDArray[np.int32] = np.empty(0, np.int32)
        self._conversation: npt.NDArray[np.int32] = np.empty(0, np.int32)
        self._type: npt.NDArray[np.int32] = np.empty(0, np.int32)
        self._learning: npt.NDArray[np.int32] = np.empty(0, np.int32)
        self._base: npt.NDArray[np.float64] = np.empty(0, np.float64)
        self._active: npt.NDArray[np.bool_] = np.empty(0, np.bool_)
        self._superseded: npt.NDArray[np.bool_] = np.empty(0, np.bool_)
        # The inverted-file index over rows 0.._ann_rows-1 (ids = row positions), built on
        # the first search that wants it; None below ann_min_rows.
        self.ann_min_rows = ANN_MIN_ROWS
        self._ann: Any = None
        self._ann_rows = 0
        self._ann_trained_rows = 0
        self._lock = SharedLock()

    def __len__(self) -> int:
        return self._n

    # -- loading -------------------------------------------------------------------
    def _code(self, value: str | None) -> int:
        if value is None:
            return _NONE_CODE
        code = self._codes.get(value)
        if code is None:
            code = self._codes[value] = len(self._codes)
            self._names.append(value)
        return code

    def _lookup(self, value: str) -> int:
        return self._codes.get(value, _ABSENT_CODE)

    def _reserve(self, rows: int) -> None:
        if rows <= self._matrix.shape[0]:
            return
        assert self.dim is not None
        capacity = max(rows, int(self._matrix.shape[0] * _GROWTH), 64)
        matrix = np.empty((capacity, self.dim), np.float32)
        if self._n:
            matrix[: self._n] = self._matrix[: self._n]
        self._matrix = matrix
        for name, dtype in (
            ("_agent", np.int32),
            ("_crew", np.int32),
            ("_resource", np.int32),
            ("_conversation", np.int32),
            ("_type", np.int32),
            ("_learning", np.int32),
            ("_base", np.float64),
            ("_active", np.bool_),
            ("_superseded", np.bool_),
        ):
            grown = np.empty(capacity, dtype)
            grown[: self._n] = getattr(self, name)[: self._n]
            setattr(self, name, grown)

    def upsert(self, rows: DenseRows) -> None:
        """Add rows, or overwrite the row of a memory already held (a re-embedded memory)."""
        with self._lock.exclusive():
            self._upsert(rows)

    def _upsert(self, rows: DenseRows) -> None:
        count = len(rows)
        if count == 0:
            return
        if self.dim is None:
            self.model = rows.models[0]
            self.dim = len(rows.vectors[0]) // FLOAT32_BYTES
        dim = self.dim
        if set(map(len, rows.vectors)) != {dim * FLOAT32_BYTES} or set(rows.models) != {self.model}:
            raise StoreError(
                f"vectors of other models or sizes among {self.model} vectors of {dim} "
                "dimensions; run `episodic reindex`"
            )

        if self._n == 0 and len(set(rows.memory_ids)) == count:
            # A full load: positions are simply 0..count-1.
            self.ids = list(rows.memory_ids)
            self._pos = dict(zip(self.ids, range(count), strict=True))
            targets: npt.NDArray[np.int64] | slice = slice(0, count)
            fresh = count
        else:
            where = np.empty(count, np.int64)
            fresh = 0
            for i, memory_id in enumerate(rows.memory_ids):
                at = self._pos.get(memory_id)
                if at is None:
                    at = self._pos[memory_id] = self._n + fresh
                    self.ids.append(memory_id)
                    fresh += 1
                where[i] = at
            targets = where
            if self._ann is not None and bool((where < self._ann_rows).any()):
                # A vector changed in place: the lists hold its old copy. Re-adding every
                # row keeps the trained centroids (rare: only a re-embedded memory).
                self._ann.reset()
                self._ann_rows = 0
        self._reserve(self._n + fresh)
        self._n += fresh

        if isinstance(targets, slice) and _NATIVE_IS_LE:
            # Copy each blob straight into place: joining them first would touch (and, in a
            # fresh process, page-fault) a second buffer as large as the matrix.
            stride = dim * FLOAT32_BYTES
            flat = self._matrix.reshape(-1).view(np.uint8).data
            for i, blob in enumerate(rows.vectors):
                flat[i * stride : (i + 1) * stride] = blob
        else:
            block = np.frombuffer(b"".join(rows.vectors), LE_FLOAT32).reshape(-1, dim)
            self._matrix[targets] = block
        code = self._code
        self._agent[targets] = [code(v) for v in rows.agent_ids]
        self._crew[targets] = [code(v) for v in rows.crew_ids]
        self._resource[targets] = [code(v) for v in rows.resource_ids]
        self._conversation[targets] = [code(v) for v in rows.conversation_ids]
        self._type[targets] = [code(v) for v in rows.types] if rows.types else code("")
        self._learning[targets] = (
            [code(v) for v in rows.learning_types] if rows.learning_types else _NONE_CODE
        )
        self._base[targets] = rows.base_importances
        active = MemoryStatus.ACTIVE.value
        self._active[targets] = [status == active for status in rows.statuses]
        superseded = MemoryStatus.SUPERSEDED.value
        self._superseded[targets] = [status == superseded for status in rows.statuses]

    def conversations(self, ids: Sequence[str]) -> dict[str, str | None]:
        """The conversation of each of ``ids`` this index holds (None: outside any);
        ids it does not hold are left out."""
        with self._lock.shared():
            pos = self._pos
            held = [i for i in ids if i in pos]
            codes = self._conversation[[pos[i] for i in held]].tolist() if held else []
            names = self._names
            return {
                i: None if c == _NONE_CODE else names[c] for i, c in zip(held, codes, strict=True)
            }

    # -- searching -----------------------------------------------------------------
    def visible(self, flt: ScopeFilter, scope: Scope | None) -> npt.NDArray[np.bool_]:
        """Which rows ``flt`` may see: the array twin of ``live_where``."""
        with self._lock.shared():
            return self._visible(flt, scope)

    def _visible(self, flt: ScopeFilter, scope: Scope | None) -> npt.NDArray[np.bool_]:
        n = self._n
        mask = self._active[:n].copy()
        if flt.superseded:
            mask |= self._superseded[:n]

        def eq(column: npt.NDArray[np.int32], value: str) -> npt.NDArray[np.bool_]:
            same: npt.NDArray[np.bool_] = column[:n] == self._lookup(value)
            return same

        if scope is Scope.OWN:
            assert flt.agent_id
            mask &= eq(self._agent, flt.agent_id)
        elif scope is Scope.CREW_SHARED:
            assert flt.crew_id
            crew_part = eq(self._crew, flt.crew_id) & (
                self._base[:n] >= CREW_SHARED_MIN_BASE_IMPORTANCE
            )
            mask &= (eq(self._agent, flt.agent_id) | crew_part) if flt.agent_id else crew_part
        else:
            if flt.agent_id:
                mask &= eq(self._agent, flt.agent_id)
            if flt.crew_id:
                mask &= eq(self._crew, flt.crew_id)
        if flt.resource_id:
            mask &= eq(self._resource, flt.resource_id)
        if flt.conversation_id:
            mask &= eq(self._conversation, flt.conversation_id)
        if flt.types is not None:
            wanted = [self._lookup(t) for t in flt.types]
            mask &= np.isin(self._type[:n], wanted)
        # Every recall leaves institutional memories out: no pass when none is held.
        unwanted = [c for t in flt.exclude_types if (c := self._lookup(t)) != _ABSENT_CODE]
        if unwanted:
            mask &= ~np.isin(self._type[:n], unwanted)
        if flt.learning_types is not None:
            kinds = [self._lookup(t) for t in flt.learning_types]
            mask &= np.isin(self._learning[:n], kinds)
        return mask

    def search(
        self, flt: ScopeFilter, scope: Scope | None, query: Vector, limit: int
    ) -> list[Candidate]:
        """The ``limit`` visible rows with the highest cosine to ``query``, best first;
        equal scores keep load order so results are stable."""
        pairs = self.search_pairs(flt, scope, query, limit)
        return [Candidate(i, score, rank) for rank, (i, score) in enumerate(pairs, start=1)]

    def search_pairs(
        self,
        flt: ScopeFilter,
        scope: Scope | None,
        query: Vector,
        limit: int,
        *,
        unit: bool = False,
    ) -> list[tuple[str, float]]:
        """``search`` as (id, cosine) pairs: a caller that folds the rows into others
        (the passages' search) makes no ``Candidate`` it would throw away, each costing
        more than the row's share of the search. ``unit``: ``query`` is already what
        ``query_vector`` makes of it (a caller searching two indexes with one query
        normalises it once: ~0.1 ms each time)."""
        if self._n == 0 or limit <= 0:
            return []
        if not unit:
            q = self.query_vector(query)
        elif query.shape != (self.dim,):
            model, dim = self.model or "?", self.dim or 0
            raise ModelMismatch(model, dim, "the query's embedder", int(query.size))
        else:
            q = query
        return self._shared(lambda: self._search(flt, scope, q, limit))

    def query_vector(self, query: Vector) -> Vector:
        """``query`` as a search compares it: float32, unit length, of this index's
        dimension (``ModelMismatch`` when it is of another)."""
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if self.dim is not None and q.shape != (self.dim,):
            raise ModelMismatch(self.model or "?", self.dim, "the query's embedder", int(q.size))
        return unit_vector(q)

    def _search(
        self, flt: ScopeFilter, scope: Scope | None, q: Vector, limit: int
    ) -> list[tuple[str, float]] | None:
        """``search`` under the shared lock; None when it wants the inverted file and
        that is not built up to the last row yet."""
        mask = self._visible(flt, scope)
        rows = np.flatnonzero(mask)
        visible = int(rows.size)
        if visible == 0:
            return []
        if self._approximate(visible):
            if not self._ann_ready():
                return None
            found = self._search_ann(mask, visible, q, min(limit, visible))
            if found is not None:
                return found
        at, scores = self._exact(rows, q, limit)
        ids = self.ids
        # Python numbers in one pass each: indexing numpy arrays one scalar at a time
        # costs more than the search did.
        return [(ids[i], score) for i, score in zip(at.tolist(), scores.tolist(), strict=True)]

    def _approximate(self, visible: int) -> bool:
        """Whether a search that sees ``visible`` rows probes the inverted file."""
        n = self._n
        return n >= self.ann_min_rows and visible >= n * _GATHER_FRACTION

    def _exact(
        self, rows: npt.NDArray[np.intp], q: Vector, limit: int
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float32]]:
        """The positions of the best ``limit`` of ``rows`` (visible, at least one) by
        cosine to ``q``, best first (equal scores in load order), and their scores."""
        visible, n = int(rows.size), self._n
        if visible < n * _GATHER_FRACTION:
            block = self._matrix[rows]
            with one_thread():
                scores = block @ q
        else:
            with one_thread():
                scores = self._matrix[:n] @ q
            if visible < n:
                scores = scores[rows]

        k = min(limit, visible)
        top = np.argpartition(scores, visible - k)[visible - k :] if k < visible else None
        if top is None:
            top = np.arange(visible)
        order = top[np.lexsort((top, -scores[top]))]
        return rows[order], scores[order]

    def search_many(
        self,
        flt: ScopeFilter,
        scope: Scope | None,
        queries: Vector,
        limit: int,
        min_score: float | None = None,
        exclude: Sequence[Sequence[str]] | None = None,
    ) -> list[list[Candidate]]:
        """``search`` for each row of ``queries`` (n x dim), keeping only scores >=
        ``min_score`` when given and never the ids in ``exclude[i]`` for query i.

        Exact below ``ann_min_rows``: one matrix product reads the matrix once for the
        whole batch. Past it, a search with ``min_score`` >= ``NEAR_MIN_SCORE`` (the
        indexer's `similar` links) wants only close neighbours, which sit in the lists
        nearest to the query: it probes ``NEAR_PROBE_LISTS`` lists instead of a quarter
        (benchmarks/bench_upkeep.py measures what share of the exact links it finds)."""
        q = np.asarray(queries, dtype=np.float32)
        if q.ndim != 2:
            raise ModelMismatch(self.model or "?", self.dim or 0, "the queries", int(q.size))
        b = int(q.shape[0])
        if self._n == 0 or limit <= 0 or b == 0:
            return [[] for _ in range(b)]
        assert self.dim is not None and self.model is not None
        if q.shape[1] != self.dim:
            raise ModelMismatch(self.model, self.dim, "the queries' embedder", int(q.shape[1]))
        norms = np.linalg.norm(q, axis=1, keepdims=True).astype(np.float32)
        norms[norms == 0] = 1.0
        q = np.ascontiguousarray(q / norms, dtype=np.float32)
        excluded = [set(ids) for ids in exclude] if exclude is not None else [set()] * b
        return self._shared(lambda: self._search_many(flt, scope, q, limit, min_score, excluded))

    def _search_many(
        self,
        flt: ScopeFilter,
        scope: Scope | None,
        q: Vector,
        limit: int,
        min_score: float | None,
        excluded: Sequence[set[str]],
    ) -> list[list[Candidate]] | None:
        """``search_many`` under the shared lock; None as for ``_search``."""
        b = int(q.shape[0])
        mask = self._visible(flt, scope)
        rows = np.flatnonzero(mask)
        visible = int(rows.size)
        if visible == 0:
            return [[] for _ in range(b)]
        n = self._n
        if (
            min_score is not None
            and min_score >= NEAR_MIN_SCORE
            and n >= self.ann_min_rows
            and visible >= n * _GATHER_FRACTION
        ):
            if not self._ann_ready():
                return None
            return self._near_ann(mask, visible, q, limit, min_score, excluded)
        block = self._matrix[:n] if visible == n else self._matrix[rows]
        with one_thread():
            scores = q @ block.T  # queries x visible
        out: list[list[Candidate]] = []
        for j in range(b):
            line = scores[j]
            if min_score is not None:
                picks = np.flatnonzero(line >= min_score)
            else:
                picks = np.arange(visible)
            wanted = limit + len(excluded[j])
            if picks.size > wanted:
                picks = picks[np.argpartition(line[picks], picks.size - wanted)[-wanted:]]
            order = picks[np.lexsort((picks, -line[picks]))]
            found = [(self.ids[int(rows[i])], float(line[i])) for i in order]
            out.append(_ranked(found, excluded[j], limit))
        return out

    def _near_ann(
        self,
        mask: npt.NDArray[np.bool_],
        visible: int,
        q: Vector,
        limit: int,
        min_score: float,
        excluded: Sequence[set[str]],
    ) -> list[list[Candidate]]:
        import faiss  # with the first approximate search: a keyword-only process never loads it

        ann = self._ann
        params = faiss.SearchParametersIVF()
        params.nprobe = min(NEAR_PROBE_LISTS, ann.nlist)
        if visible < self._n:
            bitmap = np.packbits(mask, bitorder="little")
            params.sel = faiss.IDSelectorBitmap(len(bitmap), faiss.swig_ptr(bitmap))
        k = min(visible, limit + max(len(e) for e in excluded))
        scores, labels = ann.search(q, k, params=params)
        out: list[list[Candidate]] = []
        for j in range(q.shape[0]):
            found = [
                (self.ids[int(row)], float(score))
                for row, score in zip(labels[j], scores[j], strict=True)
                if row >= 0 and score >= min_score
            ]
            out.append(_ranked(found, excluded[j], limit))
        return out

    def visible_matrix(self, flt: ScopeFilter, scope: Scope | None) -> Vector:
        """The vectors ``flt`` sees (active rows only), one row each: a read-only view
        when that is every row, else a copy."""
        with self._lock.shared():
            return self._visible_matrix(flt, scope)

    def _visible_matrix(self, flt: ScopeFilter, scope: Scope | None) -> Vector:
        if self._n == 0 or self.dim is None:
            return np.zeros((0, 0), np.float32)
        mask = self._visible(flt, scope)
        if bool(mask.all()):
            view: Vector = self._matrix[: self._n].view()
            view.flags.writeable = False
            return view
        out: Vector = self._matrix[: self._n][mask]
        return out

    def _shared(self, search: Callable[[], T | None]) -> T:
        """``search`` under the shared lock; when it answers None (it wants the inverted
        file, not built up to the last row), build that alone and search again."""
        while True:
            with self._lock.shared():
                found = search()
            if found is not None:
                return found
            with self._lock.exclusive():
                self._ensure_ann()

    # -- the approximate path ------------------------------------------------------
    def _ann_ready(self) -> bool:
        """Whether the inverted file holds every row and needs no retraining (what
        ``_ensure_ann`` would otherwise do, under the exclusive lock)."""
        n = self._n
        return (
            self._ann is not None
            and n < self._ann_trained_rows * _ANN_RETRAIN_GROWTH
            and self._ann_rows >= n
        )

    def _ensure_ann(self) -> Any:
        """The inverted-file index, trained and holding every row (exclusive lock)."""
        import faiss  # with the first approximate search: a keyword-only process never loads it

        n, dim = self._n, self.dim
        assert dim is not None
        if self._ann is None or n >= self._ann_trained_rows * _ANN_RETRAIN_GROWTH:
            lists = max(16, int(np.sqrt(n)))
            quantizer = faiss.IndexFlatIP(dim)
            ann = faiss.IndexIVFFlat(quantizer, dim, lists, faiss.METRIC_INNER_PRODUCT)
            sample = min(n, lists * _ANN_TRAIN_PER_LIST)
            # Evenly spaced rows: deterministic, and spread over the workspace's history.
            picks = np.linspace(0, n - 1, sample).astype(np.int64)
            ann.train(np.ascontiguousarray(self._matrix[picks]))
            ann.nprobe = max(1, int(np.ceil(lists * ANN_PROBE_FRACTION)))
            self._ann, self._ann_rows, self._ann_trained_rows = ann, 0, n
        if self._ann_rows < n:
            block = np.ascontiguousarray(self._matrix[self._ann_rows : n])
            self._ann.add_with_ids(block, np.arange(self._ann_rows, n, dtype=np.int64))
            self._ann_rows = n
        return self._ann

    def _search_ann(
        self, mask: npt.NDArray[np.bool_], visible: int, q: Vector, k: int
    ) -> list[tuple[str, float]] | None:
        """The best ``k`` visible rows among the probed lists, or None when the probe
        found fewer than ``k`` (a filter that leaves few rows in the nearest lists): the
        caller then scans exactly."""
        import faiss  # with the first approximate search: a keyword-only process never loads it

        ann = self._ann
        params = None
        if visible < self._n:
            bitmap = np.packbits(mask, bitorder="little")
            # Bit i%8 of byte i//8 selects row i; the first argument is the byte count.
            selector = faiss.IDSelectorBitmap(len(bitmap), faiss.swig_ptr(bitmap))
            params = faiss.SearchParametersIVF()
            params.sel, params.nprobe = selector, ann.nprobe
        scores, labels = ann.search(q.reshape(1, -1), k, params=params)
        found = labels[0] >= 0
        if int(found.sum()) < k:
            return None
        ids = self.ids
        return [
            (ids[row], score)
            for row, score in zip(labels[0][found].tolist(), scores[0][found].tolist(), strict=True)
        ]


def _ranked(found: Sequence[tuple[str, float]], excluded: set[str], limit: int) -> list[Candidate]:
    """(id, score) best first -> the first ``limit`` not excluded, as ranked candidates."""
    kept = [(i, score) for i, score in found if i not in excluded][:limit]
    return [Candidate(memory_id=i, score=score, rank=r) for r, (i, score) in enumerate(kept, 1)]
