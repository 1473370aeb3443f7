"""SqliteStore: sign-ins to the operator's page (``ServiceStore``'s session methods; the
table is ``ui_sessions``, see migration 13)."""

from __future__ import annotations

from datetime import datetime

from episodic.store.rows import ts_text
from episodic.store.sqlite.connection import SqliteBase


class SessionsMixin(SqliteBase):
    def add_ui_session(
        self, session_hash: str, key_hash: str, created_at: datetime, expires_at: datetime
    ) -> None:
        with self._write():
            self._execute("DELETE FROM ui_sessions WHERE expires_at <= ?", (ts_text(created_at),))
            self._execute(
                "INSERT INTO ui_sessions (session_hash, key_hash, created_at, expires_at) "
                "VALUES (?, ?, ?, ?)",
                (session_hash, key_hash, ts_text(created_at), ts_text(expires_at)),
            )

    def ui_session_key(self, session_hash: str, now: datetime) -> str | None:
        with self._read():
            row = self._execute(
                "SELECT key_hash FROM ui_sessions WHERE session_hash = ? AND expires_at > ?",
                (session_hash, ts_text(now)),
            ).fetchone()
        return None if row is None else str(row[0])

    def end_ui_session(self, session_hash: str) -> None:
        with self._write():
            self._execute("DELETE FROM ui_sessions WHERE session_hash = ?", (session_hash,))
