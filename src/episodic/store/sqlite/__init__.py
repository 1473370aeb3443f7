"""The default backend: one SQLite file (stdlib ``sqlite3``, WAL, FTS5).

Selected by a ``sqlite:///`` URL or a plain path. The methods are split by area, with the
same module names as ``episodic.store.postgres`` so the two read side by side:

- ``connection``: the connection, migrations, transactions, error mapping
- ``writes``: appending events and memories, closing episodes, reading them back
- ``search``: the dense, recent and neighbour legs over an in-process index; relations
  one edge away; what a recall writes back (references, pending reviews)
- ``sparse``: the BM25 leg over the FTS5 mirror
- ``journal``: keyword search of the journal itself (FTS5 over events and their archive)
- ``vectors``: vectors, the embedding cache, the similar edges the indexer draws
- ``claims``: the indexer's claim on pending memories (trivial here: one writer per file)
- ``upkeep``: decay, compaction, health, nudges, leases and the run log
- ``consolidation``: the memories a consolidation looks at, its backlog, storing its rules
- ``reviews``: the review job's claims, outcomes and FSRS state
- ``service``: API keys, listing and status, markdown import state, restore and forget
- ``integrity``: what ``episodic doctor`` reads, and its deep checks
"""

from __future__ import annotations

from episodic.store.rows import ts_text
from episodic.store.sparse import DOC_COUNT_TTL_S
from episodic.store.sqlite.claims import ClaimsMixin
from episodic.store.sqlite.connection import (
    BUSY_TIMEOUT_MS,
    MEMORY_URL,
    SqliteBase,
    Tracer,
    sqlite_target,
)
from episodic.store.sqlite.consolidation import ConsolidationMixin
from episodic.store.sqlite.integrity import IntegrityMixin
from episodic.store.sqlite.journal import JournalMixin
from episodic.store.sqlite.reviews import ReviewsMixin
from episodic.store.sqlite.search import SearchMixin
from episodic.store.sqlite.service import ServiceMixin
from episodic.store.sqlite.sessions import SessionsMixin
from episodic.store.sqlite.sparse import SparseMixin, SparseMode
from episodic.store.sqlite.supersession import SupersessionMixin
from episodic.store.sqlite.upkeep import UpkeepMixin
from episodic.store.sqlite.vectors import VectorsMixin
from episodic.store.sqlite.writes import WritesMixin


class SqliteStore(
    WritesMixin,
    SearchMixin,
    SparseMixin,
    VectorsMixin,
    ClaimsMixin,
    UpkeepMixin,
    ConsolidationMixin,
    ReviewsMixin,
    ServiceMixin,
    SessionsMixin,
    SupersessionMixin,
    IntegrityMixin,
    JournalMixin,
    SqliteBase,
):
    """A memory database in one SQLite file (or ``:memory:``). See ``Store`` for the
    contract; ``tracer(sql, params)`` sees every statement this store runs."""


__all__ = [
    "BUSY_TIMEOUT_MS",
    "DOC_COUNT_TTL_S",
    "MEMORY_URL",
    "SparseMode",
    "SqliteStore",
    "Tracer",
    "sqlite_target",
    "ts_text",
]
