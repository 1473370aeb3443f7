"""PostgresStore: the upkeep jobs' reads and writes (``UpkeepStore``; see
``episodic.store.upkeep``). The review job's part is ``episodic.store.postgres.reviews``,
consolidation's ``episodic.store.postgres.consolidation``.

Decay, archive, compaction, retirement, health, nudges and
leases: ``SqliteStore``'s behaviour, made safe for several processes sharing the
database. Where SQLite relied on one writer at a time, claims here are row locks
(``FOR UPDATE``, ``SKIP LOCKED`` where another worker may simply take other rows) or
single ``INSERT ... ON CONFLICT`` statements, never a read in one transaction followed by
a write in another.

Payload edits (retirement, compaction) are made in Python on rows locked first, like
SQLite's ``json_set``: key order, formatting and number types of the stored JSON stay as
written, which a ``jsonb`` round trip would not keep.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from episodic.errors import InvalidInput
from episodic.model import ScopeFilter, utcnow
from episodic.scoring.decay import (
    DECAY_FLOOR,
    DECAY_HORIZON_DAYS,
    HALF_LIFE_DAYS,
    MAX_REINFORCEMENT,
    PROMINENCE_DECAY_FLOOR,
    REFERENCE_BOOST_DIVISOR,
    REINFORCEMENT_COUNT,
    REINFORCEMENT_LIMIT,
)
from episodic.store.postgres.connection import PgBase, _has_nul
from episodic.store.postgres.vectors import array_of
from episodic.store.rows import (
    json_text,
    opt_ts,
    parse_ts,
    snapshot_from_row,
    ts_text,
    unique,
)
from episodic.store.sql import SNAPSHOT_COLUMNS, scope_where
from episodic.store.upkeep import (
    ARCHIVE_PAYLOAD_CHARS,
    DECAY_CHUNK_ROWS,
    LINKED_SQL,
    ArchivedEvent,
    HealthFacts,
    HealthSnapshot,
    Merge,
)
from episodic.store.vectors import Vector

# ``episodic.scoring.decay``'s formulas in SQL, as SqliteStore's ``_DECAY_SQL`` but
# without julianday(): the age comes from the text timestamps as exact epoch seconds.
# ``p.at`` is `now` (one bound parameter); every operand is float8 so the arithmetic is
# the same IEEE arithmetic as Python's. Tests hold each equal to its Python twin.
_AGE_DAYS = (
    "greatest(0.0::float8, extract(epoch from p.at - m.ts::timestamptz)::float8 / 86400.0::float8)"
)
_DECAY_SQL = {
    "crewship": (
        f"least(1.0::float8, greatest(0.0::float8, m.base_importance * "
        f"greatest({DECAY_FLOOR}::float8, 1.0::float8 - {_AGE_DAYS} / "
        f"{float(DECAY_HORIZON_DAYS)}::float8) * (1.0::float8 + "
        f"ln((greatest(m.reference_count, 0) + 1)::float8) / ln(2.0::float8) / "
        f"{float(REFERENCE_BOOST_DIVISOR)}::float8)))"
    ),
    "prominence": (
        f"least(1.0::float8, greatest(0.0::float8, m.base_importance * "
        f"greatest({PROMINENCE_DECAY_FLOOR}::float8, "
        f"exp(-ln(2.0::float8) / {float(HALF_LIFE_DAYS)}::float8 * {_AGE_DAYS})) * "
        f"(1 + pj.reinforcement)::float8))"
    ),
}
# Seed 001's reinforcement_count from the payload (``scoring.decay.reinforcement_of``):
# a JSON whole number below REINFORCEMENT_LIMIT, capped; anything else counts 0.
_COUNT = f"r.j ->> '{REINFORCEMENT_COUNT}'"
_DIGITS = len(str(REINFORCEMENT_LIMIT)) - 1
_DECAY_JOINS = {
    "prominence": (
        f"CROSS JOIN LATERAL (SELECT CASE WHEN jsonb_typeof(r.j -> '{REINFORCEMENT_COUNT}') = "
        f"'number' AND {_COUNT} ~ '^[0-9]{{1,{_DIGITS}}}$' "
        f"THEN least(({_COUNT})::bigint, {MAX_REINFORCEMENT}) ELSE 0 END AS reinforcement "
        "FROM (SELECT episodic_jsonb(m.payload) AS j) r) pj"
    ),
}


def _with_keys(payload: str, keys: Mapping[str, Any]) -> str:
    """A stored payload with ``keys`` set, as SQLite's json_set writes it (existing keys
    keep their place, new ones go last, compact separators)."""
    return json_text("payload", {**json.loads(payload), **keys})


class UpkeepMixin(PgBase):
    # -- decay -----------------------------------------------------------------------
    def decay_importance(
        self, now: datetime, *, formula: str = "crewship", workspace_id: str | None = None
    ) -> int:
        if formula not in _DECAY_SQL:
            raise InvalidInput(
                "formula", f"unknown decay formula {formula!r}; use crewship or prominence"
            )
        expr = _DECAY_SQL[formula]
        narrow, ws_params = (
            ("AND m.workspace_id = %s ", [workspace_id]) if workspace_id else ("", [])
        )
        # Only rows whose value changes are locked and written (a second run with the same
        # `now` writes nothing). SKIP LOCKED: a row a recall is updating right now keeps
        # its value until the next run instead of making this wait, and a decay that never
        # waits for a row lock can never deadlock with a recall's multi-row update.
        sql = (
            f"WITH due AS (SELECT m.seq, {expr} AS value "
            "FROM memories m CROSS JOIN (SELECT %s::timestamptz AS at) p "
            f"{_DECAY_JOINS.get(formula, '')} "
            f"WHERE m.seq > %s AND m.seq <= %s AND m.status = 'active' {narrow}"
            f"AND m.importance IS DISTINCT FROM {expr} FOR UPDATE OF m SKIP LOCKED) "
            "UPDATE memories m SET importance = due.value, updated_at = %s "
            "FROM due WHERE m.seq = due.seq"
        )
        with self._read() as conn:
            bounds = self._exec(
                conn,
                f"SELECT min(m.seq), max(m.seq) FROM memories m WHERE true {narrow}",
                ws_params,
            ).fetchone()
        if bounds is None or bounds[0] is None:
            return 0
        low, high = int(bounds[0]), int(bounds[1])
        stamp = ts_text(now)
        changed = 0
        # One transaction per chunk of rows: recalls (which write reference counts) wait
        # for one chunk at most, never for the whole table.
        for start in range(low - 1, high, DECAY_CHUNK_ROWS):
            with self._write() as conn:
                params = [stamp, start, start + DECAY_CHUNK_ROWS, *ws_params, ts_text(utcnow())]
                changed += self._exec(conn, sql, params).rowcount
        return changed

    # -- archive ---------------------------------------------------------------------
    def archive_events(
        self, before: datetime, *, workspace_id: str | None = None, limit: int = 5000
    ) -> int:
        if limit <= 0:
            return 0
        where, params = ("workspace_id = %s AND ", [workspace_id]) if workspace_id else ("", [])
        # One statement moves the rows: two archivers running at once take different
        # rows (SKIP LOCKED) and an event is never counted twice.
        with self._write() as conn:
            row = self._exec(
                conn,
                f"WITH picked AS (SELECT id FROM events WHERE {where}ts < %s "
                "AND NOT (type = 'message' AND episode_id IS NULL) ORDER BY ts LIMIT %s "
                "FOR UPDATE SKIP LOCKED), "
                "moved AS (DELETE FROM events e USING picked WHERE e.id = picked.id "
                "RETURNING e.id, e.workspace_id, e.ts, e.type, e.severity, e.summary, "
                "e.payload, e.agent_id, e.crew_id, e.resource_id, e.conversation_id), "
                "kept AS (INSERT INTO events_archive (id, workspace_id, ts, type, severity, "
                "summary, payload, archived_at, agent_id, crew_id, resource_id, "
                "conversation_id) SELECT id, workspace_id, ts, type, severity, summary, "
                f"left(payload, {ARCHIVE_PAYLOAD_CHARS}), %s, agent_id, crew_id, resource_id, "
                "conversation_id FROM moved ON CONFLICT (id) DO NOTHING) "
                "SELECT count(*) FROM moved",
                (*params, ts_text(before), limit, ts_text(utcnow())),
            ).fetchone()
        return int(row[0]) if row else 0

    def archived_events(self, workspace_id: str, ids: Sequence[str]) -> list[ArchivedEvent]:
        wanted = unique(ids)
        if not wanted:
            return []
        with self._read() as conn:
            rows = {
                row[0]: row
                for row in self._exec(
                    conn,
                    "SELECT id, workspace_id, ts, type, severity, summary, payload, archived_at, "
                    "agent_id, crew_id, resource_id, conversation_id FROM events_archive "
                    "WHERE workspace_id = %s AND id = ANY(%s::text[])",
                    (workspace_id, wanted),
                ).fetchall()
            }
        return [
            ArchivedEvent(
                id=r[0],
                workspace_id=r[1],
                ts=parse_ts(r[2]),
                type=r[3],
                severity=r[4],
                summary=r[5],
                payload=r[6],
                archived_at=parse_ts(r[7]),
                agent_id=r[8],
                crew_id=r[9],
                resource_id=r[10],
                conversation_id=r[11],
            )
            for event_id in wanted
            if (r := rows.get(event_id)) is not None
        ]

    # -- compaction ------------------------------------------------------------------
    def compact_memories(self, workspace_id: str, merges: Sequence[Merge], at: datetime) -> int:
        applied = 0
        stamp, now = ts_text(at), ts_text(utcnow())
        with self._write() as conn:
            for merge in merges:
                ids = unique([merge.survivor_id, *(loser for loser, _ in merge.losers)])
                # Locked, then re-checked by PostgreSQL: a memory compacted or retired by
                # another process meanwhile drops out and the merge is skipped.
                found = {
                    row[0]: (row[1], row[2])
                    for row in self._exec(
                        conn,
                        "SELECT id, content, payload FROM memories WHERE workspace_id = %s "
                        "AND id = ANY(%s::text[]) AND status = 'active' ORDER BY id FOR UPDATE",
                        (workspace_id, ids),
                    ).fetchall()
                }
                if len(found) != len(ids) or len(ids) < 2:
                    continue  # changed since it was planned: the next run looks again
                self._exec(
                    conn,
                    "UPDATE memories SET content = %s, base_importance = %s, importance = %s, "
                    "reference_count = %s, last_referenced_at = %s, ts = %s, updated_at = %s "
                    "WHERE id = %s",
                    (
                        merge.content,
                        float(merge.base_importance),
                        float(merge.importance),
                        int(merge.reference_count),
                        None
                        if merge.last_referenced_at is None
                        else ts_text(merge.last_referenced_at),
                        ts_text(merge.ts),
                        now,
                        merge.survivor_id,
                    ),
                )
                if found[merge.survivor_id][0] != merge.content:
                    # Its vector says what the old text said; the indexer embeds it again.
                    self._exec(
                        conn,
                        "DELETE FROM memory_vectors WHERE memory_id = %s",
                        (merge.survivor_id,),
                    )
                # Last similarity wins for a loser named twice, as INSERT OR REPLACE did.
                losers = dict(merge.losers)
                into = {"compacted_into": merge.survivor_id}
                payloads = {loser: _with_keys(found[loser][1], into) for loser in losers}
                self._exec(
                    conn,
                    "UPDATE memories m SET status = 'compacted', payload = v.payload, "
                    "updated_at = %s FROM unnest(%s::text[], %s::text[]) AS v(id, payload) "
                    "WHERE m.id = v.id",
                    (now, list(payloads), list(payloads.values())),
                )
                self._exec(
                    conn,
                    "INSERT INTO memory_compactions (memory_id, survivor_id, workspace_id, "
                    "similarity, compacted_at) SELECT v.id, %s, %s, v.similarity, %s "
                    "FROM unnest(%s::text[], %s::float8[]) AS v(id, similarity) "
                    "ON CONFLICT (memory_id) DO UPDATE SET survivor_id = EXCLUDED.survivor_id, "
                    "workspace_id = EXCLUDED.workspace_id, similarity = EXCLUDED.similarity, "
                    "compacted_at = EXCLUDED.compacted_at",
                    (
                        merge.survivor_id,
                        workspace_id,
                        stamp,
                        list(losers),
                        [float(s) for s in losers.values()],
                    ),
                )
                # The survivor cites each loser's sources, loser by loser in storage order.
                self._exec(
                    conn,
                    "INSERT INTO memory_sources (memory_id, event_id) "
                    "SELECT %s, event_id FROM memory_sources WHERE memory_id = ANY(%s::text[]) "
                    "ORDER BY array_position(%s::text[], memory_id), seq ON CONFLICT DO NOTHING",
                    (merge.survivor_id, list(losers), list(losers)),
                )
                applied += len(merge.losers)
        return applied

    def compacted_into(self, workspace_id: str, ids: Sequence[str]) -> dict[str, str]:
        wanted = unique(ids)
        if not wanted:
            return {}
        with self._read() as conn:
            rows = self._exec(
                conn,
                "SELECT memory_id, survivor_id FROM memory_compactions "
                "WHERE workspace_id = %s AND memory_id = ANY(%s::text[])",
                (workspace_id, wanted),
            ).fetchall()
        return {str(r[0]): str(r[1]) for r in rows}

    def retire_phase(
        self, workspace_id: str, phase: str, at: datetime, *, domain: str = "task"
    ) -> list[str]:
        stamp, now = ts_text(at), ts_text(utcnow())
        with self._write() as conn:
            # jsonb only to find the rows (a string equal to the one given, as SQLite's
            # json_extract = ? compares); the rows are locked and re-checked, then their
            # payloads rewritten as stored.
            rows = self._exec(
                conn,
                "SELECT m.id, m.payload FROM memories m "
                "CROSS JOIN LATERAL (SELECT episodic_jsonb(m.payload) AS j) p "
                "WHERE m.workspace_id = %s AND m.status = 'active' "
                "AND p.j -> 'domain' = to_jsonb(%s::text) AND p.j -> 'restored_at' IS NULL "
                "AND (p.j -> 'phase' = to_jsonb(%s::text) OR p.j -> 'stage' = to_jsonb(%s::text)) "
                "ORDER BY m.id FOR UPDATE OF m",
                (workspace_id, domain, phase, phase),
            ).fetchall()
            if not rows:
                return []
            keys = {"status": "retired", "retired_at": stamp}
            self._exec(
                conn,
                "UPDATE memories m SET status = 'retired', payload = v.payload, updated_at = %s "
                "FROM unnest(%s::text[], %s::text[]) AS v(id, payload) WHERE m.id = v.id",
                (now, [r[0] for r in rows], [_with_keys(r[1], keys) for r in rows]),
            )
        return sorted(str(r[0]) for r in rows)

    # -- health ----------------------------------------------------------------------
    def health_facts(self, workspace_id: str, now: datetime) -> dict[str | None, HealthFacts]:
        # One statement: the workspace (the empty grouping set, always one row) and each
        # crew. The edge probes run only for rows with a vector. The median age comes from
        # the middle one or two times (lower and upper median of the text, which sorts
        # chronologically), aged in Python exactly as SqliteStore does.
        with self._read() as conn:
            rows = self._exec(
                conn,
                "SELECT GROUPING(crew_id), crew_id, count(*), "
                "count(*) FILTER (WHERE has_vector = 1), count(*) FILTER (WHERE linked), "
                "percentile_disc(0.5) WITHIN GROUP (ORDER BY ts), "
                "percentile_disc(0.5) WITHIN GROUP (ORDER BY ts DESC) "
                "FROM (SELECT m.crew_id, m.ts, m.has_vector, m.has_vector = 1 AND ("
                f"{LINKED_SQL}) AS linked "
                "FROM memories m WHERE m.workspace_id = %s AND m.status = 'active') a "
                "GROUP BY GROUPING SETS ((), (crew_id))",
                (workspace_id,),
            ).fetchall()
        facts: dict[str | None, HealthFacts] = {}
        for whole, crew, active, vectored, linked, lower, upper in rows:
            if not whole and crew is None:
                continue  # memories of no crew count only in the workspace's row
            median: float | None = None
            if lower is not None and upper is not None:
                ages = [(now - parse_ts(t)).total_seconds() / 86_400.0 for t in (lower, upper)]
                median = sum(ages) / len(ages)
            facts[None if whole else crew] = HealthFacts(
                active=int(active),
                vectored=int(vectored),
                linked=int(linked),
                median_age_days=median,
            )
        return {k: facts[k] for k in sorted(facts, key=lambda c: (c is not None, c or ""))}

    def vector_matrix(self, flt: ScopeFilter) -> Vector:
        where, params = scope_where(flt, alias="m", mark="%s")
        # Cast to the bare type: the indexer pins the column to vector(dim) when the first
        # vectors arrive, and a statement psycopg prepared before that ALTER would fail
        # ("cached plan must not change result type") if its result type followed it.
        sql = (
            "SELECT v.vector::vector FROM memory_vectors v JOIN memories m ON m.id = v.memory_id "
            f"WHERE v.workspace_id = %s AND {where} AND m.status = 'active' ORDER BY v.seq"
        )
        args = (flt.workspace_id, *params)
        with self._read() as conn:
            if self._tracer is not None:
                self._tracer(sql, args)
            # Binary: a whole workspace's vectors, parsed from text, cost several times more.
            with conn.cursor(binary=True) as cur:
                rows = cur.execute(sql, args).fetchall()
        if not rows:
            return np.zeros((0, 0), np.float32)
        matrix: Vector = np.stack([array_of(r[0]) for r in rows])
        return matrix

    def put_health_snapshot(self, snapshot: HealthSnapshot) -> None:
        with self._write() as conn:
            self._exec(
                conn,
                "INSERT INTO memory_health_snapshots (workspace_id, crew_id, snapshot_date, "
                "freshness, coverage, coherence, efficiency, reachability, score) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (workspace_id, crew_id, snapshot_date) DO UPDATE SET "
                "freshness = EXCLUDED.freshness, coverage = EXCLUDED.coverage, "
                "coherence = EXCLUDED.coherence, efficiency = EXCLUDED.efficiency, "
                "reachability = EXCLUDED.reachability, score = EXCLUDED.score",
                (
                    snapshot.workspace_id,
                    snapshot.crew_id or "",
                    snapshot.snapshot_date.isoformat(),
                    snapshot.freshness,
                    snapshot.coverage,
                    snapshot.coherence,
                    snapshot.efficiency,
                    snapshot.reachability,
                    snapshot.score,
                ),
            )

    def health_snapshots(
        self, workspace_id: str, crew_id: str | None, limit: int
    ) -> list[HealthSnapshot]:
        if limit <= 0 or _has_nul(workspace_id, crew_id):
            return []
        with self._read() as conn:
            rows = self._exec(
                conn,
                f"SELECT {SNAPSHOT_COLUMNS} FROM memory_health_snapshots "
                "WHERE workspace_id = %s AND crew_id = %s "
                "ORDER BY snapshot_date DESC LIMIT %s",
                (workspace_id, crew_id or "", limit),
            ).fetchall()
        return [snapshot_from_row(workspace_id, crew_id, r) for r in rows]

    # -- nudges ----------------------------------------------------------------------
    def events_since_memory_update(self, workspace_id: str, agent_id: str, cap: int) -> int:
        if cap <= 0:
            return 0
        with self._read() as conn:
            row = self._exec(
                conn,
                "SELECT count(*) FROM (SELECT 1 FROM events WHERE workspace_id = %s "
                "AND agent_id = %s AND type <> 'memory.updated' AND ts > coalesce(("
                " SELECT max(ts) FROM events WHERE workspace_id = %s AND agent_id = %s"
                " AND type = 'memory.updated'), '') ORDER BY ts DESC LIMIT %s) recent",
                (workspace_id, agent_id, workspace_id, agent_id, cap),
            ).fetchone()
        return int(row[0]) if row else 0

    def claim_nudge(
        self, workspace_id: str, agent_id: str, session_id: str, entries: int, at: datetime
    ) -> bool:
        # Two processes nudging the same session at once: the primary key lets one insert
        # through; the other waits for it, then does nothing.
        with self._write() as conn:
            cursor = self._exec(
                conn,
                "INSERT INTO memory_nudges (workspace_id, agent_id, session_id, entries, "
                "nudged_at) VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (workspace_id, agent_id, session_id, int(entries), ts_text(at)),
            )
            return cursor.rowcount == 1

    # -- leases ----------------------------------------------------------------------
    def acquire_lease(self, job: str, scope: str, holder: str, now: datetime, ttl_s: float) -> bool:
        # One statement: insert, or take over the row (locked by ON CONFLICT) when it has
        # expired or is already ours. RETURNING gives a row only when this holder got it.
        stamp = ts_text(now)
        with self._write() as conn:
            row = self._exec(
                conn,
                "INSERT INTO upkeep_leases (job, scope, holder, acquired_at, expires_at) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (job, scope) DO UPDATE SET "
                "holder = EXCLUDED.holder, acquired_at = EXCLUDED.acquired_at, "
                "expires_at = EXCLUDED.expires_at "
                "WHERE upkeep_leases.expires_at <= EXCLUDED.acquired_at "
                "OR upkeep_leases.holder = EXCLUDED.holder RETURNING holder",
                (job, scope, holder, stamp, ts_text(now + timedelta(seconds=ttl_s))),
            ).fetchone()
        return row is not None and row[0] == holder

    def lease_holder(self, job: str, scope: str) -> str | None:
        with self._read() as conn:
            row = self._exec(
                conn,
                "SELECT holder FROM upkeep_leases WHERE job = %s AND scope = %s",
                (job, scope),
            ).fetchone()
        return None if row is None else str(row[0])

    def release_lease(self, job: str, scope: str, holder: str) -> None:
        with self._write() as conn:
            self._exec(
                conn,
                "DELETE FROM upkeep_leases WHERE job = %s AND scope = %s AND holder = %s",
                (job, scope, holder),
            )

    def record_run(
        self,
        job: str,
        scope: str,
        holder: str,
        started_at: datetime,
        finished_at: datetime,
        status: str,
        detail: Mapping[str, Any],
    ) -> None:
        with self._write() as conn:
            self._exec(
                conn,
                "INSERT INTO upkeep_runs (job, scope, holder, started_at, finished_at, status, "
                "detail) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (
                    job,
                    scope,
                    holder,
                    ts_text(started_at),
                    ts_text(finished_at),
                    status,
                    json_text("detail", detail),
                ),
            )

    def last_run(self, job: str, scope: str) -> datetime | None:
        with self._read() as conn:
            row = self._exec(
                conn,
                "SELECT max(finished_at) FROM upkeep_runs WHERE job = %s AND scope = %s "
                "AND status = 'ok'",
                (job, scope),
            ).fetchone()
        return opt_ts(row[0]) if row else None
