"""SqliteStore: the review job's part of ``UpkeepStore`` (seed 003): claiming pending
reviews, closing them, storing the FSRS state they produce, and what they read (the
messages that followed a recall, the cosines of past recalls for the health score). A
recall records its review through ``SearchMixin.add_review``. The same recorded recalls
feed seed 001's reinforcement at the end of their session (``reinforce_session``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from episodic.model import Event, ScopeFilter, utcnow
from episodic.scoring.decay import LAST_REINFORCED, REINFORCEMENT_COUNT
from episodic.store.rows import event_from_row, review_from_row, ts_text, unique
from episodic.store.sql import (
    EVENT_COLUMNS,
    REVIEW_COLUMNS,
    not_session_owner,
    session_owner,
)
from episodic.store.sqlite.connection import SqliteBase, chunks, placeholders
from episodic.store.sqlite.upkeep import REINFORCEMENT_SQL
from episodic.store.upkeep import FsrsUpdate, PendingReview, ReviewOutcome

# A session's recorded recalls not yet counted by its end.
_SESSION = "workspace_id = ? AND conversation_id = ? AND reinforced_at IS NULL"


class ReviewsMixin(SqliteBase):
    def claim_reviews(
        self,
        holder: str,
        now: datetime,
        *,
        lease_s: float,
        limit: int,
        workspace_id: str | None = None,
        agent_id: str | None = None,
        conversation_id: str | None = None,
        only_conversations: bool = False,
        recalled_before: datetime | None = None,
    ) -> list[PendingReview]:
        if limit <= 0:
            return []
        narrow, params = "", []
        for column, value in (
            ("workspace_id", workspace_id),
            ("agent_id", agent_id),
            ("conversation_id", conversation_id),
        ):
            if value:
                narrow += f" AND {column} = ?"
                params.append(value)
        if only_conversations:
            narrow += " AND conversation_id IS NOT NULL"
        if recalled_before is not None:
            narrow += " AND recalled_at < ?"
            params.append(ts_text(recalled_before))
        stamp = ts_text(now)
        with self._write():
            rows = self._execute(
                "UPDATE memory_reviews SET claimed_by = ?, claimed_until = ? WHERE id IN ("
                " SELECT id FROM memory_reviews WHERE reviewed_at IS NULL"
                f" AND (claimed_until IS NULL OR claimed_until <= ?){narrow}"
                " ORDER BY id LIMIT ?) "
                f"RETURNING {REVIEW_COLUMNS}",
                (holder, ts_text(now + timedelta(seconds=lease_s)), stamp, *params, limit),
            ).fetchall()
        return sorted((review_from_row(row) for row in rows), key=lambda r: r.id)

    def release_reviews(self, holder: str, ids: Sequence[int]) -> None:
        if not ids:
            return
        with self._write():
            self._executemany(
                "UPDATE memory_reviews SET claimed_by = NULL, claimed_until = NULL "
                "WHERE id = ? AND claimed_by = ? AND reviewed_at IS NULL",
                [(int(i), holder) for i in ids],
            )

    def finish_reviews(self, holder: str, outcomes: Sequence[ReviewOutcome], at: datetime) -> int:
        if not outcomes:
            return 0
        stamp = ts_text(at)
        with self._write():
            before = self._conn.total_changes
            # claimed_until > at: a claim that lapsed may already be someone else's.
            self._executemany(
                "UPDATE memory_reviews SET reviewed_at = ?, outcome = ?, ratings = ?, "
                "claimed_until = NULL WHERE id = ? AND claimed_by = ? AND claimed_until > ? "
                "AND reviewed_at IS NULL",
                [
                    (
                        stamp,
                        o.outcome,
                        json.dumps({"rated_by": o.rated_by, "ratings": dict(o.ratings)}),
                        o.review_id,
                        holder,
                        stamp,
                    )
                    for o in outcomes
                ],
            )
            return self._conn.total_changes - before

    def apply_reviews(self, workspace_id: str, updates: Sequence[FsrsUpdate]) -> int:
        if not updates:
            return 0
        now = ts_text(utcnow())
        with self._write():
            before = self._conn.total_changes
            self._executemany(
                "UPDATE memories SET stability = ?, difficulty = ?, last_reviewed_at = ?, "
                "updated_at = ? WHERE +workspace_id = ? AND id = ? AND last_reviewed_at IS ?",
                [
                    (
                        float(u.stability),
                        float(u.difficulty),
                        ts_text(u.reviewed_at),
                        now,
                        workspace_id,
                        u.memory_id,
                        None if u.expected_last_review is None else ts_text(u.expected_last_review),
                    )
                    for u in updates
                ],
            )
            return self._conn.total_changes - before

    def reinforce_session(
        self,
        workspace_id: str,
        conversation_id: str,
        at: datetime,
        *,
        by_agent: str | None = None,
        by_crew: str | None = None,
    ) -> list[str]:
        stamp, now = ts_text(at), ts_text(utcnow())
        day = at.astimezone(UTC).date().isoformat()
        reinforced: list[str] = []
        own, _, owner = session_owner(by_agent, by_crew)
        with self._write():
            if self._foreign_recall(workspace_id, conversation_id, stamp, by_agent, by_crew):
                raise not_session_owner(conversation_id, by_agent)
            recalls = self._execute(
                f"UPDATE memory_reviews SET reinforced_at = ? WHERE {_SESSION} "
                f"AND recalled_at <= ?{own} RETURNING memory_ids",
                (stamp, workspace_id, conversation_id, stamp, *owner),
            ).fetchall()
            ids = unique([i for (text,) in recalls for i in json.loads(text)])
            for chunk in chunks(ids):
                reinforced += [
                    str(row[0])
                    for row in self._execute(
                        "UPDATE memories SET payload = json_set(payload, "
                        f"'$.{REINFORCEMENT_COUNT}', {REINFORCEMENT_SQL} + 1, "
                        f"'$.{LAST_REINFORCED}', ?), updated_at = ? WHERE +workspace_id = ? "
                        f"AND id IN ({placeholders(len(chunk))}) AND status = 'active' "
                        "RETURNING id",
                        (day, now, workspace_id, *chunk),
                    )
                ]
        return sorted(reinforced)

    def session_owned(
        self,
        workspace_id: str,
        conversation_id: str,
        at: datetime,
        *,
        by_agent: str | None = None,
        by_crew: str | None = None,
    ) -> bool:
        with self._read():
            return not self._foreign_recall(
                workspace_id, conversation_id, ts_text(at), by_agent, by_crew
            )

    def _foreign_recall(
        self,
        workspace_id: str,
        conversation_id: str,
        stamp: str,
        by_agent: str | None,
        by_crew: str | None,
    ) -> bool:
        """Whether the session holds a not-yet-counted recall up to ``stamp`` made by
        another agent (crew) than the one ending it, or by none; never for an end on
        behalf of anyone. Runs inside the caller's read or write."""
        _, foreign, owner = session_owner(by_agent, by_crew)
        if not foreign:
            return False
        row = self._execute(
            f"SELECT 1 FROM memory_reviews WHERE {_SESSION} AND recalled_at <= ?{foreign} LIMIT 1",
            (workspace_id, conversation_id, stamp, *owner),
        ).fetchone()
        return row is not None

    def conversation_messages(
        self, workspace_id: str, conversation_id: str, *, after: datetime, limit: int
    ) -> list[Event]:
        if limit <= 0:
            return []
        with self._read():
            rows = self._execute(
                f"SELECT {EVENT_COLUMNS} FROM events INDEXED BY events_conversation_ts "
                "WHERE workspace_id = ? AND conversation_id = ? AND ts > ? AND type = 'message' "
                "ORDER BY ts, rowid LIMIT ?",
                (workspace_id, conversation_id, ts_text(after), limit),
            ).fetchall()
        return [event_from_row(row) for row in rows]

    def hit_cosines(self, flt: ScopeFilter, since: datetime) -> list[list[float]]:
        narrow, params = "", []
        for column in ("agent_id", "crew_id"):
            value = getattr(flt, column)
            if value:
                narrow += f" AND {column} = ?"
                params.append(value)
        with self._read():
            rows = self._execute(
                "SELECT cosines FROM memory_reviews INDEXED BY memory_reviews_recalled "
                f"WHERE workspace_id = ? AND recalled_at >= ?{narrow} ORDER BY recalled_at",
                (flt.workspace_id, ts_text(since), *params),
            ).fetchall()
        out: list[list[float]] = []
        for (text,) in rows:
            values = [float(v) for v in json.loads(text) if isinstance(v, int | float)]
            if values:
                out.append(values)
        return out
