"""What the installed pgvector can do, and the HNSW index the store builds and searches.

pgvector 0.7 added ``halfvec`` (16-bit floats): an HNSW index on ``vector::halfvec(dim)``
holds half the bytes per vector (faster to build, more of the graph in shared buffers)
and indexes up to 4000 dimensions (``vector``: 2000). The column stays ``vector(dim)``,
so the scores and the exact scan keep full precision. pgvector 0.8 added iterative index
scans: with ``hnsw.iterative_scan`` on, an HNSW scan whose rows a WHERE clause rejects
goes on searching the graph instead of stopping after ``hnsw.ef_search`` rows, so a
narrow scope is filled by the index.

The helpers here are pure (version text or index definition in, answer out); the mixin
reads the catalog once per store and caches what it found. A search follows the index
that exists, not the one this pgvector would build: a store indexed under 0.6 and then
upgraded keeps its plain ``vector`` index until the vectors are rebuilt.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Literal

from episodic.store.postgres.connection import Conn, PgBase

# The widest vectors pgvector's HNSW indexes: as vector, and as halfvec (0.7 on).
HNSW_MAX_DIM = 2000
HALFVEC_MAX_DIM = 4000
INDEX_NAME = "memory_vectors_hnsw"
# The index a search follows is read again after this long (another process may have
# rebuilt it); this store's own rebuilds forget it at once.
INDEX_TTL_S = 60.0
# An iterative scan stops after visiting this many tuples (pgvector's default); a scope
# the index cannot fill by then is answered by the exact scan.
MAX_SCAN_TUPLES = 20_000
# A scope of at most this many rows is scanned exactly instead (see ``_dense_sql``).
SMALL_SCOPE_ROWS = 2_000

Form = Literal["vector", "halfvec"]
Version = tuple[int, int, int]


@dataclass(frozen=True)
class HnswIndex:
    """The HNSW index on memory_vectors: which type it indexes, and at what dimension
    (the cast a query must repeat for the planner to use it; 0 for a plain vector)."""

    form: Form
    dim: int = 0


def parse_version(text: str) -> Version:
    """pgvector's ``extversion`` as numbers.

    >>> parse_version("0.8.1"), parse_version("0.7"), parse_version("0.6.2-dev")
    ((0, 8, 1), (0, 7, 0), (0, 6, 2))
    """
    parts = [int(m) for m in re.findall(r"\d+", text.split("-", 1)[0])[:3]]
    if not parts:
        raise ValueError(f"not a pgvector version: {text!r}")
    major, minor, patch = [*parts, 0, 0][:3]
    return (major, minor, patch)


def has_halfvec(version: Version) -> bool:
    return version >= (0, 7, 0)


def has_iterative_scan(version: Version) -> bool:
    return version >= (0, 8, 0)


def index_to_build(version: Version, dim: int) -> HnswIndex | None:
    """The HNSW index this pgvector builds for ``dim``-dimensional vectors: halfvec where
    it exists, else vector; None when the vectors are too wide to index."""
    if has_halfvec(version) and dim <= HALFVEC_MAX_DIM:
        return HnswIndex("halfvec", dim)
    if dim <= HNSW_MAX_DIM:
        return HnswIndex("vector")
    return None


def index_sql(index: HnswIndex) -> str:
    """CREATE INDEX for ``index`` on memory_vectors (cosine distance)."""
    if index.form == "halfvec":
        column = f"((vector::halfvec({index.dim:d}))) halfvec_cosine_ops"
    else:
        column = "vector vector_cosine_ops"
    return f"CREATE INDEX IF NOT EXISTS {INDEX_NAME} ON memory_vectors USING hnsw ({column})"


def index_of(indexdef: str | None) -> HnswIndex | None:
    """The index ``pg_get_indexdef`` describes (None: there is none, or not an HNSW one).

    >>> index_of("CREATE INDEX i ON public.memory_vectors USING hnsw "
    ...          "(((vector)::halfvec(384)) halfvec_cosine_ops)")
    HnswIndex(form='halfvec', dim=384)
    """
    if indexdef is None or "using hnsw" not in indexdef.lower():
        return None
    half = re.search(r"::halfvec\((\d+)\)", indexdef)
    return HnswIndex("halfvec", int(half.group(1))) if half else HnswIndex("vector")


def distance_sql(index: HnswIndex | None) -> str:
    """The cosine distance from ``v.vector`` to a query (one ``%s``), written as the index
    ``index`` is built, so the planner can order by it through the index."""
    if index is not None and index.form == "halfvec":
        cast = f"::halfvec({index.dim:d})"
        return f"v.vector{cast} <=> %s{cast}"
    return "v.vector <=> %s"


class PgvectorMixin(PgBase):
    """The installed pgvector's version and the existing HNSW index, read once and cached."""

    _pgvector_version: Version | None = None
    _hnsw_cache: tuple[HnswIndex | None, float] | None = None

    def pgvector_version(self, conn: Conn) -> Version:
        if self._pgvector_version is None:
            row = self._exec(
                conn, "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
            ).fetchone()
            self._pgvector_version = parse_version(str(row[0])) if row else (0, 0, 0)
        return self._pgvector_version

    def hnsw_index(self, conn: Conn) -> HnswIndex | None:
        """The HNSW index memory_vectors has now (cached for ``INDEX_TTL_S``)."""
        now = time.monotonic()
        cached = self._hnsw_cache
        if cached is not None and cached[1] > now:
            return cached[0]
        row = self._exec(conn, "SELECT pg_get_indexdef(to_regclass(%s))", (INDEX_NAME,)).fetchone()
        index = index_of(row[0] if row else None)
        self._hnsw_cache = (index, now + INDEX_TTL_S)
        return index

    def forget_index(self) -> None:
        """After this store dropped or built the index: the next search reads it again."""
        self._hnsw_cache = None

    def build_index(self, conn: Conn, dim: int, *, workers: int = 0) -> HnswIndex | None:
        """Create the HNSW index this pgvector builds for ``dim`` (none if too wide). Over
        existing rows, ``workers`` parallel maintenance workers help build it; the graph
        is built in memory (much faster) while it fits in ``maintenance_work_mem``."""
        index = index_to_build(self.pgvector_version(conn), dim)
        if index is not None:
            if workers > 0:
                self._exec(
                    conn,
                    "SELECT set_config('max_parallel_maintenance_workers', %s, true)",
                    (str(workers),),
                )
            self._exec(conn, index_sql(index))
        self.forget_index()
        return index
