"""Ranking from small rows: with the soft length prior every candidate's final score is
needed, and a recall works it out from each candidate's ``RankRow`` (its importance,
agent, crew, time and its length, kept by the store in ``memory_lengths``), reading whole
rows only for the candidates that reach the top. The hits are the ones whole rows give,
on both backends; a length the store does not have is never guessed; lengths follow an
edit, a forget and the migration that adds them; the trace shows the prior's step."""

from __future__ import annotations

import dataclasses
import random
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from conftest import raw_rows
from episodic import Episodic, Settings
from episodic.embed.fake import FakeEmbedder
from episodic.model import Memory
from episodic.recall import engine
from episodic.recall.length import stage_of
from episodic.recall.policies import DEFAULT
from episodic.scoring.passages import PASSAGE_CHARS
from episodic.store import open_store
from episodic.store.migrations import migrate
from long_memories import long_workspace, note

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
WORDS = ["harbour", "ferry", "timetable", "ticket", "pier", "weather", "crossing", "island"]
OTHER = ["garden", "kettle", "piano", "lantern", "meadow", "violin", "pebble", "saddle"]
QUESTION = "when does the harbour ferry leave for the island crossing"
# The fitted model's order of the head (off in `default`) may lift a hit from below the
# leaders: its whole row is read too, at most k more.
LEARNED = dataclasses.replace(DEFAULT, learned_head=30)
K = 10


def _text(rng: random.Random, i: int) -> str:
    """A note: most short, every fifth a long answer (several passages) about the ferry."""
    words = [rng.choice(WORDS if rng.random() < 0.5 else OTHER) for _ in range(12)]
    text = f"note {i}: " + " ".join(words) + "."
    if i % 5 == 0:
        text += " " + " ".join(rng.choice(WORDS + OTHER) for _ in range(700))
    return text


@pytest.fixture
def mem(db_url: str) -> Iterator[Episodic]:
    rng = random.Random(5)
    notes = [
        note(f"e{i}", _text(rng, i), NOW - timedelta(minutes=300 - i), type="chat.turn")
        for i in range(160)
    ]
    m = long_workspace(db_url, notes, embedder=FakeEmbedder(dim=256), clock=lambda: NOW)
    yield m
    m.close()


def _counting(m: Episodic) -> list[int]:
    """How many whole rows the store reads from now on (one count per call)."""
    read: list[int] = []
    store = m.store
    get: Callable[[str, Sequence[str]], list[Memory]] = store.get_memories
    both = store.memories_and_longest

    def counted(workspace_id: str, ids: Sequence[str]) -> list[Memory]:
        read.append(len(set(ids)))
        return get(workspace_id, ids)

    def counted_both(workspace_id: str, ids: Sequence[str]) -> tuple[list[Memory], int]:
        # The leaders' rows with the workspace's longest memory (on SQLite through
        # get_memories, already counted there).
        before = len(read)
        found = both(workspace_id, ids)
        if len(read) == before:
            read.append(len(set(ids)))
        return found

    store.get_memories = counted  # type: ignore[method-assign]
    store.memories_and_longest = counted_both  # type: ignore[method-assign]
    return read


def _whole_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rank as before small rows: every candidate from its whole row."""
    monkeypatch.setattr(engine, "rank_rows", lambda *args, **kwargs: None)
    monkeypatch.setattr(engine, "read_head", _read_whole_head)


def _read_whole_head(
    store: Any,
    workspace_id: str,
    policy: Any,
    rerank: Any,
    ids: Sequence[str],
    memories: dict[str, Memory],
    small: dict[str, Any],
) -> None:
    """``read_head`` as before small rows: the head's whole rows."""
    missing = [i for i in ids if i not in memories]
    memories.update((m.id, m) for m in store.get_memories(workspace_id, missing))


def _hits(m: Episodic, **kwargs: Any) -> list[tuple[str, float]]:
    result = m.recall(QUESTION, workspace="w", mark=False, k=10, **kwargs)
    return [(h.id, h.score) for h in result.hits]


def test_whole_rows_are_read_only_for_the_top_and_the_hits_are_the_same(
    mem: Episodic, monkeypatch: pytest.MonkeyPatch
) -> None:
    read = _counting(mem)
    small = _hits(mem)
    rows_small = sum(read)
    read.clear()
    learned = _hits(mem, policy=LEARNED)
    rows_learned = sum(read)
    read.clear()
    _whole_rows(monkeypatch)
    whole = _hits(mem)
    rows_whole = sum(read)
    # The same hits, in the same order, with the same scores.
    assert small == whole
    assert any(i for i, _ in small)
    assert _hits(mem, policy=LEARNED) == learned
    # Whole rows every candidate before; now only for the top, and the hits.
    assert rows_whole >= 90
    assert rows_small <= 30
    assert rows_learned <= 30 + K


def test_a_long_memory_is_ranked_exactly_as_from_its_whole_row(
    mem: Episodic, monkeypatch: pytest.MonkeyPatch
) -> None:
    long_ids = [
        m.id for m in mem.store.get_memories("w", _ids(mem)) if len(m.content) > PASSAGE_CHARS
    ]
    small = mem.recall(QUESTION, workspace="w", mark=False, k=20, explain=True)
    _whole_rows(monkeypatch)
    whole = mem.recall(QUESTION, workspace="w", mark=False, k=20, explain=True)
    assert [(h.id, h.score) for h in small.hits] == [(h.id, h.score) for h in whole.hits]
    assert {h.id for h in small.hits} & set(long_ids)
    # The prior's step is in the trace, after the re-rank, with each long memory's length.
    assert small.trace is not None and whole.trace is not None
    stages = list(small.trace.stages)
    stage = stage_of(small.trace)
    assert stage is not None and stage == stage_of(whole.trace)
    assert stages.index(stage) > stages.index("rerank:importance_priorxscope_levelxlength")
    shown = {r.memory_id: r.detail for r in small.trace.stages[stage]}
    assert shown == {r.memory_id: r.detail for r in whole.trace.stages[stage]}
    some = next(i for i in long_ids if i in shown)
    assert shown[some]["chars"] > PASSAGE_CHARS


def _ids(m: Episodic) -> list[str]:
    return [str(r[0]) for r in raw_rows(m.store.url, "SELECT id FROM memories")]


def test_a_memory_whose_length_is_not_kept_is_ranked_from_its_whole_row(
    mem: Episodic, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _hits(mem)
    _execute(mem.store.url, "DELETE FROM memory_lengths")
    rows = mem.store.rank_rows("w", _ids(mem))
    assert rows and all(r.chars is None for r in rows.values())
    read = _counting(mem)
    # Never ranked with a guessed length: whole rows, and the same hits.
    assert _hits(mem) == before
    assert sum(read) >= 90


def test_lengths_follow_an_edit_and_a_forget(mem: Episodic) -> None:
    ids = _ids(mem)
    first = mem.store.get_memories("w", ids[:1])[0]
    assert mem.store.rank_rows("w", [first.id])[first.id].chars == len(first.content)
    mem.update(first.id, workspace="w", content="ferry " * 400)
    assert mem.store.rank_rows("w", [first.id])[first.id].chars == len("ferry " * 400)
    mem.forget(workspace="w", memory=first.id)
    assert first.id not in mem.store.rank_rows("w", [first.id])
    assert not raw_rows(
        mem.store.url, f"SELECT 1 FROM memory_lengths WHERE memory_id = '{first.id}'"
    )
    # Another workspace's memory is not this one's.
    assert mem.store.rank_rows("other", ids[1:3]) == {}


def _execute(url: str, sql: str) -> None:
    if url.startswith("sqlite:"):
        conn = sqlite3.connect(url.split("sqlite:///", 1)[1], isolation_level=None)
        conn.execute(sql)
        conn.close()
    else:
        with psycopg.connect(url) as pg:
            pg.execute(sql)


def test_the_migration_measures_the_memories_already_stored(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(str(path), isolation_level=None)
    migrate(conn)
    conn.close()
    m = Episodic(
        store=open_store(f"sqlite:///{path}"), embedder=None, settings=Settings(embedder="none")
    )
    m.ingest(
        [
            note("a", "short", NOW),
            note("b", "é" * 3000, NOW),
        ]
    )
    m.close()
    # As a database written before the migration: no lengths, version 18 not applied.
    conn = sqlite3.connect(str(path), isolation_level=None)
    for statement in (
        "DROP TRIGGER memory_lengths_ai",
        "DROP TRIGGER memory_lengths_au",
        "DROP TABLE memory_lengths",
        "DELETE FROM schema_migrations WHERE version = 18",
    ):
        conn.execute(statement)
    conn.close()
    m = Episodic(
        store=open_store(f"sqlite:///{path}"), embedder=None, settings=Settings(embedder="none")
    )
    try:
        rows = m.store.rank_rows("w", _ids(m))
        assert sorted(r.chars for r in rows.values() if r.chars is not None) == [5, 3000]
    finally:
        m.close()


def test_the_postgres_migration_measures_the_memories_already_stored(pg_url: str) -> None:
    m = Episodic(store=open_store(pg_url), embedder=None, settings=Settings(embedder="none"))
    m.ingest([note("b", "é" * 3000, NOW)])
    m.close()
    with psycopg.connect(pg_url) as pg:
        for statement in (
            "DROP TRIGGER memories_length ON memories",
            "DROP FUNCTION episodic_memory_length()",
            "DROP TABLE memory_lengths",
            "DELETE FROM schema_migrations WHERE version = 18",
        ):
            pg.execute(statement)
    m = Episodic(store=open_store(pg_url), embedder=None, settings=Settings(embedder="none"))
    try:
        assert [r.chars for r in m.store.rank_rows("w", _ids(m)).values()] == [3000]
    finally:
        m.close()


def test_a_workspace_of_short_memories_ranks_as_before_and_forgetting_the_long_one_follows(
    mem: Episodic, monkeypatch: pytest.MonkeyPatch
) -> None:
    small: list[int] = []
    get = mem.store.rank_rows

    def counted(workspace_id: str, ids: Sequence[str]) -> dict[str, Any]:
        small.append(len(ids))
        return get(workspace_id, ids)

    monkeypatch.setattr(mem.store, "rank_rows", counted)
    long_ids = [
        r[0]
        for r in raw_rows(mem.store.url, "SELECT memory_id FROM memory_lengths WHERE chars > 1000")
    ]
    assert mem.store.longest("w") > PASSAGE_CHARS
    read = _counting(mem)
    _hits(mem)
    # A long memory in the workspace: a small row for every candidate below the leaders.
    assert sum(small) >= 70
    for memory_id in long_ids:
        mem.forget(workspace="w", memory=str(memory_id))
    # The longest memory left fits in a passage: no candidate pays the prior, and the
    # recall reads rows only for the candidates that can reach the top, whole for the
    # leaders, small below them.
    assert 0 < mem.store.longest("w") <= PASSAGE_CHARS
    small.clear()
    read.clear()
    short = _hits(mem)
    # Whole rows for the leaders alone (the first 2k places, k = 10): the rest of the
    # head is ranked from small rows.
    assert sum(read) <= 20 < sum(read) + sum(small) <= 45
    read.clear()
    learned = _hits(mem, policy=LEARNED)
    assert sum(read) <= 20 + K
    _whole_rows(monkeypatch)
    assert _hits(mem) == short
    assert _hits(mem, policy=LEARNED) == learned
    assert mem.store.longest("nobody") == 0


def _note(memory_id: str, text: str, minutes: int) -> dict[str, Any]:
    return {
        "id": memory_id,
        "workspace": "s",
        "type": "note",
        "refs": {"episodic": True},
        "summary": text,
        "ts": (NOW - timedelta(minutes=minutes)).isoformat(),
    }


def test_a_long_memory_written_after_a_recall_is_ranked_as_long_by_the_next(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = Episodic(store=open_store(db_url), embedder=FakeEmbedder(dim=64), clock=lambda: NOW)
    try:
        m.ingest([_note(f"n{i}", f"the harbour ferry timetable note {i}", i) for i in range(30)])
        m.index_once()
        every: list[bool] = []
        rank_rows = engine.rank_rows

        def spied(*args: Any) -> Any:
            rows = rank_rows(*args)
            every.append(rows is not None)
            return rows

        monkeypatch.setattr(engine, "rank_rows", spied)
        m.recall(QUESTION, workspace="s", mark=False, k=5)
        assert every == [False]  # every memory short: rows for the top only
        m.ingest([_note("long", "harbour ferry crossing " * 200, 0)])
        m.index_once()
        after = m.recall(QUESTION, workspace="s", mark=False, k=5, explain=True)
        # The next recall knows the workspace now holds a long memory: every candidate is
        # scored from its small row, and the long one pays the prior.
        assert every == [False, True]
        assert after.trace is not None
        stage = stage_of(after.trace)
        assert stage is not None
        assert after.trace.stages[stage]
        assert {r.memory_id: r.detail for r in after.trace.stages[stage]}["long"]["chars"] > (
            PASSAGE_CHARS
        )
        _whole_rows(monkeypatch)
        whole = m.recall(QUESTION, workspace="s", mark=False, k=5)
        assert [(h.id, h.score) for h in after.hits] == [(h.id, h.score) for h in whole.hits]
    finally:
        m.close()


def test_a_recall_asks_for_the_longest_memory_with_the_leaders_rows(pg_url: str) -> None:
    # On PostgreSQL every statement is a round trip: whether the workspace holds a long
    # memory comes in the statement that reads the leaders' whole rows, not one of its own.
    m = Episodic(store=open_store(pg_url), embedder=FakeEmbedder(dim=64), clock=lambda: NOW)
    try:
        m.ingest([_note(f"n{i}", f"the harbour ferry timetable note {i}", i) for i in range(30)])
        m.index_once()
        m.recall(QUESTION, workspace="s", mark=False, k=5)
        seen: list[str] = []
        m.store._tracer = lambda sql, params: seen.append(sql)  # type: ignore[attr-defined]
        hits = m.recall(QUESTION, workspace="s", mark=False, k=5).hits
        assert hits
        longest = [sql for sql in seen if "max(chars)" in sql]
        assert len(longest) == 1
        assert "JOIN memories" in longest[0]
    finally:
        m.close()
