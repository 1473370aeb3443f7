"""The server backend: PostgreSQL with pgvector (HNSW, cosine) and full-text search
(tsvector + GIN), through psycopg 3 and a connection pool.

Selected by a ``postgresql://`` URL. The schema is SQLite's, rendered for the server by
``episodic.store.migrations.postgres_statements``; the methods are split by area:

- ``writes``: appending events and memories, vectors and the embedding cache, reading back
- ``search``: the dense (HNSW), sparse (tsvector), recent and neighbour legs; relations;
  conversations waiting to be segmented
- ``upkeep``: decay, reviews, consolidation, compaction, health, leases and nudges
- ``service``: API keys, listing and status, markdown import state, restore and forget
- ``claims``: background work several processes share (indexing), claimed row by row
- ``integrity``: ``episodic doctor --deep``'s checks
"""

from __future__ import annotations

from episodic.store.postgres.claims import ClaimsMixin
from episodic.store.postgres.connection import PgBase, Tracer
from episodic.store.postgres.integrity import IntegrityMixin
from episodic.store.postgres.search import SearchMixin
from episodic.store.postgres.service import ServiceMixin
from episodic.store.postgres.upkeep import UpkeepMixin
from episodic.store.postgres.writes import WritesMixin
from episodic.store.urls import display_url


class PostgresStore(
    WritesMixin, SearchMixin, UpkeepMixin, ServiceMixin, ClaimsMixin, IntegrityMixin, PgBase
):
    """A memory database on a PostgreSQL server. See ``Store`` for the contract."""


__all__ = ["PgBase", "PostgresStore", "Tracer", "display_url"]
