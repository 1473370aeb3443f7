"""PostgresStore: sign-ins to the operator's page (``ServiceStore``'s session methods; the
table is ``ui_sessions``, see migration 13)."""

from __future__ import annotations

from datetime import datetime

from episodic.store.postgres.connection import PgBase, _has_nul
from episodic.store.rows import ts_text


class SessionsMixin(PgBase):
    def add_ui_session(
        self, session_hash: str, key_hash: str, created_at: datetime, expires_at: datetime
    ) -> None:
        with self._write() as conn:
            self._exec(
                conn, "DELETE FROM ui_sessions WHERE expires_at <= %s", (ts_text(created_at),)
            )
            self._exec(
                conn,
                "INSERT INTO ui_sessions (session_hash, key_hash, created_at, expires_at) "
                "VALUES (%s, %s, %s, %s)",
                (session_hash, key_hash, ts_text(created_at), ts_text(expires_at)),
            )

    def ui_session_key(self, session_hash: str, now: datetime) -> str | None:
        if _has_nul(session_hash):
            return None
        with self._read() as conn:
            row = self._exec(
                conn,
                "SELECT key_hash FROM ui_sessions WHERE session_hash = %s AND expires_at > %s",
                (session_hash, ts_text(now)),
            ).fetchone()
        return None if row is None else str(row[0])

    def end_ui_session(self, session_hash: str) -> None:
        if _has_nul(session_hash):
            return
        with self._write() as conn:
            self._exec(conn, "DELETE FROM ui_sessions WHERE session_hash = %s", (session_hash,))
