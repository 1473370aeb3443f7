"""PostgresStore: upkeep (see the package docstring)."""

from __future__ import annotations

from episodic.store.postgres.connection import PgBase


class UpkeepMixin(PgBase):
    pass
