"""Storage backends behind one protocol.

``open_store(url)`` picks the backend from the URL: ``sqlite:///relative/path.db``,
``sqlite:////absolute/path.db``, ``sqlite:///:memory:`` or a plain file path; or
``postgresql://user:password@host:port/dbname`` for the PostgreSQL backend.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from episodic.errors import InvalidInput

# The protocol's names and the backends are imported on first use: a module that needs one
# constant of the store (the journal's hit limits) or a command that opens no store
# (--help, a recall through a server) does not load them.
if TYPE_CHECKING:
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

_BASE_NAMES = frozenset(
    {"AppendResult", "PendingConversation", "PendingVector", "Relation", "Store", "StoreStats"}
    | {"Vector"}
)


def __getattr__(name: str) -> Any:
    if name in _BASE_NAMES:
        from episodic.store import base

        return getattr(base, name)
    if name in ("SqliteStore", "Tracer"):
        from episodic.store import sqlite

        return getattr(sqlite, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_POSTGRES_SCHEMES = frozenset({"postgres", "postgresql", "postgresql+psycopg"})


def _backend(url: str | os.PathLike[str]) -> tuple[str, str]:
    """("postgres" or "sqlite", the URL stripped); ``InvalidInput("db", ...)`` for a URL
    no backend here understands."""
    raw = os.fspath(url).strip()
    if not raw:
        raise InvalidInput("db", "no database given; e.g. sqlite:///./.episodic/memory.db")
    if "://" in raw:
        scheme = raw.partition("://")[0].lower()
        if scheme in _POSTGRES_SCHEMES:
            return "postgres", raw
        if scheme != "sqlite":
            raise InvalidInput(
                "db",
                f"unknown database URL scheme {scheme!r}; use sqlite:///relative/path.db, "
                "sqlite:////absolute/path.db, sqlite:///:memory: or a plain file path",
            )
    return "sqlite", raw


def open_store(
    url: str | os.PathLike[str], *, tracer: Tracer | None = None, read_only: bool = False
) -> Store:
    """Open (creating and migrating when needed) the store ``url`` names.

    Raises ``InvalidInput("db", ...)`` for a URL no backend here understands."""
    backend, raw = _backend(url)
    if backend == "postgres":
        # Imported here: a SQLite user never loads psycopg (nor needs it installed).
        from episodic.extras import require

        require("postgres", "a postgresql:// database")
        from episodic.store.postgres import PostgresStore

        return PostgresStore(raw, tracer=tracer, read_only=read_only)
    from episodic.store.sqlite import SqliteStore

    return SqliteStore(raw, tracer=tracer, read_only=read_only)


def store_exists(url: str | os.PathLike[str]) -> bool:
    """Whether ``url`` names a database that already holds an episodic schema, found
    without creating anything: a SQLite file that exists and has been initialised; a
    PostgreSQL database with episodic's tables (the server and database are the user's,
    reached as ``open_store`` would)."""
    backend, raw = _backend(url)
    if backend == "postgres":
        from episodic.extras import require

        require("postgres", "a postgresql:// database")
        from episodic.store.postgres.connection import has_schema as pg_has_schema

        return pg_has_schema(raw)
    from episodic.store.sqlite.connection import has_schema as sqlite_has_schema

    return sqlite_has_schema(raw)


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
    "store_exists",
]
