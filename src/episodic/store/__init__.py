"""Storage backends behind one protocol.

``open_store(url)`` picks the backend from the URL: ``sqlite:///relative/path.db``,
``sqlite:////absolute/path.db``, ``sqlite:///:memory:`` or a plain file path; or
``postgresql://user:password@host:port/dbname`` for the PostgreSQL backend.
"""

from __future__ import annotations

import os

from episodic.errors import InvalidInput
from episodic.store.base import (
    AppendResult,
    PendingConversation,
    PendingVector,
    Relation,
    Store,
    StoreStats,
    Vector,
)
from episodic.store.sqlite import SqliteStore, Tracer

_POSTGRES_SCHEMES = frozenset({"postgres", "postgresql", "postgresql+psycopg"})


def open_store(
    url: str | os.PathLike[str], *, tracer: Tracer | None = None, read_only: bool = False
) -> Store:
    """Open (creating and migrating when needed) the store ``url`` names.

    Raises ``InvalidInput("db", ...)`` for a URL no backend here understands."""
    raw = os.fspath(url).strip()
    if not raw:
        raise InvalidInput("db", "no database given; e.g. sqlite:///./.episodic/memory.db")
    if "://" in raw:
        scheme = raw.partition("://")[0].lower()
        if scheme in _POSTGRES_SCHEMES:
            # Imported here: a SQLite user never loads psycopg (nor needs it installed).
            from episodic.extras import require

            require("postgres", "a postgresql:// database")
            from episodic.store.postgres import PostgresStore

            return PostgresStore(raw, tracer=tracer, read_only=read_only)
        if scheme != "sqlite":
            raise InvalidInput(
                "db",
                f"unknown database URL scheme {scheme!r}; use sqlite:///relative/path.db, "
                "sqlite:////absolute/path.db, sqlite:///:memory: or a plain file path",
            )
    return SqliteStore(raw, tracer=tracer, read_only=read_only)


__all__ = [
    "AppendResult",
    "PendingConversation",
    "PendingVector",
    "Relation",
    "SqliteStore",
    "Store",
    "StoreStats",
    "Tracer",
    "Vector",
    "open_store",
]
