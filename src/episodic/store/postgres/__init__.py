"""The server backend: PostgreSQL with pgvector (HNSW, cosine) and full-text search
(tsvector + GIN), through psycopg 3 and a connection pool.

Selected by a ``postgresql://`` URL. The schema is SQLite's, rendered for the server by
``episodic.store.migrations.postgres_statements``. The methods are split by area, with
the same module names as ``episodic.store.sqlite`` so the two read side by side:

- ``connection``: the pool, migrations, transactions, error mapping
- ``writes``: appending events and memories, closing episodes, reading them back
- ``search``: the dense (HNSW), recent and neighbour legs; relations one edge away; what
  a recall writes back (references, pending reviews)
- ``sparse``: the BM25 leg over the generated tsvector
- ``journal``: keyword search of the journal itself (tsvector over events and their archive)
- ``vectors``: vectors, the embedding cache, the similar edges the indexer draws
- ``claims``: the indexer's claim on pending memories, row by row across processes
- ``upkeep``: decay, compaction, health, nudges, leases and the run log
- ``consolidation``: the memories a consolidation looks at, its backlog, storing its rules
- ``reviews``: the review job's claims, outcomes and FSRS state
- ``service``: API keys, listing and status, markdown import state, restore and forget
- ``integrity``: what ``episodic doctor`` reads, and its deep checks
"""

from __future__ import annotations

from episodic.store.postgres.claims import ClaimsMixin
from episodic.store.postgres.connection import PgBase, Tracer
from episodic.store.postgres.consolidation import ConsolidationMixin
from episodic.store.postgres.integrity import IntegrityMixin
from episodic.store.postgres.journal import JournalMixin
from episodic.store.postgres.reviews import ReviewsMixin
from episodic.store.postgres.search import SearchMixin
from episodic.store.postgres.service import ServiceMixin
from episodic.store.postgres.sessions import SessionsMixin
from episodic.store.postgres.sparse import SparseMixin
from episodic.store.postgres.supersession import SupersessionMixin
from episodic.store.postgres.upkeep import UpkeepMixin
from episodic.store.postgres.vectors import VectorsMixin
from episodic.store.postgres.writes import WritesMixin
from episodic.store.urls import display_url


class PostgresStore(
    WritesMixin,
    SearchMixin,
    JournalMixin,
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
    PgBase,
):
    """A memory database on a PostgreSQL server. See ``Store`` for the contract."""


__all__ = ["PgBase", "PostgresStore", "Tracer", "display_url"]
