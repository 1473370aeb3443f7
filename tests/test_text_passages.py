"""The keyword leg reads a long memory passage by passage: a fact deep inside a long
message is found by a keyword-only recall and shown by its passage, on both backends;
the passages' rows follow the memory through an edit, a forget, a reindex, the migration
that adds them and `episodic migrate`, and `doctor --deep` checks them."""

from __future__ import annotations

import dataclasses
import random
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from episodic import Episodic, Settings
from episodic.client import Client
from episodic.embed.fake import FakeEmbedder
from episodic.http import asgi
from episodic.model import Candidate
from episodic.recall.answer import recall_answer
from episodic.recall.policies import DEFAULT
from episodic.scoring.passages import PASSAGE_CHARS, passage_spans
from episodic.store import open_store
from episodic.store.migrations import TEXT_PASSAGE_SHIFT, migrate, text_passage_rows
from episodic.store.passages import merge_sparse
from episodic.store.upkeep import Merge
from long_memories import long_workspace, note
from servers import serve

TS = datetime(2025, 3, 1, tzinfo=UTC).isoformat()
FILLER = "We compared the deployment checklist against the runbook line by line. "
NEEDLE = "The flamingo migration needs the zeppelin quota raised before Friday."


def _prose(n: int, seed: int) -> str:
    """``n`` sentences of varied words (none of the question's), as a long answer has."""
    rng = random.Random(seed)
    vocabulary = [
        f"{a}{b}"
        for a in ("run", "chec", "depl", "stag", "buil", "serv")
        for b in ("ok", "er", "ing", "ant", "ure", "ity", "ness", "ment", "al", "ive", "ous", "ist")
    ]
    return "".join(
        f"Step {i}: the {rng.choice(vocabulary)} {rng.choice(vocabulary)} went to "
        f"{rng.choice(vocabulary)} number {rng.randint(1, 99999)}. "
        for i in range(n)
    )


# A 20,000-character assistant answer with the one sentence that matters in its middle.
LONG = _prose(170, 1) + NEEDLE + " " + _prose(170, 2)
QUESTION = "flamingo migration zeppelin quota"
# Short memories that each share a few of the question's words: read whole, the long
# answer's one mention of each word weighs little against its 20,000 characters.
SHORT = (
    "The zeppelin quota page is bookmarked.",
    "A flamingo migration documentary is on tonight.",
    "Quota reviews happen monthly.",
)


NOTES = [note("long", LONG, TS), *(note(f"s{i}", t, TS) for i, t in enumerate(SHORT))]


@pytest.fixture
def keywords(db_url: str) -> Iterator[Episodic]:
    """A store without an embedder: recall is the keyword leg alone."""
    m = long_workspace(db_url, NOTES)
    yield m
    m.close()


def _passage_rows(url: str, memory_id: str) -> list[tuple[int, int, str]]:
    """(start, stop, text) of each stored passage row of the memory, in order."""
    if url.startswith("sqlite:///"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        try:
            (seq,) = conn.execute("SELECT seq FROM memories WHERE id = ?", (memory_id,)).fetchone()
            rows = conn.execute(
                "SELECT start_char, stop_char, content FROM passages_fts "
                "WHERE rowid >= ? AND rowid < ? ORDER BY rowid",
                (seq << TEXT_PASSAGE_SHIFT, (seq + 1) << TEXT_PASSAGE_SHIFT),
            ).fetchall()
        finally:
            conn.close()
        return [(int(a), int(b), str(t)) for a, b, t in rows]
    with psycopg.connect(url) as pg:
        found = pg.execute(
            "SELECT p.start_char, p.stop_char, substr(m.content, p.start_char::int + 1, "
            "(p.stop_char - p.start_char)::int) FROM memory_text_passages p "
            "JOIN memories m ON m.id = p.memory_id WHERE p.memory_id = %s ORDER BY p.n",
            (memory_id,),
        ).fetchall()
    return [(int(a), int(b), str(t)) for a, b, t in found]


def _expected(content: str) -> list[tuple[int, int, str]]:
    return [(s.start, s.stop, content[s.start : s.stop]) for s in passage_spans(content)]


def test_a_keyword_only_recall_finds_the_fact_by_its_passage(
    keywords: Episodic, db_url: str
) -> None:
    result = keywords.recall(QUESTION, workspace="w", mark=False, k=3)
    hit = result.hits[0]
    assert hit.id == "long" and hit.passage is not None
    assert NEEDLE in LONG[hit.passage[0] : hit.passage[1]] and NEEDLE in hit.shown
    assert len(hit.shown) < PASSAGE_CHARS + 10
    block = keywords.render(QUESTION, workspace="w")
    assert NEEDLE in block and "passage of long" in block and len(block) < 2 * PASSAGE_CHARS
    answer = recall_answer(result)["memories"][0]
    assert answer["id"] == "long" and NEEDLE in answer["content"]
    # Read whole only, the long answer is outranked by short memories sharing fewer words.
    whole_only = dataclasses.replace(DEFAULT, sparse_passage_weight=0.0)
    assert keywords.recall(QUESTION, workspace="w", policy=whole_only, mark=False).hits[0].id != (
        "long"
    )
    bm25 = keywords.recall(QUESTION, workspace="w", policy="bm25", mark=False)
    assert bm25.hits[0].id == "long" and NEEDLE in bm25.hits[0].shown


def test_http_and_the_client_carry_the_keyword_passage(keywords: Episodic) -> None:
    key = keywords.create_key("w", role="admin")[1]
    with serve(asgi(keywords)) as url, Client(url, key) as client:
        (hit, *_) = client.recall(QUESTION, k=3).hits
        assert hit.id == "long" and hit.passage is not None and NEEDLE in hit.shown


def test_the_passages_are_written_with_the_memory_and_only_for_a_long_one(
    keywords: Episodic, db_url: str
) -> None:
    assert _passage_rows(db_url, "long") == _expected(LONG)
    assert _passage_rows(db_url, "s0") == []


def test_an_edit_rewrites_the_passages_and_a_forget_removes_them(
    keywords: Episodic, db_url: str
) -> None:
    edited = FILLER * 30 + "The pelican rollout waits for the blimp budget. " + FILLER * 30
    keywords.update("long", workspace="w", content=edited)
    assert _passage_rows(db_url, "long") == _expected(edited)
    (hit, *_) = keywords.recall("pelican rollout blimp budget", workspace="w", mark=False).hits
    assert hit.id == "long" and hit.passage is not None
    assert "pelican" in edited[hit.passage[0] : hit.passage[1]]
    keywords.update("long", workspace="w", content="Short now.")
    assert _passage_rows(db_url, "long") == []
    keywords.update("long", workspace="w", content=LONG)
    assert _passage_rows(db_url, "long") == _expected(LONG)
    keywords.forget(workspace="w", memory="long")
    assert _passage_rows(db_url, "s0") == []
    hits = keywords.recall(QUESTION, workspace="w", mark=False).hits
    assert "long" not in [h.id for h in hits]
    if db_url.startswith("sqlite:///"):
        conn = sqlite3.connect(db_url.removeprefix("sqlite:///"))
        (left,) = conn.execute("SELECT count(*) FROM passages_fts").fetchone()
        conn.close()
    else:
        with psycopg.connect(db_url) as pg:
            (left,) = pg.execute("SELECT count(*) FROM memory_text_passages").fetchone()
    assert left == 0


def test_compaction_indexes_the_survivors_new_text(db_url: str) -> None:
    store = open_store(db_url)
    m = long_workspace(
        store, [note("a", "The zeppelin note, short.", TS), note("b", "The zeppelin note.", TS)]
    )
    merged = Merge(
        survivor_id="a",
        losers=(("b", 0.9),),
        content=LONG,
        base_importance=0.5,
        importance=0.5,
        reference_count=0,
        last_referenced_at=None,
        ts=datetime(2025, 3, 2, tzinfo=UTC),
    )
    assert store.compact_memories("w", [merged], datetime(2025, 3, 3, tzinfo=UTC)) == 1
    assert _passage_rows(db_url, "a") == _expected(LONG)
    m.close()


def _drop_passages(url: str) -> None:
    """Lose every passage row behind the store's back."""
    if url.startswith("sqlite:///"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        conn.execute("DELETE FROM passages_fts")
        conn.close()
    else:
        with psycopg.connect(url) as pg:
            pg.execute("DELETE FROM memory_text_passages")


def test_reindex_rebuilds_lost_passages_and_doctor_sees_them_missing(db_url: str) -> None:
    store = open_store(db_url)
    m = long_workspace(store, NOTES, embedder=FakeEmbedder(dim=64))
    checks = {c.name: c for c in store.deep_check()}
    assert checks["passages.text"].status == "ok"
    _drop_passages(db_url)
    checks = {c.name: c for c in store.deep_check()}
    assert checks["passages.text"].status == "warn" and checks["passages.text"].count == 1
    assert "reindex" in (checks["passages.text"].fix or "")
    m.reindex()
    assert _passage_rows(db_url, "long") == _expected(LONG)
    assert {c.name: c for c in store.deep_check()}["passages.text"].status == "ok"
    m.close()


def test_doctor_counts_a_passage_row_of_no_memory(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path}/m.db")
    m = long_workspace(store, NOTES)
    conn = sqlite3.connect(str(tmp_path / "m.db"), isolation_level=None)
    conn.execute(
        "INSERT INTO passages_fts (rowid, content, start_char, stop_char) VALUES (?, ?, 0, 5)",
        (999 << TEXT_PASSAGE_SHIFT, "stray words"),
    )
    conn.close()
    check = {c.name: c for c in store.deep_check()}["passages.text"]
    assert check.status == "warn" and check.count == 1
    m.close()


def test_the_migration_indexes_the_long_memories_already_stored(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(str(path), isolation_level=None)
    migrate(conn)
    conn.close()
    long_workspace(f"sqlite:///{path}", NOTES).close()
    # As a database written before the migration: no passage index, version 17 not applied.
    conn = sqlite3.connect(str(path), isolation_level=None)
    for statement in (
        "DROP TRIGGER memories_passages_fts_ad",
        "DROP TRIGGER memories_passages_fts_au",
        "DROP TABLE passages_fts",
        "DELETE FROM schema_migrations WHERE version = 17",
    ):
        conn.execute(statement)
    conn.close()
    m = Episodic(
        store=open_store(f"sqlite:///{path}"), embedder=None, settings=Settings(embedder="none")
    )
    assert _passage_rows(f"sqlite:///{path}", "long") == _expected(LONG)
    assert m.recall(QUESTION, workspace="w", mark=False).hits[0].id == "long"
    m.close()


def test_the_postgres_migration_indexes_the_long_memories_already_stored(pg_url: str) -> None:
    long_workspace(pg_url, NOTES).close()
    with psycopg.connect(pg_url) as pg:
        for statement in (
            "DROP TRIGGER memories_text_passages ON memories",
            "DROP FUNCTION episodic_text_passages()",
            "DROP FUNCTION episodic_passage_spans(text)",
            "DROP TABLE memory_text_passages",
            "DELETE FROM schema_migrations WHERE version = 17",
        ):
            pg.execute(statement)
    m = Episodic(store=open_store(pg_url), embedder=None, settings=Settings(embedder="none"))
    assert _passage_rows(pg_url, "long") == _expected(LONG)
    assert m.recall(QUESTION, workspace="w", mark=False).hits[0].id == "long"
    m.close()


def _texts() -> list[str]:
    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "delta", "x" * 40, "déjà", "日本語", "tab\tbed", "end.\n"]
    made = [LONG, "a" * 5000, ("word " * 400).strip(), "line\n" * 700]
    for _ in range(12):
        n = rng.randint(150, 900)
        made.append(" ".join(rng.choice(words) for _ in range(n)))
        made.append("".join(rng.choice(["ab", " ", "\n", "cd ", "é"]) for _ in range(n * 4)))
    return made


def test_postgres_cuts_passages_where_python_does(pg_url: str) -> None:
    with psycopg.connect(pg_url) as pg:
        for text in _texts():
            got = pg.execute(
                "SELECT n, start_char, stop_char FROM episodic_passage_spans(%s) ORDER BY n",
                (text,),
            ).fetchall()
            assert got == [(s.n, s.start, s.stop) for s in passage_spans(text)], text[:60]


def test_migrate_to_postgres_carries_the_passages(tmp_path: Path, pg_url: str) -> None:
    from episodic.store.transfer import migrate as transfer

    source = tmp_path / "src.db"
    long_workspace(f"sqlite:///{source}", NOTES).close()
    assert transfer(f"sqlite:///{source}", pg_url).ok
    assert _passage_rows(pg_url, "long") == _expected(LONG)
    m = Episodic(store=open_store(pg_url), embedder=None, settings=Settings(embedder="none"))
    assert m.recall(QUESTION, workspace="w", mark=False).hits[0].id == "long"
    m.close()


def test_merge_sparse_keeps_each_memory_once_at_its_better_score() -> None:
    found = [Candidate("a", 3.0, 1), Candidate("b", 2.0, 2)]
    rows = [("b", 5.0, 1000, 1900), ("c", 1.0, 0, 900), ("a", 2.0, 0, 800)]
    merged = merge_sparse(found, rows, 0.5, 10)
    assert [(c.memory_id, c.score, c.passage) for c in merged] == [
        ("a", 3.0, None),
        ("b", 2.5, (1000, 1900)),
        ("c", 0.5, (0, 900)),
    ]
    assert [c.rank for c in merged] == [1, 2, 3]
    assert [c.memory_id for c in merge_sparse(found, rows, 1.0, 1)] == ["b"]


def test_text_passage_rows_number_each_passage_under_its_memory() -> None:
    rows = text_passage_rows(7, LONG)
    assert [r[0] >> TEXT_PASSAGE_SHIFT for r in rows] == [7] * len(passage_spans(LONG))
    assert [r[0] & ((1 << TEXT_PASSAGE_SHIFT) - 1) for r in rows] == list(range(len(rows)))
    assert text_passage_rows(7, "short") == []


def test_the_keyword_leg_reads_passages_only_when_no_dense_leg_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(f"sqlite:///{tmp_path}/m.db")
    asked: list[str] = []
    search = store.search_sparse_passages

    def counted(flt: object, text: str, limit: int) -> list[tuple[str, float, int, int]]:
        asked.append(text)
        return search(flt, text, limit)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "search_sparse_passages", counted)
    m = long_workspace(store, NOTES, embedder=FakeEmbedder(dim=64))
    m.recall(QUESTION, workspace="w", mark=False)
    assert asked == []  # the dense leg reads the long memory by its passages
    m.recall(QUESTION, workspace="w", policy="bm25", mark=False)
    assert asked == [QUESTION]
    m.close()
