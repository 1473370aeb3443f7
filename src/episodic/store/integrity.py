"""``episodic doctor --deep``: checks that the derived data agrees with the base tables.

The base tables are the journal (``events``, ``events_archive``) and ``memories``. Every
thing else is derived from them and must stay in step across crashes: the full-text
mirror (SQLite's FTS5 table, PostgreSQL's generated ``tsv`` column), the vectors and the
``has_vector`` flag that says which memories still need one, and the link tables
(sources, relations, compactions). Each backend runs its own engine checks and the
portable ones here, and returns one ``IntegrityCheck`` per question, each with a count
of the rows found wrong and what to run about it.

The checks read; none of them repairs anything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from episodic.scoring.passages import PASSAGE_CHARS

OK = "ok"
WARN = "warn"
ERROR = "error"

# How far a stored vector's length may be from 1 (they are normalised when written).
UNIT_TOLERANCE = 1e-3

FIX_REINDEX = "run `episodic reindex`: it drops every vector and embeds all memories again"
FIX_INDEX = "run `episodic index --once` (or keep `episodic index` / `episodic serve` running)"


@dataclass(frozen=True, slots=True)
class IntegrityCheck:
    """One deep check: ``count`` rows (or engine messages) found wrong."""

    name: str
    status: str  # ok | warn | error
    count: int
    detail: str
    fix: str | None = None


def verdict(
    name: str,
    problems: Sequence[tuple[int, str]],
    *,
    fix: str,
    clean: str,
    status: str = ERROR,
) -> IntegrityCheck:
    """One check from its (count, description) findings: ``clean`` when all are zero."""
    found = [(n, what) for n, what in problems if n]
    if not found:
        return IntegrityCheck(name, OK, 0, clean)
    total = sum(n for n, _ in found)
    return IntegrityCheck(name, status, total, "; ".join(f"{n} {what}" for n, what in found), fix)


# -- portable checks: plain SQL both backends run as they are -----------------------------
# (name, [(count query, what a counted row is)], fix)
_ORPHANS: tuple[tuple[str, tuple[tuple[str, str], ...], str], ...] = (
    (
        "orphans.sources",
        (
            (
                "SELECT count(*) FROM memory_sources s "
                "WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = s.memory_id)",
                "source rows of a memory that does not exist",
            ),
            (
                "SELECT count(*) FROM memory_sources s "
                "WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.id = s.event_id) "
                "AND NOT EXISTS (SELECT 1 FROM events_archive a WHERE a.id = s.event_id)",
                "source rows citing an event neither in the journal nor in its archive",
            ),
        ),
        "delete them: DELETE FROM memory_sources WHERE memory_id NOT IN (SELECT id FROM "
        "memories) OR event_id NOT IN (SELECT id FROM events UNION ALL SELECT id FROM "
        "events_archive)",
    ),
    (
        "orphans.relations",
        (
            (
                "SELECT count(*) FROM memory_relations r "
                "WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = r.src) "
                "OR NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = r.dst)",
                "relation edges to or from a memory that does not exist",
            ),
            (
                "SELECT count(*) FROM memory_relations r "
                "JOIN memories a ON a.id = r.src JOIN memories b ON b.id = r.dst "
                "WHERE a.workspace_id <> b.workspace_id",
                "relation edges between two workspaces",
            ),
        ),
        "delete them: DELETE FROM memory_relations WHERE src NOT IN (SELECT id FROM memories) "
        "OR dst NOT IN (SELECT id FROM memories) (edges across workspaces: delete those too)",
    ),
    (
        "orphans.compactions",
        (
            (
                "SELECT count(*) FROM memory_compactions c "
                "WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = c.memory_id) "
                "OR NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = c.survivor_id)",
                "compaction records naming a memory that does not exist",
            ),
        ),
        "delete them: DELETE FROM memory_compactions WHERE memory_id NOT IN (SELECT id FROM "
        "memories) OR survivor_id NOT IN (SELECT id FROM memories)",
    ),
    (
        "orphans.supersessions",
        (
            (
                "SELECT count(*) FROM supersessions s "
                "WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = s.old_id) "
                "OR NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = s.new_id)",
                "supersession links naming a memory that does not exist",
            ),
            (
                "SELECT count(*) FROM supersessions s JOIN memories m ON m.id = s.old_id "
                "WHERE m.status <> 'superseded' AND s.reverted_at IS NULL",
                "supersession links whose replaced memory is not superseded",
            ),
            (
                # A superseded memory leaves recall; with no replacing memory (or no link
                # to it) nothing says what took its place.
                "SELECT count(*) FROM memories m WHERE m.status = 'superseded' "
                "AND NOT EXISTS (SELECT 1 FROM supersessions s JOIN memories n "
                "ON n.id = s.new_id WHERE s.old_id = m.id AND s.new_id = m.superseded_by "
                "AND s.reverted_at IS NULL)",
                "superseded memories with no link to the memory that replaced them",
            ),
        ),
        "delete the links and give the memories back their validity: DELETE FROM "
        "supersessions WHERE (reverted_at IS NULL AND old_id NOT IN (SELECT id FROM memories "
        "WHERE status = 'superseded')) OR new_id NOT IN (SELECT id FROM memories); UPDATE "
        "memories SET status = 'active', valid_to = NULL, superseded_by = NULL WHERE status = "
        "'superseded' AND id NOT IN (SELECT old_id FROM supersessions WHERE reverted_at IS NULL)",
    ),
    (
        "orphans.archive",
        (
            (
                "SELECT count(*) FROM events_archive a "
                "WHERE EXISTS (SELECT 1 FROM events e WHERE e.id = a.id)",
                "journal rows both in the journal and in its archive (a move half done)",
            ),
        ),
        "delete the archived copies (the journal still holds the whole row): DELETE FROM "
        "events_archive WHERE id IN (SELECT id FROM events); then `episodic upkeep compact`",
    ),
    (
        "orphans.vectors",
        (
            (
                "SELECT count(*) FROM memory_vectors v "
                "WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = v.memory_id)",
                "vectors of a memory that does not exist (forgotten or deleted)",
            ),
            (
                "SELECT count(*) FROM memory_vectors v JOIN memories m ON m.id = v.memory_id "
                "WHERE v.workspace_id <> m.workspace_id",
                "vectors filed under another workspace than their memory's",
            ),
        ),
        FIX_REINDEX,
    ),
    (
        "orphans.passages",
        (
            (
                "SELECT count(*) FROM memory_passages p "
                "WHERE NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.memory_id = p.memory_id)",
                "passages of a memory that has no vector (they go with it)",
            ),
            (
                "SELECT count(*) FROM memory_passages p JOIN memories m ON m.id = p.memory_id "
                "WHERE p.workspace_id <> m.workspace_id OR p.start_char < 0 "
                "OR p.stop_char <= p.start_char OR p.stop_char > length(m.content)",
                "passages filed under another workspace or lying outside their memory's text",
            ),
        ),
        FIX_REINDEX,
    ),
)

# has_vector says which memories still need embedding; it must match the vector rows.
_FLAG_PROBLEMS: tuple[tuple[str, str], ...] = (
    (
        "SELECT count(*) FROM memories m WHERE m.has_vector = 1 "
        "AND NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.memory_id = m.id)",
        "memories marked indexed that have no vector (the indexer will never embed them)",
    ),
    (
        "SELECT count(*) FROM memories m WHERE m.has_vector = 0 "
        "AND EXISTS (SELECT 1 FROM memory_vectors v WHERE v.memory_id = m.id)",
        "memories marked unindexed that have a vector",
    ),
)
PENDING_SQL = "SELECT count(*) FROM memories WHERE has_vector = 0 AND status = 'active'"
# A memory longer than one passage, indexed, with no passages: written before passages
# were, or with an indexer that did not write them. Its vector reads only its start.
UNREAD_SQL = (
    "SELECT count(*) FROM memories m WHERE m.has_vector = 1 AND length(m.content) > {chars} "
    "AND NOT EXISTS (SELECT 1 FROM memory_passages p WHERE p.memory_id = m.id)"
)
MODELS_SQL = "SELECT model, dim, count(*) FROM memory_vectors GROUP BY model, dim"


def portable_checks(count: Callable[[str], int]) -> list[IntegrityCheck]:
    """The checks both backends share; ``count`` runs one ``SELECT count(*)`` query."""
    checks = [
        verdict(name, [(count(sql), what) for sql, what in queries], fix=fix, clean="none")
        for name, queries, fix in _ORPHANS
    ]
    checks.append(
        verdict(
            "vectors.flag",
            [(count(sql), what) for sql, what in _FLAG_PROBLEMS],
            fix=FIX_REINDEX,
            clean="has_vector agrees with the stored vectors",
        )
    )
    unread = count(UNREAD_SQL.format(chars=PASSAGE_CHARS))
    checks.append(
        IntegrityCheck(
            "passages.missing",
            WARN if unread else OK,
            unread,
            f"{unread} long memories are searched by their start only (no passages)"
            if unread
            else "every long memory with a vector has its passages",
            FIX_REINDEX if unread else None,
        )
    )
    pending = count(PENDING_SQL)
    checks.append(
        IntegrityCheck(
            "vectors.pending",
            WARN if pending else OK,
            pending,
            f"{pending} active memories wait for their vector"
            if pending
            else "every active memory has its vector",
            FIX_INDEX if pending else None,
        )
    )
    return checks


FIX_TEXT_PASSAGES = (
    "run `episodic reindex`: it writes every long memory's passages into the keyword "
    "index again (and embeds all memories again)"
)


def text_passages_check(missing: int, stray: int) -> IntegrityCheck:
    """The keyword index's passages of long memories (migration 17): ``missing`` long
    memories have none, ``stray`` rows belong to no memory or lie outside its text."""
    return verdict(
        "passages.text",
        [
            (
                missing,
                "long memories without passages in the keyword index (a fact in their "
                "middle is searched through the whole text only)",
            ),
            (stray, "keyword passages of a memory that is gone or lying outside its text"),
        ],
        fix=FIX_TEXT_PASSAGES,
        clean="every long memory's passages are in the keyword index",
        status=WARN,
    )


def model_problems(models: Sequence[tuple[str, int, int]]) -> list[tuple[int, str]]:
    """Rows of (model, dim, vectors): a store holds vectors of one model only; the
    minority ones are counted as wrong."""
    if len(models) <= 1:
        return []
    ranked = sorted(models, key=lambda r: -r[2])
    main_model, main_dim, _ = ranked[0]
    return [
        (n, f"vectors of {model} ({dim}-d) beside {main_model} ({main_dim}-d)")
        for model, dim, n in ranked[1:]
    ]


__all__ = [
    "ERROR",
    "FIX_INDEX",
    "FIX_REINDEX",
    "FIX_TEXT_PASSAGES",
    "MODELS_SQL",
    "OK",
    "WARN",
    "IntegrityCheck",
    "model_problems",
    "portable_checks",
    "text_passages_check",
    "verdict",
]
