"""The SQLite schema, as numbered migrations.

Each migration is a function ``mNNN_name(conn)`` listed in ``MIGRATIONS``. ``migrate``
applies the pending ones in order, each in its own ``BEGIN IMMEDIATE`` transaction together
with its row in ``schema_migrations``, so a crash leaves the database at a whole version
and two processes opening a fresh file at once cannot both apply the same step.

Conventions the schema relies on:

- Times are ISO 8601 UTC text in one fixed format (``TS_FORMAT``), so ``ORDER BY`` and range
  comparisons on the text sort chronologically.
- ``memories.seq`` is an explicit ``INTEGER PRIMARY KEY``: FTS5's external content points at
  it, and an implicit rowid may be renumbered by ``VACUUM``, silently detaching the index.
- ``memory_vectors.seq`` is ``AUTOINCREMENT`` so it only ever grows: a reader that loaded up
  to seq N finds every later write with ``seq > N``. Writes that cannot be seen that way
  (a vector deleted or edited in place, a visibility column of a vectored memory changed)
  bump ``vector_generations`` for the workspace, which tells the reader to reload it whole.
- ``memories.has_vector`` is kept by triggers so the "what still needs embedding" question
  reads a small partial index instead of anti-joining every memory against every vector.

Tokenizer: ``porter unicode61 remove_diacritics 2``. Queries are prefix terms (see
``episodic.scoring.fts``), which already match a longer stored form ("deploy" finds
"deployed"), but not the other way round: on 33 query/document word pairs typical of agent
journals ("denied"/"deny", "retries"/"retry", "caching"/"cache", "policies"/"policy") prefix
matching alone matched 6, with Porter stemming 29. Porter only rewrites English-looking
ASCII words, so other scripts are tokenized exactly as by unicode61.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterable
from datetime import UTC, datetime

from episodic.scoring.passages import PASSAGE_CHARS, PASSAGE_OVERLAP, PASSAGE_SNAP, passage_spans

TS_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"

Migration = Callable[[sqlite3.Connection], None]


def _run(conn: sqlite3.Connection, statements: str) -> None:
    """Run statements separated by a blank line (so a trigger body, whose statements end in
    ``;`` on consecutive lines, stays whole). executescript would COMMIT first and break
    the one-transaction-per-migration rule."""
    for statement in statements.split(";\n\n"):
        if statement.strip():
            conn.execute(statement)


_M001_SQL = f"""
CREATE TABLE events (
  id              TEXT PRIMARY KEY,
  workspace_id    TEXT NOT NULL,
  crew_id         TEXT,
  agent_id        TEXT,
  resource_id     TEXT,
  conversation_id TEXT,
  ts              TEXT NOT NULL,
  type            TEXT NOT NULL,
  severity        TEXT NOT NULL,
  summary         TEXT NOT NULL DEFAULT '',
  payload         TEXT NOT NULL DEFAULT '{{}}',
  refs            TEXT NOT NULL DEFAULT '{{}}',
  -- 1: became (part of) a memory; 0: refused by admission, never looked at again
  admitted        INTEGER NOT NULL CHECK (admitted IN (0, 1)),
  created_at      TEXT NOT NULL
);

CREATE INDEX events_workspace_ts ON events (workspace_id, ts);

CREATE TABLE memories (
  seq                INTEGER PRIMARY KEY,
  id                 TEXT NOT NULL UNIQUE,
  workspace_id       TEXT NOT NULL,
  crew_id            TEXT,
  agent_id           TEXT,
  resource_id        TEXT,
  conversation_id    TEXT,
  ts                 TEXT NOT NULL,
  type               TEXT NOT NULL,
  severity           TEXT NOT NULL,
  content            TEXT NOT NULL,
  payload            TEXT NOT NULL DEFAULT '{{}}',
  base_importance    REAL NOT NULL,
  importance         REAL NOT NULL,
  reference_count    INTEGER NOT NULL DEFAULT 0,
  last_referenced_at TEXT,
  status             TEXT NOT NULL DEFAULT 'active'
                     CHECK (status IN ('active', 'retired', 'compacted')),
  has_vector         INTEGER NOT NULL DEFAULT 0 CHECK (has_vector IN (0, 1)),
  created_at         TEXT NOT NULL,
  updated_at         TEXT NOT NULL
);

CREATE INDEX memories_workspace_agent ON memories (workspace_id, agent_id, ts);

CREATE INDEX memories_workspace_crew ON memories (workspace_id, crew_id, ts);

CREATE INDEX memories_workspace_resource ON memories (workspace_id, resource_id, ts);

CREATE INDEX memories_workspace_conversation ON memories (workspace_id, conversation_id, ts);

CREATE INDEX memories_workspace_status ON memories (workspace_id, status, ts);

CREATE INDEX memories_pending_vector ON memories (seq)
  WHERE has_vector = 0 AND status = 'active';

CREATE TABLE memory_sources (
  memory_id TEXT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
  event_id  TEXT NOT NULL REFERENCES events (id),
  PRIMARY KEY (memory_id, event_id)
);

CREATE INDEX memory_sources_event ON memory_sources (event_id);

CREATE TABLE memory_vectors (
  seq          INTEGER PRIMARY KEY AUTOINCREMENT,
  memory_id    TEXT NOT NULL UNIQUE REFERENCES memories (id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL,
  vector       BLOB NOT NULL,  -- little-endian float32, L2-normalised
  dim          INTEGER NOT NULL,
  model        TEXT NOT NULL,
  indexed_at   TEXT NOT NULL
);

CREATE INDEX memory_vectors_workspace_seq ON memory_vectors (workspace_id, seq);

CREATE TABLE vector_generations (
  workspace_id TEXT PRIMARY KEY,
  generation   INTEGER NOT NULL
);

CREATE TRIGGER memory_vectors_ai AFTER INSERT ON memory_vectors BEGIN
  UPDATE memories SET has_vector = 1 WHERE id = new.memory_id;
END;

CREATE TRIGGER memory_vectors_ad AFTER DELETE ON memory_vectors BEGIN
  UPDATE memories SET has_vector = 0 WHERE id = old.memory_id;
  INSERT INTO vector_generations (workspace_id, generation) VALUES (old.workspace_id, 1)
    ON CONFLICT (workspace_id) DO UPDATE SET generation = generation + 1;
END;

CREATE TRIGGER memory_vectors_au AFTER UPDATE ON memory_vectors BEGIN
  INSERT INTO vector_generations (workspace_id, generation) VALUES (old.workspace_id, 1)
    ON CONFLICT (workspace_id) DO UPDATE SET generation = generation + 1;
  INSERT INTO vector_generations (workspace_id, generation) VALUES (new.workspace_id, 1)
    ON CONFLICT (workspace_id) DO UPDATE SET generation = generation + 1;
END;

CREATE TRIGGER memories_visibility_au
AFTER UPDATE OF workspace_id, agent_id, crew_id, resource_id, conversation_id,
                base_importance, status ON memories
WHEN old.has_vector = 1 AND (
     old.workspace_id IS NOT new.workspace_id OR old.agent_id IS NOT new.agent_id
  OR old.crew_id IS NOT new.crew_id OR old.resource_id IS NOT new.resource_id
  OR old.conversation_id IS NOT new.conversation_id
  OR old.base_importance IS NOT new.base_importance OR old.status IS NOT new.status)
BEGIN
  INSERT INTO vector_generations (workspace_id, generation) VALUES (old.workspace_id, 1)
    ON CONFLICT (workspace_id) DO UPDATE SET generation = generation + 1;
  INSERT INTO vector_generations (workspace_id, generation) VALUES (new.workspace_id, 1)
    ON CONFLICT (workspace_id) DO UPDATE SET generation = generation + 1;
END;

CREATE TABLE embedding_cache (
  content_hash TEXT NOT NULL,
  model        TEXT NOT NULL,
  dim          INTEGER NOT NULL,
  vector       BLOB NOT NULL,  -- little-endian float32
  created_at   TEXT NOT NULL,
  PRIMARY KEY (content_hash, model)
) WITHOUT ROWID;

CREATE VIRTUAL TABLE memories_fts USING fts5 (
  content, payload,
  content = 'memories', content_rowid = 'seq',
  tokenize = '{FTS_TOKENIZER}'
);

CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories BEGIN
  INSERT INTO memories_fts (rowid, content, payload)
    VALUES (new.seq, new.content, new.payload);
END;

CREATE TRIGGER memories_fts_ad AFTER DELETE ON memories BEGIN
  INSERT INTO memories_fts (memories_fts, rowid, content, payload)
    VALUES ('delete', old.seq, old.content, old.payload);
END;

CREATE TRIGGER memories_fts_au AFTER UPDATE OF seq, content, payload ON memories BEGIN
  INSERT INTO memories_fts (memories_fts, rowid, content, payload)
    VALUES ('delete', old.seq, old.content, old.payload);
  INSERT INTO memories_fts (rowid, content, payload)
    VALUES (new.seq, new.content, new.payload);
END;

CREATE TABLE memory_relations (
  src        TEXT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
  dst        TEXT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
  relation   TEXT NOT NULL CHECK (relation IN ('similar', 'supports', 'contradicts')),
  weight     REAL NOT NULL DEFAULT 0.0,
  created_at TEXT NOT NULL,
  PRIMARY KEY (src, dst, relation)
);

CREATE INDEX memory_relations_dst ON memory_relations (dst);

CREATE TABLE events_archive (
  id           TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL,
  ts           TEXT NOT NULL,
  type         TEXT NOT NULL,
  severity     TEXT NOT NULL,
  summary      TEXT NOT NULL,
  payload      TEXT NOT NULL CHECK (length(payload) <= 400),
  archived_at  TEXT NOT NULL
);

CREATE INDEX events_archive_workspace_ts ON events_archive (workspace_id, ts);

CREATE TABLE memory_health_snapshots (
  workspace_id  TEXT NOT NULL,
  -- '' is the workspace aggregate: a NULL in a primary key would not be unique in SQLite
  crew_id       TEXT NOT NULL DEFAULT '',
  snapshot_date TEXT NOT NULL,  -- YYYY-MM-DD, UTC
  freshness     REAL NOT NULL,
  coverage      REAL NOT NULL,
  coherence     REAL NOT NULL,
  efficiency    REAL NOT NULL,
  reachability  REAL NOT NULL,
  score         REAL NOT NULL,
  PRIMARY KEY (workspace_id, crew_id, snapshot_date)
)
"""


def m001_initial(conn: sqlite3.Connection) -> None:
    _run(conn, _M001_SQL)


_M002_SQL = """
CREATE INDEX memories_sparse_scope ON memories (
  workspace_id, seq, status, agent_id, crew_id, base_importance, resource_id, conversation_id
)
"""


def m002_sparse_scope_index(conn: sqlite3.Connection) -> None:
    """A covering index for the scope check of ``SqliteStore.search_sparse``.

    The sparse search looks up the memory of every FTS5 match it reads, to apply the
    workspace, scope and status filters in SQL. A ``memories`` row is a few hundred bytes,
    so those primary-key lookups land on a different page almost every time (~1.2 us each
    at 100k memories); this index holds only the filter columns (~50 bytes an entry) and
    makes the same lookups 2-2.5x cheaper. ``workspace_id`` leads so that one workspace's
    entries sit together in a database shared by several. Queries name it with
    ``INDEXED BY``, so its name is part of the schema contract."""
    _run(conn, _M002_SQL)


_M003_SQL = f"""
ALTER TABLE events ADD COLUMN episode_id TEXT;

CREATE INDEX events_pending_messages ON events (workspace_id, conversation_id, ts)
  WHERE type = 'message' AND episode_id IS NULL;

ALTER TABLE memories ADD COLUMN keys TEXT NOT NULL DEFAULT '';

ALTER TABLE memories ADD COLUMN content_hash TEXT;

ALTER TABLE memories ADD COLUMN stability REAL;

ALTER TABLE memories ADD COLUMN difficulty REAL;

ALTER TABLE memories ADD COLUMN last_reviewed_at TEXT;

ALTER TABLE memories ADD COLUMN consolidated_at TEXT;

CREATE INDEX memories_workspace_hash ON memories (workspace_id, content_hash)
  WHERE content_hash IS NOT NULL;

CREATE INDEX memories_workspace_type ON memories (workspace_id, type, ts);

DROP INDEX memories_sparse_scope;

CREATE INDEX memories_sparse_scope ON memories (
  workspace_id, seq, status, agent_id, crew_id, base_importance, resource_id, conversation_id,
  type
);

DROP TRIGGER memories_fts_ai;

DROP TRIGGER memories_fts_ad;

DROP TRIGGER memories_fts_au;

DROP TABLE memories_fts;

CREATE VIRTUAL TABLE memories_fts USING fts5 (
  content, keys, payload,
  content = 'memories', content_rowid = 'seq',
  tokenize = '{FTS_TOKENIZER}'
);

INSERT INTO memories_fts (memories_fts) VALUES ('rebuild');

CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories BEGIN
  INSERT INTO memories_fts (rowid, content, keys, payload)
    VALUES (new.seq, new.content, new.keys, new.payload);
END;

CREATE TRIGGER memories_fts_ad AFTER DELETE ON memories BEGIN
  INSERT INTO memories_fts (memories_fts, rowid, content, keys, payload)
    VALUES ('delete', old.seq, old.content, old.keys, old.payload);
END;

CREATE TRIGGER memories_fts_au AFTER UPDATE OF seq, content, keys, payload ON memories BEGIN
  INSERT INTO memories_fts (memories_fts, rowid, content, keys, payload)
    VALUES ('delete', old.seq, old.content, old.keys, old.payload);
  INSERT INTO memories_fts (rowid, content, keys, payload)
    VALUES (new.seq, new.content, new.keys, new.payload);
END
"""


def m003_conversations(conn: sqlite3.Connection) -> None:
    """Conversation memory, key expansion and memory state for upkeep.

    - ``events.episode_id``: the episode a message was segmented into; NULL while the
      message waits (``events_pending_messages`` finds those without scanning the journal).
    - ``memories.keys``: derived search keys (an episode's title and keyphrases, facts, the
      speaker and the date), indexed by FTS5 as a column of its own so bm25 can weigh them
      apart from the content. The FTS table is rebuilt with it.
    - ``memories.content_hash``: sha256 of an entry's normalised text, for seed 004's
      dedupe within a scope.
    - FSRS state (``stability``, ``difficulty``, ``last_reviewed_at``) and
      ``consolidated_at`` (seed 003), NULL until an episode or a review sets them.
    - ``memories_sparse_scope`` gains ``type``, so a search limited to some types still
      reads only the covering index."""
    _run(conn, _M003_SQL)


# -- memory upkeep ---------------------------------------------------------------------
_M004_SQL = """
CREATE TABLE memory_sources_v4 (
  memory_id TEXT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
  event_id  TEXT NOT NULL,
  PRIMARY KEY (memory_id, event_id)
);

INSERT INTO memory_sources_v4 (memory_id, event_id)
  SELECT memory_id, event_id FROM memory_sources ORDER BY rowid;

DROP TABLE memory_sources;

ALTER TABLE memory_sources_v4 RENAME TO memory_sources;

CREATE INDEX memory_sources_event ON memory_sources (event_id);

ALTER TABLE events_archive ADD COLUMN agent_id TEXT;

ALTER TABLE events_archive ADD COLUMN crew_id TEXT;

ALTER TABLE events_archive ADD COLUMN resource_id TEXT;

ALTER TABLE events_archive ADD COLUMN conversation_id TEXT;

CREATE TABLE memory_reviews (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  workspace_id    TEXT NOT NULL,
  agent_id        TEXT,
  crew_id         TEXT,
  conversation_id TEXT,
  query           TEXT NOT NULL,
  memory_ids      TEXT NOT NULL,               -- JSON array, best first
  cosines         TEXT NOT NULL DEFAULT '[]',  -- JSON array, null where no dense score
  recalled_at     TEXT NOT NULL,
  claimed_by      TEXT,
  claimed_until   TEXT,
  reviewed_at     TEXT,
  outcome         TEXT,                        -- rated | expired
  ratings         TEXT                         -- JSON object, memory id -> rating
);

CREATE INDEX memory_reviews_pending ON memory_reviews (workspace_id, id)
  WHERE reviewed_at IS NULL;

CREATE INDEX memory_reviews_recalled ON memory_reviews (workspace_id, recalled_at);

CREATE TABLE upkeep_leases (
  job         TEXT NOT NULL,
  scope       TEXT NOT NULL,  -- a workspace id, or '' for every workspace
  holder      TEXT NOT NULL,
  acquired_at TEXT NOT NULL,
  expires_at  TEXT NOT NULL,
  PRIMARY KEY (job, scope)
);

CREATE TABLE upkeep_runs (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  job         TEXT NOT NULL,
  scope       TEXT NOT NULL,
  holder      TEXT NOT NULL,
  started_at  TEXT NOT NULL,
  finished_at TEXT NOT NULL,
  status      TEXT NOT NULL CHECK (status IN ('ok', 'error', 'skipped')),
  detail      TEXT NOT NULL DEFAULT '{}'
);

CREATE INDEX upkeep_runs_job ON upkeep_runs (job, scope, status, finished_at);

CREATE TABLE memory_compactions (
  memory_id    TEXT PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
  survivor_id  TEXT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL,
  similarity   REAL NOT NULL,
  compacted_at TEXT NOT NULL
);

CREATE INDEX memory_compactions_survivor ON memory_compactions (survivor_id);

CREATE TABLE memory_nudges (
  workspace_id TEXT NOT NULL,
  agent_id     TEXT NOT NULL,
  session_id   TEXT NOT NULL,
  entries      INTEGER NOT NULL,
  nudged_at    TEXT NOT NULL,
  PRIMARY KEY (workspace_id, agent_id, session_id)
);

CREATE INDEX events_conversation_ts ON events (workspace_id, conversation_id, ts)
  WHERE conversation_id IS NOT NULL;

CREATE INDEX events_memory_updated ON events (workspace_id, agent_id, ts)
  WHERE type = 'memory.updated';

CREATE INDEX memories_unconsolidated ON memories (workspace_id, type)
  WHERE consolidated_at IS NULL AND status = 'active'
"""


def m004_upkeep(conn: sqlite3.Connection) -> None:
    """Memory upkeep: reviews, leases, compaction, archive, nudges.

    - ``memory_sources`` is rebuilt without its foreign key to ``events``: compaction moves
      aged journal rows to ``events_archive``, and the memories made from them must keep
      citing them. A source id now names an event in ``events`` *or* ``events_archive``;
      the store checks that on insert (``SqliteStore._check_sources``) instead of the
      key. (PostgreSQL: ``ALTER TABLE memory_sources DROP CONSTRAINT ...``.) The key to
      ``memories`` stays. Rows are copied in rowid order, the order sources are read in.
    - ``events_archive`` gains the scope columns (agent, crew, resource, conversation) so
      archived rows stay inspectable per agent.
    - ``memory_reviews``: one row per recall (seed 003's pending review): the memories
      returned, their dense cosines (for the health score's efficiency), the query and
      the scope; claimed by a review job (``claimed_by``/``claimed_until``, the portable
      twin of ``FOR UPDATE SKIP LOCKED``) and closed with ``reviewed_at`` and an outcome.
    - ``upkeep_leases``: one row per (job, scope) held until ``expires_at``; a second
      runner of the same job skips instead of doing the work twice. ``upkeep_runs`` logs
      every run (the scheduler reads the last successful one).
    - ``memory_compactions``: which memory a compacted one was merged into, and how alike
      they were (the loser stays in ``memories`` with status ``compacted``).
    - ``memory_nudges``: the sessions a memory nudge was already given in (once each).
    - Indexes for the follow-up messages of a conversation, an agent's last
      ``memory.updated`` event and the memories waiting for consolidation."""
    _run(conn, _M004_SQL)


# -- the service: keys, markdown import state ------------------------------------------
_M005_SQL = """
CREATE TABLE api_keys (
  id           TEXT PRIMARY KEY,
  key_hash     TEXT NOT NULL UNIQUE,
  workspace_id TEXT NOT NULL,
  role         TEXT NOT NULL CHECK (role IN ('agent', 'lead', 'admin')),
  agent_id     TEXT,
  crew_id      TEXT,
  label        TEXT NOT NULL DEFAULT '',
  created_at   TEXT NOT NULL,
  revoked_at   TEXT
);

CREATE INDEX api_keys_workspace ON api_keys (workspace_id);

CREATE TABLE import_files (
  root         TEXT NOT NULL,
  path         TEXT NOT NULL,
  mtime_ns     INTEGER NOT NULL,
  size         INTEGER NOT NULL,
  sha256       TEXT NOT NULL,
  workspace_id TEXT,
  memory_id    TEXT,
  imported_at  TEXT NOT NULL,
  PRIMARY KEY (root, path)
);

CREATE INDEX import_files_memory ON import_files (memory_id)
"""


def m005_service(conn: sqlite3.Connection) -> None:
    """The service's tables (m004 belongs to memory upkeep).

    - ``api_keys``: HTTP API keys, stored only as the sha256 of the secret. A key binds
      its holder to one workspace and a role (agent -> scope own, lead -> crew_shared,
      admin -> the whole workspace), optionally to one agent or crew. Revoked keys stay
      listed with ``revoked_at`` set.
    - ``import_files``: change detection for ``episodic import`` (seed 001's file_meta):
      one row per markdown file already imported from a root, with the mtime, size and
      sha256 it had, and the memory it became; a re-run reads only files whose mtime or
      size moved and rewrites only those whose hash changed."""
    _run(conn, _M005_SQL)


# -- keyword search of the journal itself ----------------------------------------------
_M006_SQL = f"""
CREATE VIEW journal_fts_rows (seq, summary, payload) AS
  SELECT rowid, summary, payload FROM events
  UNION ALL
  SELECT -rowid, summary, payload FROM events_archive;

CREATE VIRTUAL TABLE journal_fts USING fts5 (
  summary, payload,
  content = 'journal_fts_rows', content_rowid = 'seq',
  tokenize = '{FTS_TOKENIZER}'
);

INSERT INTO journal_fts (journal_fts) VALUES ('rebuild');

CREATE TRIGGER events_journal_fts_ai AFTER INSERT ON events BEGIN
  INSERT INTO journal_fts (rowid, summary, payload)
    VALUES (new.rowid, new.summary, new.payload);
END;

CREATE TRIGGER events_journal_fts_ad AFTER DELETE ON events BEGIN
  INSERT INTO journal_fts (journal_fts, rowid, summary, payload)
    VALUES ('delete', old.rowid, old.summary, old.payload);
END;

CREATE TRIGGER events_journal_fts_au AFTER UPDATE OF summary, payload ON events BEGIN
  INSERT INTO journal_fts (journal_fts, rowid, summary, payload)
    VALUES ('delete', old.rowid, old.summary, old.payload);
  INSERT INTO journal_fts (rowid, summary, payload)
    VALUES (new.rowid, new.summary, new.payload);
END;

CREATE TRIGGER events_archive_journal_fts_ai AFTER INSERT ON events_archive BEGIN
  INSERT INTO journal_fts (rowid, summary, payload)
    VALUES (-new.rowid, new.summary, new.payload);
END;

CREATE TRIGGER events_archive_journal_fts_ad AFTER DELETE ON events_archive BEGIN
  INSERT INTO journal_fts (journal_fts, rowid, summary, payload)
    VALUES ('delete', -old.rowid, old.summary, old.payload);
END;

CREATE TRIGGER events_archive_journal_fts_au AFTER UPDATE OF summary, payload
ON events_archive BEGIN
  INSERT INTO journal_fts (journal_fts, rowid, summary, payload)
    VALUES ('delete', -old.rowid, old.summary, old.payload);
  INSERT INTO journal_fts (rowid, summary, payload)
    VALUES (-new.rowid, new.summary, new.payload);
END
"""


def m006_journal_search(conn: sqlite3.Connection) -> None:
    """Keyword search of the journal itself (seed 000's ``?q=`` on its journal): every
    event, admitted as a memory or not, and every archived one.

    - ``journal_fts``: one FTS5 index over the summary and payload of both ``events``
      and ``events_archive``, so that a live and an archived row are ranked by the same
      BM25 statistics. Its external content is the view ``journal_fts_rows``: a live row
      under its rowid, an archived one under minus its rowid. Triggers on both tables
      keep it in step (archiving is a delete from one and an insert into the other, so
      a row's searchability moves with it); ``rebuild`` indexes what is already stored.
    - The two tables have no ``INTEGER PRIMARY KEY`` (their key is the text id), so the
      index points at their implicit rowids, which SQLite documents as possibly renumbered
      by ``VACUUM``. SQLite's VACUUM copies rows with their rowids (checked on 3.40 with
      gaps left by deletes), episodic never runs it, and ``doctor --deep`` counts rows
      missing from the index or indexed under no row (``journal.mirror``), which a
      renumbering would show; the fix is ``rebuild``. Rebuilding both tables around a
      new key would rewrite the whole journal and part from PostgreSQL's schema.
    - PostgreSQL: a generated ``tsv`` column on each table (summary weight A, payload
      B, diacritics folded as for memories) with a GIN index; adding it backfills."""
    _run(conn, _M006_SQL)


# -- seed 001's reinforcement, counted once per session -------------------------------
_M007_SQL = """
ALTER TABLE memory_reviews ADD COLUMN reinforced_at TEXT;

UPDATE memory_reviews SET reinforced_at = recalled_at;

CREATE INDEX memory_reviews_unreinforced ON memory_reviews (workspace_id, conversation_id)
  WHERE reinforced_at IS NULL AND conversation_id IS NOT NULL
"""


def m007_reinforcement(conn: sqlite3.Connection) -> None:
    """``memory_reviews.reinforced_at``: when the end of the recall's session (its
    conversation) counted it for seed 001's reinforcement (``reinforce_session``); NULL
    while the session is open. Recalls recorded before this step count as done: an
    upgrade does not reinforce the past."""
    _run(conn, _M007_SQL)


# -- consolidation: memories looked at and left unclustered ---------------------------
_M008_SQL = """
ALTER TABLE memories ADD COLUMN unclustered_at TEXT;

DROP INDEX memories_unconsolidated;

CREATE INDEX memories_consolidation_backlog ON memories (workspace_id, type)
  WHERE consolidated_at IS NULL AND unclustered_at IS NULL AND status = 'active'
"""


def m008_unclustered(conn: sqlite3.Connection) -> None:
    """Consolidation's backlog counts only what no run has looked at yet.

    - ``memories.unclustered_at``: when a consolidation last looked at this memory and
      found it no cluster. It stays unconsolidated (``consolidated_at`` NULL) and every
      later run still offers it to the clusters of newer memories, but it no longer counts
      towards the trigger: without this, a backlog of memories alike to nothing fired a
      consolidation on every check. Storing it in a cluster clears it.
    - ``memories_consolidation_backlog`` replaces ``memories_unconsolidated``: the
      trigger's count reads only the memories no run has looked at."""
    _run(conn, _M008_SQL)


# -- earlier versions of a memory an edit replaced ------------------------------------
_M009_SQL = """
CREATE TABLE memory_history (
  seq          INTEGER PRIMARY KEY AUTOINCREMENT,
  memory_id    TEXT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL,
  content      TEXT NOT NULL,
  importance   REAL NOT NULL,
  payload      TEXT NOT NULL,
  replaced_at  TEXT NOT NULL,
  replaced_by  TEXT NOT NULL
);

CREATE INDEX memory_history_memory ON memory_history (memory_id, seq)
"""


def m009_memory_history(conn: sqlite3.Connection) -> None:
    """``memory_history``: the versions of a memory that an edit (``update``) replaced,
    one row each: the text, importance and payload it had, when it was replaced and by
    whom (an API key's id, ``python`` or ``cli``). The row cascades with its memory, so
    forgetting the memory forgets what it used to say too."""
    _run(conn, _M009_SQL)


_M010_SQL = """
ALTER TABLE memories ADD COLUMN valid_from TEXT;

ALTER TABLE memories ADD COLUMN valid_to TEXT;

ALTER TABLE memories ADD COLUMN superseded_by TEXT;

ALTER TABLE memories ADD COLUMN supersession_pending INTEGER NOT NULL DEFAULT 1;

UPDATE memories SET supersession_pending = 0;

CREATE INDEX memories_supersession_pending ON memories (seq) WHERE supersession_pending = 1;

CREATE TABLE supersessions (
  old_id       TEXT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
  new_id       TEXT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL,
  decided_by   TEXT NOT NULL,
  reason       TEXT NOT NULL,
  decided_at   TEXT NOT NULL,
  PRIMARY KEY (old_id, new_id)
);

CREATE INDEX supersessions_new ON supersessions (new_id)
"""


def m010_validity(conn: sqlite3.Connection) -> None:
    """Validity in time: ``valid_from`` (NULL: the memory's ``ts``) and ``valid_to``
    (NULL: still true) on every memory, ``superseded_by`` on one a newer memory replaced,
    and ``supersessions``, one row per replacement with who decided it and why. A row
    cascades with either memory, so forgetting one forgets the link.
    ``supersession_pending`` marks a memory not yet checked for what it may replace (every
    new row; the memories already stored are not checked: what they said stood).

    The status check gains ``superseded``. SQLite cannot alter a CHECK constraint, and
    rebuilding ``memories`` would cascade through every table that references it, so
    the constraint's text is edited in the schema table, the procedure SQLite documents
    for loosening a constraint (every stored row passes the looser check), with the
    schema version bumped so other connections re-read it."""
    _run(conn, _M010_SQL)
    (sql,) = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'memories'"
    ).fetchone()
    if sql.count(_STATUS_CHECK) != 1:
        raise sqlite3.DatabaseError("memories has an unexpected status check; not migrating")
    (version,) = conn.execute("PRAGMA schema_version").fetchone()
    conn.execute("PRAGMA writable_schema = ON")
    try:
        conn.execute(
            "UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = 'memories'",
            (sql.replace(_STATUS_CHECK, _STATUS_CHECK_V10),),
        )
        conn.execute(f"PRAGMA schema_version = {int(version) + 1}")
    finally:
        conn.execute("PRAGMA writable_schema = OFF")


def m011_memories_fillfactor(conn: sqlite3.Connection) -> None:
    """Nothing on SQLite, which has no fillfactor (the step exists so both backends
    number their schema alike; see ``_PG_EXTRAS[11]``)."""


_M012_SQL = """
CREATE INDEX events_episode ON events (episode_id) WHERE episode_id IS NOT NULL;

CREATE INDEX memories_superseded_by ON memories (superseded_by)
  WHERE superseded_by IS NOT NULL
"""


def m012_forget_lookups(conn: sqlite3.Connection) -> None:
    """Two small indexes a forget looks up through: ``events_episode``, the messages of
    an episode (those that stay get their own search keys back), and
    ``memories_superseded_by``, the memories a forgotten one had replaced (they are valid
    again). Both hold only the rows that have the column set; without them each lookup
    read every event of the workspace, or every memory of the file."""
    _run(conn, _M012_SQL)


# -- the operator's page's sign-ins ------------------------------------------------------
_M013_SQL = """
CREATE TABLE ui_sessions (
  session_hash TEXT PRIMARY KEY,
  key_hash     TEXT NOT NULL,
  created_at   TEXT NOT NULL,
  expires_at   TEXT NOT NULL
);

CREATE INDEX ui_sessions_expires ON ui_sessions (expires_at)
"""


def m013_ui_sessions(conn: sqlite3.Connection) -> None:
    """``ui_sessions``: who is signed in to the operator's page. The browser's cookie
    holds a random session id, never the API key; the row keeps the sha256 of that id
    and of the key it stands for (so revoking the key ends the session too), with when
    it expires. Signing out deletes the row. A table, not the server's memory, so every
    process of ``serve --workers N`` knows the same sign-ins."""
    _run(conn, _M013_SQL)


_M014_SQL = """
ALTER TABLE supersessions ADD COLUMN reverted_at TEXT;

ALTER TABLE supersessions ADD COLUMN reverted_by TEXT
"""


def m014_reverted_supersessions(conn: sqlite3.Connection) -> None:
    """A supersession can be undone (``memory restore``): its link stays, with when and
    by whom it was reverted, so the memory it named is active again and detection never
    makes the same replacement twice. The link still cascades with either memory, so
    forgetting one forgets the decision too."""
    _run(conn, _M014_SQL)


_M015_SQL = """
CREATE TRIGGER memories_learning_type_au
AFTER UPDATE OF payload ON memories
WHEN old.has_vector = 1 AND (CASE WHEN json_valid(old.payload)
                                  THEN json_extract(old.payload, '$.learning_type') END)
                        IS NOT (CASE WHEN json_valid(new.payload)
                                  THEN json_extract(new.payload, '$.learning_type') END)
BEGIN
  INSERT INTO vector_generations (workspace_id, generation) VALUES (new.workspace_id, 1)
    ON CONFLICT (workspace_id) DO UPDATE SET generation = generation + 1;
END
"""


def m015_learning_type_filter(conn: sqlite3.Connection) -> None:
    """Recall filters learnings by their learning type (seed 001's ``retrieve
    (learning_type)``), which the in-process vector index holds per row: a changed
    ``payload.learning_type`` of a vectored memory (an entry's type edited in its
    markdown file) makes readers reload it, as a changed visibility column does. Nothing
    on PostgreSQL, whose vector search reads the payload in SQL."""
    _run(conn, _M015_SQL)


_M016_SQL = """
CREATE TABLE memory_passages (
  memory_id    TEXT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
  n            INTEGER NOT NULL,
  workspace_id TEXT NOT NULL,
  start_char   INTEGER NOT NULL,
  stop_char    INTEGER NOT NULL,
  vector       BLOB NOT NULL,
  PRIMARY KEY (memory_id, n)
);

CREATE INDEX memory_passages_workspace ON memory_passages (workspace_id);

CREATE TRIGGER memory_passages_ad AFTER DELETE ON memory_passages BEGIN
  INSERT INTO vector_generations (workspace_id, generation) VALUES (old.workspace_id, 1)
    ON CONFLICT (workspace_id) DO UPDATE SET generation = generation + 1;
END;

CREATE TRIGGER memory_vectors_passages_ad AFTER DELETE ON memory_vectors BEGIN
  DELETE FROM memory_passages WHERE memory_id = old.memory_id;
END
"""


def m016_passages(conn: sqlite3.Connection) -> None:
    """``memory_passages``: the vectors of a long memory's later passages (its own vector
    reads only its first ~1,000 characters), with where each passage lies in its content.
    They live and die with the memory's vector: deleting that deletes them, and deleting
    any bumps the workspace's generation so the in-process index reloads."""
    _run(conn, _M016_SQL)


# A long memory's passages in SQLite's keyword index: row ``seq << TEXT_PASSAGE_SHIFT | n``
# for its ``n``-th passage, so a passage's memory is ``rowid >> TEXT_PASSAGE_SHIFT`` and the
# rows of one memory are one rowid range. 2**16 passages reach past 40 million characters.
TEXT_PASSAGE_SHIFT = 16

_M017_SQL = f"""
CREATE VIRTUAL TABLE passages_fts USING fts5 (
  content, start_char UNINDEXED, stop_char UNINDEXED,
  tokenize = '{FTS_TOKENIZER}'
);

CREATE TRIGGER memories_passages_fts_ad AFTER DELETE ON memories
  WHEN length(old.content) > {PASSAGE_CHARS} BEGIN
  DELETE FROM passages_fts WHERE rowid >= old.seq << {TEXT_PASSAGE_SHIFT}
    AND rowid < (old.seq + 1) << {TEXT_PASSAGE_SHIFT};
END;

CREATE TRIGGER memories_passages_fts_au AFTER UPDATE OF content ON memories
  WHEN length(old.content) > {PASSAGE_CHARS} AND old.content IS NOT new.content BEGIN
  DELETE FROM passages_fts WHERE rowid >= old.seq << {TEXT_PASSAGE_SHIFT}
    AND rowid < (old.seq + 1) << {TEXT_PASSAGE_SHIFT};
END
"""

_INSERT_TEXT_PASSAGE = (
    "INSERT INTO passages_fts (rowid, content, start_char, stop_char) VALUES (?, ?, ?, ?)"
)


def text_passage_rows(seq: int, content: str) -> list[tuple[int, str, int, int]]:
    """The keyword index's rows of a memory (its ``seq`` and ``content``): one per
    passage when it is longer than one, else none (its own row covers it)."""
    if len(content) <= PASSAGE_CHARS:
        return []
    spans = passage_spans(content)[: 1 << TEXT_PASSAGE_SHIFT]
    return [
        ((seq << TEXT_PASSAGE_SHIFT) | s.n, content[s.start : s.stop], s.start, s.stop)
        for s in spans
    ]


def index_text_passages(conn: sqlite3.Connection, rows: Iterable[tuple[int, str]]) -> int:
    """Write the passages of memories ``(seq, content)`` into ``passages_fts``, replacing
    any they had; returns how many passage rows were written."""
    written = 0
    shift = TEXT_PASSAGE_SHIFT
    for seq, content in rows:
        if len(content) <= PASSAGE_CHARS:
            continue
        conn.execute(
            "DELETE FROM passages_fts WHERE rowid >= ? AND rowid < ?",
            (seq << shift, (seq + 1) << shift),
        )
        made = text_passage_rows(seq, content)
        conn.executemany(_INSERT_TEXT_PASSAGE, made)
        written += len(made)
    return written


def m017_text_passages(conn: sqlite3.Connection) -> None:
    """``passages_fts``: a long memory's passages in a keyword index of their own, so the
    keyword leg reads it passage by passage as the dense leg does (its own row in
    ``memories_fts`` holds the whole text, where BM25's length normalisation buries a
    fact in the middle). The store writes a memory's passages with it; triggers drop them
    when the memory goes or its text changes. Existing long memories are indexed now."""
    _run(conn, _M017_SQL)
    index_text_passages(
        conn,
        conn.execute(f"SELECT seq, content FROM memories WHERE length(content) > {PASSAGE_CHARS}"),
    )


_M018_SQL = """
CREATE TABLE memory_lengths (
  memory_id    TEXT PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE ON UPDATE CASCADE,
  workspace_id TEXT NOT NULL,
  chars        INTEGER NOT NULL
);

CREATE INDEX memory_lengths_workspace ON memory_lengths (workspace_id, chars);

CREATE TRIGGER memory_lengths_ai AFTER INSERT ON memories BEGIN
  INSERT OR REPLACE INTO memory_lengths (memory_id, workspace_id, chars)
    VALUES (new.id, new.workspace_id, length(new.content));
END;

CREATE TRIGGER memory_lengths_au AFTER UPDATE OF id, workspace_id, content ON memories BEGIN
  INSERT OR REPLACE INTO memory_lengths (memory_id, workspace_id, chars)
    VALUES (new.id, new.workspace_id, length(new.content));
END
"""


def m018_memory_lengths(conn: sqlite3.Connection) -> None:
    """``memory_lengths``: each memory's length in characters, kept by triggers, so that
    a recall ranks its candidates with the length prior from a small row each instead of
    reading every candidate's whole text (a long memory's row spans overflow pages), and
    knows from one index lookup whether its workspace holds any long memory at all.
    Content never holds a NUL (refused at input, as PostgreSQL cannot store one), so
    SQLite's ``length`` counts what Python's ``len`` does. Existing memories are
    measured now."""
    _run(conn, _M018_SQL)
    conn.execute(
        "INSERT INTO memory_lengths (memory_id, workspace_id, chars) "
        "SELECT id, workspace_id, length(content) FROM memories"
    )


_M019_SQL = """
CREATE TABLE partial_changes (
  old_id       TEXT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
  new_id       TEXT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
  workspace_id TEXT NOT NULL,
  decided_by   TEXT NOT NULL,
  reason       TEXT NOT NULL,
  decided_at   TEXT NOT NULL,
  reverted_at  TEXT,
  reverted_by  TEXT,
  PRIMARY KEY (old_id, new_id)
);

CREATE INDEX partial_changes_new ON partial_changes (new_id)
"""


def m019_partial_changes(conn: sqlite3.Connection) -> None:
    """``partial_changes``: a newer memory that changes one sentence of an older one
    which says more that stays true (the supersession rule's ``says-more``), one row per
    pair with who decided it and why. The older stays active; recall ranks the newer just
    above it and marks it earlier. Undone (``memory restore`` of the older), the row stays
    with ``reverted_at``/``reverted_by`` so detection never links the pair again. A row
    cascades with either memory, so forgetting one forgets the link."""
    _run(conn, _M019_SQL)


_STATUS_CHECK = "status IN ('active', 'retired', 'compacted')"
_STATUS_CHECK_V10 = "status IN ('active', 'retired', 'compacted', 'superseded')"


MIGRATIONS: tuple[tuple[int, str, Migration], ...] = (
    (1, "initial", m001_initial),
    (2, "sparse_scope_index", m002_sparse_scope_index),
    (3, "conversations", m003_conversations),
    (4, "upkeep", m004_upkeep),
    (5, "service", m005_service),
    (6, "journal_search", m006_journal_search),
    (7, "reinforcement", m007_reinforcement),
    (8, "unclustered", m008_unclustered),
    (9, "memory_history", m009_memory_history),
    (10, "validity", m010_validity),
    (11, "memories_fillfactor", m011_memories_fillfactor),
    (12, "forget_lookups", m012_forget_lookups),
    (13, "ui_sessions", m013_ui_sessions),
    (14, "reverted_supersessions", m014_reverted_supersessions),
    (15, "learning_type_filter", m015_learning_type_filter),
    (16, "passages", m016_passages),
    (17, "text_passages", m017_text_passages),
    (18, "memory_lengths", m018_memory_lengths),
    (19, "partial_changes", m019_partial_changes),
)

LATEST_VERSION = MIGRATIONS[-1][0]


def _ensure_ledger(conn: sqlite3.Connection) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )


def current_version(conn: sqlite3.Connection) -> int:
    """The highest applied version; 0 for a database no migration has touched."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone()
    if exists is None:
        return 0
    row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
    return int(row[0] or 0)


def missing_versions(applied: Iterable[int]) -> list[int]:
    """The known steps a database has not applied. Branches number their steps apart, so
    a database at the highest version may still lack a lower one: readers that cannot
    migrate check this, not the highest version."""
    have = set(applied)
    return [version for version, _, _ in MIGRATIONS if version not in have]


def applied_versions(conn: sqlite3.Connection) -> list[int]:
    """The versions a SQLite database has applied (none before any migration)."""
    if current_version(conn) == 0:
        return []
    return [int(r[0]) for r in conn.execute("SELECT version FROM schema_migrations")]


def migrate(conn: sqlite3.Connection) -> list[int]:
    """Apply every pending migration in order; returns the versions applied now.

    ``conn`` must be in autocommit mode (``isolation_level=None``): this function owns the
    transactions."""
    applied: list[int] = []
    for version, name, step in MIGRATIONS:
        conn.execute("BEGIN IMMEDIATE")
        try:
            _ensure_ledger(conn)
            # Re-read inside the write lock: another process may have just applied it.
            # By membership, not by the highest version: branches number their steps
            # apart (m005 may land before m004), and a database that has 5 still needs 4.
            if conn.execute(
                "SELECT 1 FROM schema_migrations WHERE version = ?", (version,)
            ).fetchone():
                conn.execute("COMMIT")
                continue
            step(conn)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (version, name, datetime.now(UTC).strftime(TS_FORMAT)),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        applied.append(version)
    return applied


# -- PostgreSQL: the same migrations, rendered for the server ---------------------------
# The SQLite steps above are the one source of truth for the schema. A PostgreSQL database
# applies the same numbered steps: each statement translated (types, identity keys), the
# SQLite-only machinery left out (FTS5 tables and the triggers that feed them, the
# in-process matrix's generation triggers), and a few statements of its own per version
# (pgvector, tsvector + GIN, the has_vector trigger). tests/test_store_schema.py holds the
# two to the same tables and columns.
#
# Times stay fixed-format UTC text on both backends (TS_FORMAT sorts chronologically), and
# text columns compare bytewise (COLLATE "C", SQLite's BINARY), so every query orders rows
# the same way on both and `episodic migrate` copies rows value for value.

_SQLITE_ONLY = re.compile(
    r"^\s*(CREATE VIRTUAL TABLE|CREATE TRIGGER|DROP TRIGGER|DROP TABLE memories_fts"
    r"|INSERT INTO memories_fts|CREATE VIEW journal_fts_rows|INSERT INTO journal_fts)\b",
    re.IGNORECASE,
)
_PG_TYPES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"\bINTEGER PRIMARY KEY( AUTOINCREMENT)?"),
        "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
    ),
    (re.compile(r"\bINTEGER\b"), "BIGINT"),
    (re.compile(r"\bREAL\b"), "DOUBLE PRECISION"),
    (re.compile(r"\bBLOB\b"), "BYTEA"),
    (re.compile(r"\bTEXT\b"), 'TEXT COLLATE "C"'),
    (re.compile(r"\)\s*WITHOUT ROWID"), ")"),
    (re.compile(r"\s+ORDER BY rowid"), ""),
)

# What the text-search leg indexes, and how ts_rank weighs it: content is weight A,
# the JSON payload B, derived keys D (see the store's ranking weights).
_PG_TSV_V1 = (
    "ALTER TABLE memories ADD COLUMN tsv tsvector GENERATED ALWAYS AS ("
    "setweight(to_tsvector('english', content), 'A') || "
    "setweight(to_tsvector('english', payload), 'B')) STORED"
)
_PG_TSV_V3 = (
    "ALTER TABLE memories ADD COLUMN tsv tsvector GENERATED ALWAYS AS ("
    "setweight(to_tsvector('english', episodic_fold(content)), 'A') || "
    "setweight(to_tsvector('english', episodic_fold(payload)), 'B') || "
    "setweight(to_tsvector('english', episodic_fold(keys)), 'D')) STORED"
)

# The journal's search text (migration 6): summary weight A, payload B, as a memory's
# content and payload.
_PG_JOURNAL_TSV = (
    "ALTER TABLE {table} ADD COLUMN tsv tsvector GENERATED ALWAYS AS ("
    "setweight(to_tsvector('english', episodic_fold(summary)), 'A') || "
    "setweight(to_tsvector('english', episodic_fold(payload)), 'B')) STORED"
)

_PG_PASSAGE_TSV = "setweight(to_tsvector('english', episodic_fold(s.body)), 'A')"
# A regular expression repeats at most 255 times: the pieces a long text is cut into.
_PG_PIECE = 250
# A long memory's passages on PostgreSQL (migration 17): ``episodic_passage_spans`` cuts
# a text as ``episodic.scoring.passages.passage_spans`` does (a test holds the two to the
# same spans), and a trigger keeps ``memory_text_passages`` in step with ``memories``:
# one row per passage of a memory longer than one, with its tsvector (weight A, as the
# memory's own content).


def _pg_piece(a: str, b: str) -> str:
    """SQL for characters [a, b) of the text ``episodic_passage_spans`` holds as
    ``parts``, pieces of ``_PG_PIECE`` characters."""
    first, last = f"({a}) / {_PG_PIECE} + 1", f"({b} - 1) / {_PG_PIECE} + 1"
    whole = f"array_to_string(parts[{first} : {last}], '')"
    return f"substr({whole}, ({a}) % {_PG_PIECE} + 1, {b} - ({a}))"


_PG_SNAP_STOP = f"least(e, nxt + {PASSAGE_SNAP})"

_PG_PASSAGE_SPANS = f"""CREATE FUNCTION episodic_passage_spans(content text)
RETURNS TABLE (n int, start_char int, stop_char int, body text)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT AS $$
DECLARE
  total int := char_length(content);
  -- The text as pieces of {_PG_PIECE} characters, cut in one pass: substr on the whole
  -- of a long text counts characters from its start at every call.
  parts text[];
  s int := 0;
  e int;
  lo int;
  w text;
  p int;
  nxt int;
  k int := 0;
BEGIN
  IF total <= {PASSAGE_CHARS} THEN
    n := 0; start_char := 0; stop_char := total; body := content; RETURN NEXT; RETURN;
  END IF;
  parts := ARRAY(SELECT m[1] FROM regexp_matches(content, '(.{{1,{_PG_PIECE}}})', 'g') AS m);
  LOOP
    e := least(s + {PASSAGE_CHARS}, total);
    IF e < total THEN
      lo := greatest(s + 1, e - {PASSAGE_SNAP});
      w := {_pg_piece("lo", "e")};
      p := strpos(reverse(w), E'\\n');
      IF p = 0 THEN p := strpos(reverse(w), ' '); END IF;
      IF p > 0 THEN e := lo + char_length(w) - p + 1; END IF;
    END IF;
    n := k; start_char := s; stop_char := e;
    body := {_pg_piece("s", "e")};
    RETURN NEXT;
    k := k + 1;
    IF e >= total THEN RETURN; END IF;
    nxt := e - {PASSAGE_OVERLAP};
    IF nxt > 0 AND {_pg_piece("nxt - 1", "nxt")} !~ '^\\s$' THEN
      w := substring({_pg_piece("nxt", _PG_SNAP_STOP)}
        from '^\\S*\\s');
      IF w IS NOT NULL THEN nxt := nxt + char_length(w); END IF;
    END IF;
    IF nxt > s THEN s := nxt; ELSE s := e; END IF;
  END LOOP;
END $$"""
_PG_TEXT_PASSAGES_SYNC = f"""CREATE FUNCTION episodic_text_passages() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    IF NEW.content IS NOT DISTINCT FROM OLD.content
       AND NEW.workspace_id IS NOT DISTINCT FROM OLD.workspace_id THEN
      RETURN NEW;
    END IF;
    DELETE FROM memory_text_passages WHERE memory_id = OLD.id;
  END IF;
  IF char_length(NEW.content) > {PASSAGE_CHARS} THEN
    INSERT INTO memory_text_passages (memory_id, n, workspace_id, start_char, stop_char, tsv)
    SELECT NEW.id, s.n, NEW.workspace_id, s.start_char, s.stop_char,
      {_PG_PASSAGE_TSV}
    FROM episodic_passage_spans(NEW.content) s;
  END IF;
  RETURN NEW;
END $$"""

# Every long memory's passages (migration 17 and a reindex).
PG_TEXT_PASSAGES_BACKFILL = (
    "INSERT INTO memory_text_passages (memory_id, n, workspace_id, start_char, stop_char,"
    " tsv) SELECT m.id, s.n, m.workspace_id, s.start_char, s.stop_char, "
    + _PG_PASSAGE_TSV
    + " FROM memories m CROSS JOIN LATERAL episodic_passage_spans(m.content) s"
    f" WHERE char_length(m.content) > {PASSAGE_CHARS}"
)

_PG_EXTRAS: dict[int, tuple[str, ...]] = {
    18: (
        """CREATE FUNCTION episodic_memory_length() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO memory_lengths (memory_id, workspace_id, chars)
    VALUES (NEW.id, NEW.workspace_id, char_length(NEW.content))
    ON CONFLICT (memory_id) DO UPDATE
    SET workspace_id = EXCLUDED.workspace_id, chars = EXCLUDED.chars;
  RETURN NEW;
END $$""",
        "CREATE TRIGGER memories_length AFTER INSERT OR UPDATE OF id, workspace_id, content "
        "ON memories FOR EACH ROW EXECUTE FUNCTION episodic_memory_length()",
        "INSERT INTO memory_lengths (memory_id, workspace_id, chars) "
        "SELECT id, workspace_id, char_length(content) FROM memories",
    ),
    17: (
        'CREATE TABLE memory_text_passages (memory_id TEXT COLLATE "C" NOT NULL'
        " REFERENCES memories (id) ON DELETE CASCADE, n BIGINT NOT NULL,"
        ' workspace_id TEXT COLLATE "C" NOT NULL, start_char BIGINT NOT NULL,'
        " stop_char BIGINT NOT NULL, tsv tsvector NOT NULL, PRIMARY KEY (memory_id, n))",
        "CREATE INDEX memory_text_passages_tsv ON memory_text_passages USING GIN (tsv)",
        "CREATE INDEX memory_text_passages_workspace ON memory_text_passages (workspace_id)",
        _PG_PASSAGE_SPANS,
        _PG_TEXT_PASSAGES_SYNC,
        "CREATE TRIGGER memories_text_passages AFTER INSERT OR UPDATE OF content, workspace_id"
        " ON memories FOR EACH ROW EXECUTE FUNCTION episodic_text_passages()",
        PG_TEXT_PASSAGES_BACKFILL,
    ),
    16: (
        "ALTER TABLE memory_passages ALTER COLUMN vector TYPE vector USING NULL",
        """CREATE FUNCTION episodic_passages_drop() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM memory_passages WHERE memory_id = OLD.memory_id;
  RETURN OLD;
END $$""",
        "CREATE TRIGGER memory_vectors_passages AFTER DELETE ON memory_vectors "
        "FOR EACH ROW EXECUTE FUNCTION episodic_passages_drop()",
    ),
    11: (
        # Every recall updates the rows it returns (reference counts). With full pages
        # the new row version lands on another page and goes into all of the table's
        # indexes, the GIN one included; room on the page keeps the update there and
        # out of the indexes (a HOT update). Measured at 1M memories, 5 rows marked:
        # 5.9 -> 1.2 ms p50. It applies to pages written from now on (`VACUUM FULL
        # memories` rewrites the rest, locking the table meanwhile).
        "ALTER TABLE memories SET (fillfactor = 90)",
    ),
    10: (
        "ALTER TABLE memories DROP CONSTRAINT memories_status_check",
        f"ALTER TABLE memories ADD CONSTRAINT memories_status_check CHECK ({_STATUS_CHECK_V10})",
    ),
    1: (
        # The column takes its dimension (vector(dim)) and its HNSW index when the first
        # vectors arrive: the model, hence the dimension, is not known before.
        "ALTER TABLE memory_vectors ALTER COLUMN vector TYPE vector USING NULL",
        """CREATE FUNCTION episodic_vector_flag() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    UPDATE memories SET has_vector = 1 WHERE id = NEW.memory_id;
    RETURN NEW;
  END IF;
  UPDATE memories SET has_vector = 0 WHERE id = OLD.memory_id;
  RETURN OLD;
END $$""",
        "CREATE TRIGGER memory_vectors_flag AFTER INSERT OR DELETE ON memory_vectors "
        "FOR EACH ROW EXECUTE FUNCTION episodic_vector_flag()",
        _PG_TSV_V1,
        "CREATE INDEX memories_tsv ON memories USING GIN (tsv)",
        # SQLite reads a memory's sources in rowid order; this is that order here.
        "ALTER TABLE memory_sources ADD COLUMN seq BIGINT GENERATED BY DEFAULT AS IDENTITY",
    ),
    3: (
        "ALTER TABLE memories DROP COLUMN tsv",
        # FTS5's unicode61 removes diacritics; this does the same for the combining marks
        # U+0300-U+036F (pgserver ships no unaccent; the store folds query words alike).
        "CREATE FUNCTION episodic_fold(text) RETURNS text LANGUAGE sql IMMUTABLE "
        "PARALLEL SAFE STRICT RETURN normalize(regexp_replace(normalize($1, NFD), "
        "'[\\u0300-\\u036f]', '', 'g'), NFC)",
        _PG_TSV_V3,
        "CREATE INDEX memories_tsv ON memories USING GIN (tsv)",
    ),
    # m004 rebuilt memory_sources (dropping its foreign key to events).
    4: (
        "ALTER TABLE memory_sources ADD COLUMN seq BIGINT GENERATED BY DEFAULT AS IDENTITY",
        # Upkeep reads a few keys of stored JSON text. A payload may hold "\u0000", which
        # jsonb refuses: such a row reads as NULL instead of failing the whole query.
        """CREATE FUNCTION episodic_jsonb(text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE
PARALLEL SAFE STRICT AS $$
BEGIN
  RETURN $1::jsonb;
EXCEPTION WHEN others THEN
  RETURN NULL;
END $$""",
    ),
    6: (
        _PG_JOURNAL_TSV.format(table="events"),
        "CREATE INDEX events_tsv ON events USING GIN (tsv)",
        _PG_JOURNAL_TSV.format(table="events_archive"),
        "CREATE INDEX events_archive_tsv ON events_archive USING GIN (tsv)",
    ),
}

# Columns only the PostgreSQL schema has (the schema test allows these and no others).
POSTGRES_ONLY_COLUMNS = frozenset(
    {
        ("memories", "tsv"),
        ("memory_sources", "seq"),
        ("events", "tsv"),
        ("events_archive", "tsv"),
        # A long memory's passages with their tsvectors (migration 17); SQLite holds
        # them in its FTS5 table passages_fts.
        *(
            ("memory_text_passages", column)
            for column in ("memory_id", "n", "workspace_id", "start_char", "stop_char", "tsv")
        ),
    }
)
# Tables only the SQLite schema has: the FTS5 indexes and their shadow tables.
SQLITE_ONLY_TABLE_PREFIX = ("memories_fts", "journal_fts", "passages_fts")


def _to_postgres(statement: str) -> str:
    for pattern, replacement in _PG_TYPES:
        statement = pattern.sub(replacement, statement)
    return statement


def postgres_statements(version: int) -> list[str]:
    """The statements migration ``version`` runs on PostgreSQL, in order."""
    sql = _SQL_OF[version]
    translated = [
        _to_postgres(statement)
        for statement in sql.split(";\n\n")
        if statement.strip() and not _SQLITE_ONLY.match(statement)
    ]
    return translated + list(_PG_EXTRAS.get(version, ()))


_SQL_OF: dict[int, str] = {
    1: _M001_SQL,
    2: _M002_SQL,
    3: _M003_SQL,
    4: _M004_SQL,
    5: _M005_SQL,
    6: _M006_SQL,
    7: _M007_SQL,
    8: _M008_SQL,
    9: _M009_SQL,
    10: _M010_SQL,
    11: "",
    12: _M012_SQL,
    13: _M013_SQL,
    14: _M014_SQL,
    15: _M015_SQL,
    16: _M016_SQL,
    17: _M017_SQL,
    18: _M018_SQL,
    19: _M019_SQL,
}
