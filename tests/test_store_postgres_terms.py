"""PostgreSQL's keyword postings (``memory_terms``): triggers keep them equal to what the
memories' ``tsv`` columns hold through every kind of write, an older database gets them
when it is opened, and the keyword leg ranks from them."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import numpy as np
import psycopg
import pytest

from episodic.model import ScopeFilter, utcnow
from episodic.scoring.fts import bm25_idf, fts_tokens
from episodic.scoring.stopwords import without_stopwords
from episodic.store.postgres import PostgresStore
from episodic.store.postgres.integrity import FIX_TERMS
from episodic.store.postgres.sparse import BM25_OF_CANDIDATE, LEXEMES_CTE
from store_contract import event, memory_of

# What the postings must hold: one row per (memory, lexeme of its tsv) with the lexeme's
# occurrences per label and the tsv's length.
_DERIVED = (
    "SELECT m.workspace_id, u.lexeme, m.id,"
    " cardinality(array_positions(u.weights, 'A')), cardinality(array_positions(u.weights, 'B')),"
    " cardinality(array_positions(u.weights, 'D')), length(m.tsv)"
    " FROM memories m, unnest(m.tsv) u"
)
_STORED = (
    "SELECT t.workspace_id, t.lexeme, m.id, t.n_content, t.n_payload, t.n_keys, t.length"
    " FROM memory_terms t LEFT JOIN memories m ON m.seq = t.seq"
)


def _postings(url: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    with psycopg.connect(url) as conn:
        derived = sorted(conn.execute(_DERIVED).fetchall())
        stored = sorted(conn.execute(_STORED).fetchall())
    return derived, stored


def _batch(start: int, n: int, ws: str = "acme") -> tuple[list[Any], list[Any]]:
    events = [
        event(f"e{i}", ws=ws, summary=f"deploy {i} of the billing service to cluster west")
        for i in range(start, start + n)
    ]
    return events, [memory_of(e) for e in events]


def _ids(found: list[Any]) -> list[str]:
    return [c.memory_id for c in found]


def test_postings_follow_every_kind_of_write(pg_url: str) -> None:
    with PostgresStore(pg_url) as store:
        small = _batch(0, 3)
        store.append(*small)
        big = _batch(100, 450, ws="other")  # past COPY_MIN_ROWS: the COPY path
        store.append(*big)
        derived, stored = _postings(pg_url)
        assert len(stored) > 450 * 5 and stored == derived

        # Vectors flip has_vector on each memory: an update that leaves the text alone.
        vecs = np.eye(8, dtype=np.float32)[:3]
        rows = [(m.id, v) for m, v in zip(small[1], vecs, strict=True)]
        assert store.put_vectors("t", 8, rows) == 3
        assert _postings(pg_url)[1] == stored

        # An edit of the text replaces the memory's postings.
        old = store.get_memory("acme", small[1][0].id)
        edited = replace(old, content="rollback of the payments gateway")
        assert store.revise_memory(edited, by="test", at=utcnow())
        derived, stored = _postings(pg_url)
        assert stored == derived
        mine = {r[1] for r in stored if r[2] == old.id}
        assert {"payment", "gateway", "rollback"} <= mine and "deploy" not in mine

        # Deleting memories takes their postings with them.
        assert store.delete_memories("other", [m.id for m in big[1][:200]]) == 200
        derived, stored = _postings(pg_url)
        assert stored == derived
        assert all(r[2] is not None for r in stored)


def test_keyword_recall_reads_the_postings(pg_url: str) -> None:
    """What a user sees: an edited memory is found by its new words and no longer by its
    old ones; a deleted one is not found; a rare word finds its one memory among many
    that share the common words."""
    with PostgresStore(pg_url) as store:
        events, memories = _batch(0, 40)
        rare = event(
            "rare",
            ws="acme",
            summary="deploy of the billing service hit a zeppelin quota",
            minutes=-30 * 24 * 60,
        )
        store.append([*events, rare], [*memories, memory_of(rare)])
        flt = ScopeFilter("acme")
        assert _ids(store.search_sparse(flt, "zeppelin billing", 5))[0] == "rare"

        old = store.get_memory("acme", memories[0].id)
        store.revise_memory(replace(old, content="quartz fixture"), by="t", at=utcnow())
        assert _ids(store.search_sparse(flt, "quartz", 5)) == [old.id]
        assert old.id not in _ids(store.search_sparse(flt, "deploy cluster west", 100))

        store.delete_memories("acme", ["rare"])
        assert "rare" not in _ids(store.search_sparse(flt, "zeppelin", 5))


def test_a_database_from_before_the_postings_gets_them_when_opened(pg_url: str) -> None:
    with PostgresStore(pg_url) as store:
        store.append(*_batch(0, 30))
    # The database as migration 10 left it: no postings table, no triggers.
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP TABLE memory_terms")
        for fn in ("episodic_terms_added", "episodic_terms_removed", "episodic_terms_changed"):
            conn.execute(f"DROP FUNCTION {fn}() CASCADE")
        conn.execute("DELETE FROM schema_migrations WHERE version = 11")
        assert conn.execute("SELECT count(*) FROM memories").fetchone() == (30,)
    with PostgresStore(pg_url) as store:
        derived, stored = _postings(pg_url)
        assert len(stored) > 30 * 5 and stored == derived
        assert len(store.search_sparse(ScopeFilter("acme"), "billing cluster", 50)) == 30
        store.append(*_batch(30, 2))  # and the triggers keep them from then on
        derived, stored = _postings(pg_url)
        assert stored == derived


def test_doctors_fix_for_damaged_postings_rebuilds_them(pg_url: str) -> None:
    """The deep check names postings that drifted from the text and a disabled trigger,
    and what its fix says to run makes the check clean again."""
    with PostgresStore(pg_url) as store:
        store.append(*_batch(0, 20))
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DELETE FROM memory_terms WHERE seq = (SELECT min(seq) FROM memories)")
        conn.execute("ALTER TABLE memories DISABLE TRIGGER memories_terms_added")
    with PostgresStore(pg_url) as store:
        store.append(*_batch(20, 1))  # not posted: its trigger is off
        found = {c.name: c for c in store.deep_check()}["postgres.terms"]
    assert found.status == "error" and found.count >= 2 + 1
    assert "triggers" in found.detail and "lacks" in found.detail
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for statement in FIX_TERMS.split(": ", 1)[1].split("; then")[0].split("; "):
            conn.execute(statement)
    with PostgresStore(pg_url) as store:
        found = {c.name: c for c in store.deep_check()}["postgres.terms"]
        assert found.status == "ok" and found.count == 0
        assert [c.memory_id for c in store.search_sparse(ScopeFilter("acme"), "deploy", 50)]
    derived, stored = _postings(pg_url)
    assert stored == derived and len({r[2] for r in stored}) == 21


# bm25 of every active match in the workspace, from the memories' own tsvectors: what the
# postings must reproduce when every match is a candidate.
_REFERENCE = (
    "WITH "
    + LEXEMES_CTE
    + ", p AS MATERIALIZED (SELECT %s::float8[] AS idf, greatest(%s::float8, 1) AS avgdl) "
    "SELECT c.id, s.score FROM memories c CROSS JOIN p CROSS JOIN LATERAL ("
    + BM25_OF_CANDIDATE
    + ") s WHERE c.workspace_id = %s AND c.status = 'active'"
    " AND c.tsv @@ to_tsquery('english', %s) ORDER BY s.score DESC, c.seq"
)

_WORDS = [
    "deploy",
    "rollback",
    "billing",
    "gateway",
    "café",
    "cafe",
    "quota",
    "zeppelin",
    "kubernetes",
    "cluster",
    "authentication",
    "retry",
    "backoff",
    "ledger",
    "invoice",
    "latency",
    "west",
    "east",
    "payments",
]


@pytest.mark.parametrize(
    "query",
    [
        "billing gateway",  # whole words
        "zeppelin quota retry",  # rare and common together
        "café ledger",  # a word with diacritics: searched with and without them
        "kube latency",  # a word typed in part: its prefix ("kube" -> kubernetes)
        "auth",  # a prefix alone
        "payments rollback west deploy",  # a longer query
    ],
)
def test_postings_rank_as_bm25_over_the_tsvectors(pg_url: str, query: str) -> None:
    rng = random.Random(7)
    events = [
        event(f"m{i}", summary=" ".join(rng.choices(_WORDS, k=rng.randint(3, 12))))
        for i in range(300)
    ]
    with PostgresStore(pg_url) as store:
        store.append(events, [memory_of(e) for e in events])
        tokens = without_stopwords(fts_tokens(query))
        with store._read() as conn:
            total, avgdl, terms, counts = store._sparse_stats(conn, "acme", tokens)
        assert all(n > 0 for n in counts), counts
        got = store.search_sparse(ScopeFilter("acme"), query, 300)
    rows = [(i, v, t.prefix) for i, t in enumerate(terms, start=1) for v in t.variants]
    with psycopg.connect(pg_url) as conn:
        want = conn.execute(
            _REFERENCE,
            [
                [r[0] for r in rows],
                [r[1] for r in rows],
                [r[2] for r in rows],
                [bm25_idf(n, total) for n in counts],
                avgdl,
                "acme",
                " | ".join(t.query for t in terms),
            ],
        ).fetchall()
    assert len(want) > 10
    assert [c.memory_id for c in got] == [r[0] for r in want]
    assert [c.score for c in got] == pytest.approx([float(r[1]) for r in want], rel=1e-6)


def test_the_rare_terms_cap_counts_memories_not_postings(pg_url: str) -> None:
    """Two words that every memory holds both of: each memory has a posting per word,
    but the rare terms' cap is a number of memories (as the GIN index's matches were), so
    none of them is cut. The counts are capped at half the workspace, which is what puts
    both words under the budget together."""
    events = [event(f"m{i}", summary=f"alpha beta note {i}", minutes=i) for i in range(8)]
    events += [event(f"f{i}", summary=f"filler {i}", minutes=10 + i) for i in range(2)]
    with PostgresStore(pg_url) as store:
        store.sparse_rare_budget = 12  # the two capped counts: 6 + 6
        store.append(events, [memory_of(e) for e in events])
        found = store.search_sparse(ScopeFilter("acme"), "alpha beta", 20)
    assert sorted(c.memory_id for c in found) == [f"m{i}" for i in range(8)]
