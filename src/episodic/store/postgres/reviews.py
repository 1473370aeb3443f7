"""PostgresStore: the review job's part of ``UpkeepStore`` (seed 003): claiming pending
reviews (``FOR UPDATE SKIP LOCKED``: two jobs never take the same row), closing them,
storing the FSRS state they produce (a compare-and-set on ``last_reviewed_at``), and what
they read (the messages that followed a recall, the cosines of past recalls for the
health score). A recall records its review through ``SearchMixin.add_review``. The same
recorded recalls feed seed 001's reinforcement at the end of their session
(``reinforce_session``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from episodic.model import Event, ScopeFilter, utcnow
from episodic.scoring.decay import LAST_REINFORCED, REINFORCEMENT_COUNT, reinforcement_of
from episodic.store.postgres.connection import Conn, PgBase
from episodic.store.rows import event_from_row, json_text, review_from_row, ts_text, unique
from episodic.store.sql import (
    EVENT_COLUMNS,
    REVIEW_COLUMNS,
    not_session_owner,
    session_owner,
)
from episodic.store.upkeep import FsrsUpdate, PendingReview, ReviewOutcome

# A session's recorded recalls not yet counted by its end.
_SESSION = "workspace_id = %s AND conversation_id = %s AND reinforced_at IS NULL"

# The review columns qualified: the claim's UPDATE also reads a subquery with an id.
_REVIEW_COLUMNS = ", ".join(f"r.{c}" for c in REVIEW_COLUMNS.split(", "))


class ReviewsMixin(PgBase):
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
                narrow += f" AND {column} = %s"
                params.append(value)
        if only_conversations:
            narrow += " AND conversation_id IS NOT NULL"
        if recalled_before is not None:
            narrow += " AND recalled_at < %s"
            params.append(ts_text(recalled_before))
        # SKIP LOCKED: a row another claimer is taking is left to it; one it has just
        # committed is re-checked against the new claimed_until and dropped.
        with self._write() as conn:
            rows = self._exec(
                conn,
                "WITH picked AS (SELECT id FROM memory_reviews WHERE reviewed_at IS NULL"
                f" AND (claimed_until IS NULL OR claimed_until <= %s){narrow}"
                " ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED) "
                "UPDATE memory_reviews r SET claimed_by = %s, claimed_until = %s "
                f"FROM picked WHERE r.id = picked.id RETURNING {_REVIEW_COLUMNS}",
                (
                    ts_text(now),
                    *params,
                    limit,
                    holder,
                    ts_text(now + timedelta(seconds=lease_s)),
                ),
            ).fetchall()
        return sorted((review_from_row(row) for row in rows), key=lambda r: r.id)

    def release_reviews(self, holder: str, ids: Sequence[int]) -> None:
        if not ids:
            return
        with self._write() as conn:
            self._exec(
                conn,
                "UPDATE memory_reviews SET claimed_by = NULL, claimed_until = NULL "
                "WHERE id = ANY(%s::bigint[]) AND claimed_by = %s AND reviewed_at IS NULL",
                ([int(i) for i in ids], holder),
            )

    def finish_reviews(self, holder: str, outcomes: Sequence[ReviewOutcome], at: datetime) -> int:
        if not outcomes:
            return 0
        stamp = ts_text(at)
        with self._write() as conn:
            # claimed_until > at: a claim that lapsed may already be someone else's.
            return self._executemany(
                conn,
                "UPDATE memory_reviews SET reviewed_at = %s, outcome = %s, ratings = %s, "
                "claimed_until = NULL WHERE id = %s AND claimed_by = %s AND claimed_until > %s "
                "AND reviewed_at IS NULL",
                [
                    (
                        stamp,
                        o.outcome,
                        json.dumps({"rated_by": o.rated_by, "ratings": dict(o.ratings)}),
                        int(o.review_id),
                        holder,
                        stamp,
                    )
                    for o in outcomes
                ],
            )

    def apply_reviews(self, workspace_id: str, updates: Sequence[FsrsUpdate]) -> int:
        if not updates:
            return 0
        now = ts_text(utcnow())
        with self._write() as conn:
            # The compare-and-set is in the WHERE: a concurrent job's committed update is
            # re-checked after its row lock is released, and this one then changes nothing.
            return self._executemany(
                conn,
                "UPDATE memories SET stability = %s, difficulty = %s, last_reviewed_at = %s, "
                "updated_at = %s WHERE workspace_id = %s AND id = %s "
                "AND last_reviewed_at IS NOT DISTINCT FROM %s",
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
        own, _, owner = session_owner(by_agent, by_crew, mark="%s")
        with self._write() as conn:
            # A recall of another owner recorded after this check is left alone: the
            # update below takes only the owner's own.
            if self._foreign_recall(conn, workspace_id, conversation_id, stamp, by_agent, by_crew):
                raise not_session_owner(conversation_id, by_agent)
            # Taking the recalls is the claim: a second end of the same session waits for
            # this one's row locks, then finds them counted and reinforces nothing.
            recalls = self._exec(
                conn,
                f"UPDATE memory_reviews SET reinforced_at = %s WHERE {_SESSION} "
                f"AND recalled_at <= %s{own} RETURNING memory_ids",
                (stamp, workspace_id, conversation_id, stamp, *owner),
            ).fetchall()
            ids = unique([i for (text,) in recalls for i in json.loads(text)])
            if not ids:
                return []
            # Locked in id order, as recalls lock them (no deadlock); the payloads are
            # rewritten in Python so their key order and formatting stay as stored.
            rows = self._exec(
                conn,
                "SELECT id, payload FROM memories WHERE workspace_id = %s AND id = ANY(%s) "
                "AND status = 'active' ORDER BY id FOR NO KEY UPDATE",
                (workspace_id, ids),
            ).fetchall()
            if not rows:
                return []
            payloads = []
            for _, text in rows:
                payload = json.loads(text)
                payload[REINFORCEMENT_COUNT] = reinforcement_of(payload) + 1
                payload[LAST_REINFORCED] = day
                payloads.append(json_text("payload", payload))
            self._exec(
                conn,
                "UPDATE memories m SET payload = v.payload, updated_at = %s "
                "FROM unnest(%s::text[], %s::text[]) AS v(id, payload) WHERE m.id = v.id",
                (now, [r[0] for r in rows], payloads),
            )
        return sorted(str(r[0]) for r in rows)

    def session_owned(
        self,
        workspace_id: str,
        conversation_id: str,
        at: datetime,
        *,
        by_agent: str | None = None,
        by_crew: str | None = None,
    ) -> bool:
        with self._read() as conn:
            return not self._foreign_recall(
                conn, workspace_id, conversation_id, ts_text(at), by_agent, by_crew
            )

    def _foreign_recall(
        self,
        conn: Conn,
        workspace_id: str,
        conversation_id: str,
        stamp: str,
        by_agent: str | None,
        by_crew: str | None,
    ) -> bool:
        """Whether the session holds a not-yet-counted recall up to ``stamp`` made by
        another agent (crew) than the one ending it, or by none; never for an end on
        behalf of anyone. Runs on the caller's connection, inside its read or write."""
        _, foreign, owner = session_owner(by_agent, by_crew, mark="%s")
        if not foreign:
            return False
        row = self._exec(
            conn,
            f"SELECT 1 FROM memory_reviews WHERE {_SESSION} AND recalled_at <= %s{foreign} LIMIT 1",
            (workspace_id, conversation_id, stamp, *owner),
        ).fetchone()
        return row is not None

    def conversation_messages(
        self, workspace_id: str, conversation_id: str, *, after: datetime, limit: int
    ) -> list[Event]:
        if limit <= 0:
            return []
        with self._read() as conn:
            rows = self._exec(
                conn,
                f"SELECT {EVENT_COLUMNS} FROM events "
                "WHERE workspace_id = %s AND conversation_id = %s AND ts > %s "
                "AND type = 'message' ORDER BY ts, ctid LIMIT %s",
                (workspace_id, conversation_id, ts_text(after), limit),
            ).fetchall()
        return [event_from_row(row) for row in rows]

    def hit_cosines(self, flt: ScopeFilter, since: datetime) -> list[list[float]]:
        narrow, params = "", []
        for column in ("agent_id", "crew_id"):
            value = getattr(flt, column)
            if value:
                narrow += f" AND {column} = %s"
                params.append(value)
        with self._read() as conn:
            rows = self._exec(
                conn,
                "SELECT cosines FROM memory_reviews "
                f"WHERE workspace_id = %s AND recalled_at >= %s{narrow} ORDER BY recalled_at, id",
                (flt.workspace_id, ts_text(since), *params),
            ).fetchall()
        out: list[list[float]] = []
        for (text,) in rows:
            values = [float(v) for v in json.loads(text) if isinstance(v, int | float)]
            if values:
                out.append(values)
        return out
