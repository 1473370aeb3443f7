"""`episodic doctor --deep` on both backends: a memory that went through every kind of
write (ingest, indexing with its edges, decay, compaction, consolidation, forget) is
clean, and each kind of damage planted with raw SQL is reported by its check's name, with
a count and a fix, and exit status 1."""

from __future__ import annotations

import itertools
import shutil
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from conftest import _create_db, _drop_db, _with_db, raw_execute, raw_rows
from crash_support import DEEP_NAMES, doctor_deep, mismatches, populate

# A memory that has a vector, and another workspace's memory (for cross-workspace damage).
# Each kind of damage hits its own memory ("{v}"), so several can be planted in one copy.
VECTORED = "'{v}'"
VICTIMS = [f"p-{n}" for n in range(5, 60, 4)]
OTHER = "(SELECT id FROM memories WHERE workspace_id = 'orbit' ORDER BY id LIMIT 1)"
ACME = "(SELECT id FROM memories WHERE workspace_id = 'acme' ORDER BY id LIMIT 1)"
_copies = itertools.count()
PG_NO_CHECKS = "SET session_replication_role = replica; "  # no FK or trigger fires


@pytest.fixture(scope="module")
def goldens(tmp_path_factory: pytest.TempPathFactory, pg_server: Any) -> dict[str, str]:
    """One populated memory per backend, copied for each test (populating takes longer
    than the check)."""
    sqlite_url = f"sqlite:///{tmp_path_factory.mktemp('golden')}/golden.db"
    populate(sqlite_url, 60).close()
    name = _create_db(pg_server, "golden")
    populate(_with_db(pg_server.get_uri(), name), 60).close()
    return {"sqlite": sqlite_url, "postgres": name}


@pytest.fixture(params=["sqlite", "postgres"])
def populated(
    request: pytest.FixtureRequest, tmp_path: Path, goldens: dict[str, str], pg_server: Any
) -> Iterator[str]:
    """A copy of the backend's populated memory."""
    if request.param == "sqlite":
        path = tmp_path / "memory.db"
        shutil.copy(goldens["sqlite"].removeprefix("sqlite:///"), path)
        yield f"sqlite:///{path}"
        return
    name = f"d_{next(_copies)}"
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {goldens['postgres']}")
    yield _with_db(pg_server.get_uri(), name)
    _drop_db(pg_server, name)


def test_a_lived_in_memory_is_clean(populated: str) -> None:
    code, report = doctor_deep(populated)
    names = {c["name"] for c in report["checks"]}
    engine = {"sqlite.integrity", "fts.integrity", "fts.mirror"}
    if not populated.startswith("sqlite"):
        engine = {"postgres.indexes", "postgres.tsv"}
    assert DEEP_NAMES | engine <= names
    assert mismatches(report) == [] and code == 0
    # The populated memory really has rows in what the checks read.
    for table in ("memory_relations", "memory_compactions", "events_archive", "memory_vectors"):
        assert raw_rows(populated, f"SELECT count(*) FROM {table}")[0][0] > 0, table
    counts = {c["name"]: c["count"] for c in report["checks"] if c["name"] in DEEP_NAMES}
    assert set(counts.values()) == {0}


@pytest.mark.parametrize("populated", ["sqlite"], indirect=True)
def test_without_deep_the_row_checks_do_not_run(populated: str) -> None:
    from crash_support import runner
    from episodic.cli import app

    result = runner.invoke(app, ["--db", populated, "doctor"], env={"EPISODIC_EMBEDDER": "none"})
    assert result.exit_code == 0 and "orphans" not in result.stdout


def _nan_blob() -> str:
    return "X'" + struct.pack("<f", float("nan")).hex() * 64 + "'"


# A passage of a vectored memory that ends past the memory's last character.
_PASSAGE_PAST_THE_END = (
    "INSERT INTO memory_passages (memory_id, n, workspace_id, start_char, stop_char, vector) "
    "SELECT v.memory_id, 1, v.workspace_id, 0, length(content) + 5, v.vector "
    f"FROM memory_vectors v JOIN memories m ON m.id = v.memory_id WHERE v.memory_id = {VECTORED}"
)

# kind -> (sqlite statements, postgres statements, the check that must name it)
DAMAGE: dict[str, tuple[list[str], list[str], str]] = {
    "vector of a deleted memory": (
        [f"DELETE FROM memories WHERE id = {VECTORED}"],
        [PG_NO_CHECKS + f"DELETE FROM memories WHERE id = {VECTORED}"],
        "orphans.vectors",
    ),
    "vector filed under another workspace": (
        [f"UPDATE memory_vectors SET workspace_id = 'elsewhere' WHERE memory_id = {VECTORED}"],
        [f"UPDATE memory_vectors SET workspace_id = 'elsewhere' WHERE memory_id = {VECTORED}"],
        "orphans.vectors",
    ),
    "vector of the wrong dimension": (
        [f"UPDATE memory_vectors SET dim = 7 WHERE memory_id = {VECTORED}"],
        [f"UPDATE memory_vectors SET dim = 7 WHERE memory_id = {VECTORED}"],
        "vectors.shape",
    ),
    "vector of bad values": (
        [f"UPDATE memory_vectors SET vector = {_nan_blob()} WHERE memory_id = {VECTORED}"],
        [f"UPDATE memory_vectors SET vector = vector + vector WHERE memory_id = {VECTORED}"],
        "vectors.shape",
    ),
    "vectors of two models": (
        [f"UPDATE memory_vectors SET model = 'other-model' WHERE memory_id = {VECTORED}"],
        [f"UPDATE memory_vectors SET model = 'other-model' WHERE memory_id = {VECTORED}"],
        "vectors.shape",
    ),
    "indexed flag without a vector": (
        [
            "DROP TRIGGER memory_vectors_ad",
            f"DELETE FROM memory_vectors WHERE memory_id = {VECTORED}",
        ],
        [
            "ALTER TABLE memory_vectors DISABLE TRIGGER memory_vectors_flag",
            f"DELETE FROM memory_vectors WHERE memory_id = {VECTORED}",
        ],
        "vectors.flag",
    ),
    "vector without the indexed flag": (
        [f"UPDATE memories SET has_vector = 0 WHERE id = {VECTORED}"],
        [f"UPDATE memories SET has_vector = 0 WHERE id = {VECTORED}"],
        "vectors.flag",
    ),
    "passage lying outside its memory's text": (
        [_PASSAGE_PAST_THE_END],
        [_PASSAGE_PAST_THE_END],
        "orphans.passages",
    ),
    "passage of a memory without a vector": (
        [
            "DROP TRIGGER memory_vectors_passages_ad",
            _PASSAGE_PAST_THE_END.replace("length(content) + 5", "length(content)"),
            f"DELETE FROM memory_vectors WHERE memory_id = {VECTORED}",
        ],
        [
            "ALTER TABLE memory_vectors DISABLE TRIGGER memory_vectors_passages",
            _PASSAGE_PAST_THE_END.replace("length(content) + 5", "length(content)"),
            f"DELETE FROM memory_vectors WHERE memory_id = {VECTORED}",
        ],
        "orphans.passages",
    ),
    "source citing no event": (
        [f"INSERT INTO memory_sources (memory_id, event_id) VALUES ({ACME}, 'no-such-event')"],
        [f"INSERT INTO memory_sources (memory_id, event_id) VALUES ({ACME}, 'no-such-event')"],
        "orphans.sources",
    ),
    "relation across workspaces": (
        [
            "INSERT INTO memory_relations (src, dst, relation, weight, created_at) "
            f"VALUES ({ACME}, {OTHER}, 'similar', 0.9, 'x')"
        ],
        [
            "INSERT INTO memory_relations (src, dst, relation, weight, created_at) "
            f"VALUES ({ACME}, {OTHER}, 'similar', 0.9, 'x')"
        ],
        "orphans.relations",
    ),
    "relation to a deleted memory": (
        [
            "INSERT INTO memory_relations (src, dst, relation, weight, created_at) "
            f"VALUES ({ACME}, 'ghost', 'similar', 0.9, 'x')"
        ],
        [
            PG_NO_CHECKS + "INSERT INTO memory_relations (src, dst, relation, weight, "
            f"created_at) VALUES ({ACME}, 'ghost', 'similar', 0.9, 'x')"
        ],
        "orphans.relations",
    ),
    "compaction naming a deleted memory": (
        [
            "INSERT INTO memory_compactions (memory_id, survivor_id, workspace_id, similarity, "
            f"compacted_at) VALUES ({ACME}, 'ghost', 'acme', 0.9, 'x')"
        ],
        [
            PG_NO_CHECKS + "INSERT INTO memory_compactions (memory_id, survivor_id, "
            f"workspace_id, similarity, compacted_at) VALUES ({ACME}, 'ghost', 'acme', 0.9, 'x')"
        ],
        "orphans.compactions",
    ),
    "event both journaled and archived": (
        [
            "INSERT INTO events_archive (id, workspace_id, ts, type, severity, summary, payload, "
            "archived_at) SELECT id, workspace_id, ts, type, severity, summary, '{}', ts "
            "FROM events ORDER BY id LIMIT 1"
        ],
        [
            "INSERT INTO events_archive (id, workspace_id, ts, type, severity, summary, payload, "
            "archived_at) SELECT id, workspace_id, ts, type, severity, summary, '{}', ts "
            "FROM events ORDER BY id LIMIT 1"
        ],
        "orphans.archive",
    ),
}
SQLITE_DAMAGE: dict[str, tuple[list[str], str]] = {
    "memory missing from the keyword index": (
        [
            "INSERT INTO memories_fts (memories_fts, rowid, content, keys, payload) "
            "SELECT 'delete', seq, content, keys, payload FROM memories ORDER BY seq LIMIT 1"
        ],
        "fts.mirror",
    ),
    "keyword index row with no memory": (
        [
            "INSERT INTO memories_fts (rowid, content, keys, payload) "
            "VALUES (987654, 'phantom words', '', '{}')"
        ],
        "fts.mirror",
    ),
    "keyword index holds old text": (
        [
            "DROP TRIGGER memories_fts_au",
            "UPDATE memories SET content = 'entirely new wording here' WHERE id = "
            "(SELECT id FROM memories ORDER BY seq LIMIT 1)",
        ],
        "fts.mirror",
    ),
    "damaged index b-tree": (
        [
            "PRAGMA writable_schema = ON",
            "UPDATE sqlite_master SET sql = 'CREATE INDEX events_workspace_ts ON events "
            "(ts, workspace_id)' WHERE name = 'events_workspace_ts'",
        ],
        "sqlite.integrity",
    ),
}
POSTGRES_DAMAGE: dict[str, tuple[list[str], str]] = {
    "tsv no longer generated and stale": (
        [
            "ALTER TABLE memories ALTER COLUMN tsv DROP EXPRESSION",
            "UPDATE memories SET tsv = NULL WHERE id = (SELECT id FROM memories ORDER BY id "
            "LIMIT 1)",
        ],
        "postgres.tsv",
    ),
    "invalid index": (
        ["UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'memories_tsv'::regclass"],
        "postgres.indexes",
    ),
    "HNSW index dropped": (["DROP INDEX memory_vectors_hnsw"], "postgres.indexes"),
}


def _run_damage(url: str, statements: list[str]) -> None:
    if url.startswith("sqlite"):
        import sqlite3

        # One connection: PRAGMA writable_schema lasts only for its connection.
        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        try:
            for sql in statements:
                conn.execute(sql)
            conn.commit()
        finally:
            conn.close()
        return
    for sql in statements:
        raw_execute(url, sql)


def _assert_reported(url: str, check: str) -> None:
    code, report = doctor_deep(url)
    assert code == 1
    found = {c["name"]: c for c in report["checks"]}
    assert found[check]["status"] == "error", found[check]
    assert found[check]["count"] >= 1 and found[check]["fix"], found[check]


def _planted(kind: str, url: str, victim: str) -> list[str]:
    sqlite_sql, pg_sql, _ = DAMAGE[kind]
    return [
        sql.replace("'{v}'", f"'{victim}'") for sql in (sqlite_sql if _is_sqlite(url) else pg_sql)
    ]


def _is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_each_kind_of_damage_is_named_on_sqlite(
    tmp_path: Path, goldens: dict[str, str], kind: str
) -> None:
    url = f"sqlite:///{tmp_path}/m.db"
    shutil.copy(goldens["sqlite"].removeprefix("sqlite:///"), url.removeprefix("sqlite:///"))
    _run_damage(url, _planted(kind, url, VICTIMS[0]))
    _assert_reported(url, DAMAGE[kind][2])


def test_every_kind_of_damage_at_once_is_named(populated: str) -> None:
    """Each kind on its own memory, all in one copy (a PostgreSQL copy costs a database)."""
    expected: dict[str, int] = {}
    for kind, victim in zip(sorted(DAMAGE), VICTIMS, strict=False):
        _run_damage(populated, _planted(kind, populated, victim))
        expected[DAMAGE[kind][2]] = expected.get(DAMAGE[kind][2], 0) + 1
    code, report = doctor_deep(populated)
    found = {c["name"]: c for c in report["checks"]}
    assert code == 1
    for check, planted in expected.items():
        assert found[check]["status"] == "error" and found[check]["fix"], found[check]
        assert found[check]["count"] >= planted, found[check]


def test_a_long_memory_indexed_without_passages_is_a_warning(populated: str) -> None:
    """Indexed before passages were (or their passages lost): searched by its start only
    until a reindex; a warning, as a memory waiting for its vector is."""
    victim = VICTIMS[0]
    longer = "words and more words " * 60
    _run_damage(
        populated, [f"UPDATE memories SET content = content || '{longer}' WHERE id = '{victim}'"]
    )
    _, report = doctor_deep(populated)
    found = {c["name"]: c for c in report["checks"]}
    assert found["passages.missing"]["status"] == "warn" and found["passages.missing"]["count"] == 1
    assert "reindex" in found["passages.missing"]["fix"]


@pytest.mark.parametrize("kind", sorted(SQLITE_DAMAGE))
def test_sqlite_engine_damage_is_named(tmp_path: Path, goldens: dict[str, str], kind: str) -> None:
    url = f"sqlite:///{tmp_path}/m.db"
    shutil.copy(goldens["sqlite"].removeprefix("sqlite:///"), url.removeprefix("sqlite:///"))
    statements, check = SQLITE_DAMAGE[kind]
    _run_damage(url, statements)
    _assert_reported(url, check)
    if check == "fts.mirror":
        _assert_reported(url, "fts.integrity")


@pytest.mark.parametrize("populated", ["postgres"], indirect=True)
def test_postgres_engine_damage_is_named(populated: str) -> None:
    for kind in sorted(POSTGRES_DAMAGE):
        _run_damage(populated, POSTGRES_DAMAGE[kind][0])
    code, report = doctor_deep(populated)
    found = {c["name"]: c for c in report["checks"]}
    assert code == 1
    assert found["postgres.tsv"]["status"] == "error"
    assert found["postgres.tsv"]["count"] == 2  # no longer generated, and one row stale
    assert found["postgres.indexes"]["status"] == "error"
    assert "memories_tsv" in found["postgres.indexes"]["detail"]
    assert "memory_vectors_hnsw" in found["postgres.indexes"]["detail"]
    assert found["postgres.indexes"]["count"] == 2
