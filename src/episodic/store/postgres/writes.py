"""PostgresStore: writes (see the package docstring)."""

from __future__ import annotations

from episodic.store.postgres.connection import PgBase


class WritesMixin(PgBase):
    pass
