"""SqliteStore: the upkeep jobs' reads and writes (``UpkeepStore``; see
``episodic.store.upkeep``): decay, compaction and retirement, health, the memory nudge,
and the leases and run log of the scheduler. The review job's part is
``episodic.store.sqlite.reviews``, consolidation's ``episodic.store.sqlite.consolidation``.

Every method is one statement or one short transaction; claims and leases are
compare-and-set UPDATEs, which PostgreSQL writes with FOR UPDATE SKIP LOCKED.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

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
from episodic.store.rows import (
    json_text,
    opt_ts,
    parse_ts,
    snapshot_from_row,
    ts_text,
    unique,
)
from episodic.store.sql import SNAPSHOT_COLUMNS, normalise_scope
from episodic.store.sqlite.connection import SqliteBase, chunks, placeholders
from episodic.store.sqlite.writes import write_text_passages
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

# ``episodic.scoring.decay``'s formulas in SQL (SQLite >= 3.35 math functions; PostgreSQL
# has the same ones, with ln(x)/ln(2) for log2). ?1 is `now`. Tests hold each equal to its
# Python twin.
_AGE_DAYS = "max(0.0, julianday(?1) - julianday(ts))"
# Seed 001's reinforcement_count from the payload, as ``scoring.decay.reinforcement_of``.
_COUNT = f"json_extract(payload, '$.{REINFORCEMENT_COUNT}')"
REINFORCEMENT_SQL = (
    f"(CASE WHEN json_type(payload, '$.{REINFORCEMENT_COUNT}') = 'integer' AND {_COUNT} >= 0 "
    f"AND {_COUNT} < {REINFORCEMENT_LIMIT} THEN min({_COUNT}, {MAX_REINFORCEMENT}) ELSE 0 END)"
)
_DECAY_SQL = {
    "crewship": (
        f"min(1.0, max(0.0, base_importance * max({DECAY_FLOOR}, 1.0 - {_AGE_DAYS} / "
        f"{float(DECAY_HORIZON_DAYS)}) * (1.0 + log2(max(reference_count, 0) + 1) / "
        f"{float(REFERENCE_BOOST_DIVISOR)})))"
    ),
    "prominence": (
        f"min(1.0, max(0.0, base_importance * max({PROMINENCE_DECAY_FLOOR}, exp(-ln(2.0) / "
        f"{float(HALF_LIFE_DAYS)} * {_AGE_DAYS})) * (1 + {REINFORCEMENT_SQL})))"
    ),
}


class UpkeepMixin(SqliteBase):
    # -- decay -----------------------------------------------------------------------
    def decay_importance(
        self, now: datetime, *, formula: str = "crewship", workspace_id: str | None = None
    ) -> int:
        if formula not in _DECAY_SQL:
            raise InvalidInput(
                "formula", f"unknown decay formula {formula!r}; use crewship or prominence"
            )
        expr = _DECAY_SQL[formula]
        where = "AND workspace_id = ?3" if workspace_id else ""
        sql = (
            f"UPDATE memories SET importance = {expr}, updated_at = ?2 "
            f"WHERE seq > ?4 AND seq <= ?5 AND status = 'active' {where} "
            f"AND importance IS NOT {expr}"
        )
        with self._read():
            low, high = self._execute("SELECT min(seq), max(seq) FROM memories").fetchone()
        if low is None:
            return 0
        stamp = ts_text(now)
        changed = 0
        # One transaction per chunk of rows: recalls (which write reference counts) wait
        # for one chunk at most, never for the whole table.
        for start in range(int(low) - 1, int(high), DECAY_CHUNK_ROWS):
            with self._write():
                params: list[Any] = [stamp, ts_text(utcnow()), workspace_id]
                params += [start, start + DECAY_CHUNK_ROWS]
                changed += self._execute(sql, params).rowcount
        return changed

    # -- compaction and retirement ---------------------------------------------------
    def archive_events(
        self, before: datetime, *, workspace_id: str | None = None, limit: int = 5000
    ) -> int:
        if limit <= 0:
            return 0
        where, params = ("workspace_id = ? AND ", [workspace_id]) if workspace_id else ("", [])
        now = ts_text(utcnow())
        with self._write():
            ids = [
                row[0]
                for row in self._execute(
                    f"SELECT id FROM events WHERE {where}ts < ? "
                    "AND NOT (type = 'message' AND episode_id IS NULL) ORDER BY ts LIMIT ?",
                    (*params, ts_text(before), limit),
                )
            ]
            for chunk in chunks(ids):
                marks = placeholders(len(chunk))
                self._execute(
                    "INSERT OR IGNORE INTO events_archive (id, workspace_id, ts, type, severity, "
                    "summary, payload, archived_at, agent_id, crew_id, resource_id, "
                    "conversation_id) SELECT id, workspace_id, ts, type, severity, summary, "
                    f"substr(payload, 1, {ARCHIVE_PAYLOAD_CHARS}), ?, agent_id, crew_id, "
                    f"resource_id, conversation_id FROM events WHERE id IN ({marks})",
                    (now, *chunk),
                )
                self._execute(f"DELETE FROM events WHERE id IN ({marks})", chunk)
        return len(ids)

    def archived_events(self, workspace_id: str, ids: Sequence[str]) -> list[ArchivedEvent]:
        wanted = unique(ids)
        rows: dict[str, tuple[Any, ...]] = {}
        with self._read():
            for chunk in chunks(wanted):
                for row in self._execute(
                    "SELECT id, workspace_id, ts, type, severity, summary, payload, archived_at, "
                    "agent_id, crew_id, resource_id, conversation_id FROM events_archive "
                    f"WHERE workspace_id = ? AND id IN ({placeholders(len(chunk))})",
                    (workspace_id, *chunk),
                ):
                    rows[row[0]] = row
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

    def compact_memories(self, workspace_id: str, merges: Sequence[Merge], at: datetime) -> int:
        applied = 0
        stamp, now = ts_text(at), ts_text(utcnow())
        with self._write():
            for merge in merges:
                ids = unique([merge.survivor_id, *(loser for loser, _ in merge.losers)])
                found = dict(
                    self._execute(
                        "SELECT id, content FROM memories WHERE +workspace_id = ? "
                        f"AND id IN ({placeholders(len(ids))}) AND status = 'active'",
                        (workspace_id, *ids),
                    ).fetchall()
                )
                if len(found) != len(ids) or len(ids) < 2:
                    continue  # changed since it was planned: the next run looks again
                self._execute(
                    "UPDATE memories SET content = ?, base_importance = ?, importance = ?, "
                    "reference_count = ?, last_referenced_at = ?, ts = ?, updated_at = ? "
                    "WHERE id = ?",
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
                if found[merge.survivor_id] != merge.content:
                    # Its vector says what the old text said; the indexer embeds it again.
                    self._execute(
                        "DELETE FROM memory_vectors WHERE memory_id = ?", (merge.survivor_id,)
                    )
                    write_text_passages(self, [merge.survivor_id])
                for loser, similarity in merge.losers:
                    self._execute(
                        "UPDATE memories SET status = 'compacted', "
                        "payload = json_set(payload, '$.compacted_into', ?), updated_at = ? "
                        "WHERE id = ?",
                        (merge.survivor_id, now, loser),
                    )
                    self._execute(
                        "INSERT OR REPLACE INTO memory_compactions (memory_id, survivor_id, "
                        "workspace_id, similarity, compacted_at) VALUES (?, ?, ?, ?, ?)",
                        (loser, merge.survivor_id, workspace_id, float(similarity), stamp),
                    )
                    self._execute(
                        "INSERT OR IGNORE INTO memory_sources (memory_id, event_id) "
                        "SELECT ?, event_id FROM memory_sources WHERE memory_id = ? ORDER BY rowid",
                        (merge.survivor_id, loser),
                    )
                applied += len(merge.losers)
        return applied

    def compacted_into(self, workspace_id: str, ids: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        with self._read():
            for chunk in chunks(unique(ids)):
                found.update(
                    self._execute(
                        "SELECT memory_id, survivor_id FROM memory_compactions "
                        f"WHERE workspace_id = ? AND memory_id IN ({placeholders(len(chunk))})",
                        (workspace_id, *chunk),
                    ).fetchall()
                )
        return found

    def retire_phase(
        self, workspace_id: str, phase: str, at: datetime, *, domain: str = "task"
    ) -> list[str]:
        stamp, now = ts_text(at), ts_text(utcnow())
        with self._write():
            rows = self._execute(
                "UPDATE memories SET status = 'retired', "
                "payload = json_set(payload, '$.status', 'retired', '$.retired_at', ?), "
                "updated_at = ? WHERE workspace_id = ? AND status = 'active' "
                "AND json_extract(payload, '$.domain') = ? "
                "AND json_extract(payload, '$.restored_at') IS NULL "
                "AND (json_extract(payload, '$.phase') = ? "
                "OR json_extract(payload, '$.stage') = ?) RETURNING id",
                (stamp, now, workspace_id, domain, phase, phase),
            ).fetchall()
        return sorted(str(r[0]) for r in rows)

    # -- health ----------------------------------------------------------------------
    def health_facts(self, workspace_id: str, now: datetime) -> dict[str | None, HealthFacts]:
        # One scan of the workspace's active rows; the edge probes run only for rows with
        # a vector. Medians come from the sorted times of each group.
        with self._read():
            rows = self._execute(
                "SELECT m.crew_id, m.ts, m.has_vector, m.has_vector = 1 AND ("
                f"{LINKED_SQL}) "
                "FROM memories m WHERE m.workspace_id = ? AND m.status = 'active'",
                (workspace_id,),
            ).fetchall()
        groups: dict[str | None, list[tuple[str, int, int]]] = {None: []}
        for crew, ts, vectored, linked in rows:
            groups[None].append((ts, vectored, linked))
            if crew is not None:
                groups.setdefault(crew, []).append((ts, vectored, linked))
        facts: dict[str | None, HealthFacts] = {}
        for crew in sorted(groups, key=lambda c: (c is not None, c or "")):
            group = groups[crew]
            median: float | None = None
            if group:
                times = sorted(ts for ts, _, _ in group)
                middle = times[(len(times) - 1) // 2 : len(times) // 2 + 1]
                ages = [(now - parse_ts(t)).total_seconds() / 86_400.0 for t in middle]
                median = sum(ages) / len(ages)
            facts[crew] = HealthFacts(
                active=len(group),
                vectored=sum(v for _, v, _ in group),
                linked=sum(int(bool(link)) for _, _, link in group),
                median_age_days=median,
            )
        return facts

    def vector_matrix(self, flt: ScopeFilter) -> Vector:
        scope = normalise_scope(flt)
        return self._fresh_index(flt.workspace_id).visible_matrix(flt, scope)

    def put_health_snapshot(self, snapshot: HealthSnapshot) -> None:
        with self._write():
            self._execute(
                "INSERT OR REPLACE INTO memory_health_snapshots (workspace_id, crew_id, "
                "snapshot_date, freshness, coverage, coherence, efficiency, reachability, score) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
        if limit <= 0:
            return []
        with self._read():
            rows = self._execute(
                f"SELECT {SNAPSHOT_COLUMNS} FROM memory_health_snapshots "
                "WHERE workspace_id = ? AND crew_id = ? "
                "ORDER BY snapshot_date DESC LIMIT ?",
                (workspace_id, crew_id or "", limit),
            ).fetchall()
        return [snapshot_from_row(workspace_id, crew_id, r) for r in rows]

    # -- the memory nudge ------------------------------------------------------------
    def events_since_memory_update(self, workspace_id: str, agent_id: str, cap: int) -> int:
        if cap <= 0:
            return 0
        with self._read():
            row = self._execute(
                "SELECT count(*) FROM (SELECT 1 FROM events WHERE workspace_id = ? "
                "AND agent_id = ? AND type != 'memory.updated' AND ts > coalesce(("
                " SELECT max(ts) FROM events INDEXED BY events_memory_updated"
                " WHERE workspace_id = ? AND agent_id = ? AND type = 'memory.updated'), '') "
                "ORDER BY ts DESC LIMIT ?)",
                (workspace_id, agent_id, workspace_id, agent_id, cap),
            ).fetchone()
        return int(row[0])

    def claim_nudge(
        self, workspace_id: str, agent_id: str, session_id: str, entries: int, at: datetime
    ) -> bool:
        with self._write():
            return (
                self._execute(
                    "INSERT OR IGNORE INTO memory_nudges (workspace_id, agent_id, session_id, "
                    "entries, nudged_at) VALUES (?, ?, ?, ?, ?)",
                    (workspace_id, agent_id, session_id, int(entries), ts_text(at)),
                ).rowcount
                == 1
            )

    # -- leases and the run log -------------------------------------------------------
    def acquire_lease(self, job: str, scope: str, holder: str, now: datetime, ttl_s: float) -> bool:
        stamp = ts_text(now)
        with self._write():
            self._execute(
                "INSERT INTO upkeep_leases (job, scope, holder, acquired_at, expires_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (job, scope) DO UPDATE SET "
                "holder = excluded.holder, acquired_at = excluded.acquired_at, "
                "expires_at = excluded.expires_at "
                "WHERE upkeep_leases.expires_at <= excluded.acquired_at "
                "OR upkeep_leases.holder = excluded.holder",
                (job, scope, holder, stamp, ts_text(now + timedelta(seconds=ttl_s))),
            )
            row = self._execute(
                "SELECT holder FROM upkeep_leases WHERE job = ? AND scope = ?", (job, scope)
            ).fetchone()
        return row is not None and row[0] == holder

    def lease_holder(self, job: str, scope: str) -> str | None:
        with self._read():
            row = self._execute(
                "SELECT holder FROM upkeep_leases WHERE job = ? AND scope = ?", (job, scope)
            ).fetchone()
        return None if row is None else str(row[0])

    def release_lease(self, job: str, scope: str, holder: str) -> None:
        with self._write():
            self._execute(
                "DELETE FROM upkeep_leases WHERE job = ? AND scope = ? AND holder = ?",
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
        with self._write():
            self._execute(
                "INSERT INTO upkeep_runs (job, scope, holder, started_at, finished_at, status, "
                "detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
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
        with self._read():
            row = self._execute(
                "SELECT max(finished_at) FROM upkeep_runs WHERE job = ? AND scope = ? "
                "AND status = 'ok'",
                (job, scope),
            ).fetchone()
        return opt_ts(row[0])
