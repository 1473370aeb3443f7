"""Recall stays fast without changing what it returns: rows are read only for the
candidates that can still reach the top (time-aware queries included), and the decoded
rows a recall reuses never hide a write. Every test runs on SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from episodic import Episodic
from episodic.config import MAX_CONTENT_CHARS
from episodic.embed.fake import FakeEmbedder
from episodic.model import Memory, Query
from episodic.recall import engine
from episodic.recall.policies import DEFAULT
from episodic.scoring.prior import length_prior_floor
from episodic.store import open_store

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


@pytest.fixture
def mem(db_url: str) -> Iterator[Episodic]:
    m = Episodic(
        store=open_store(db_url), embedder=FakeEmbedder(dim=64), clock=lambda: NOW, llm=None
    )
    yield m
    m.close()


def event(i: str, summary: str, days: float) -> dict[str, Any]:
    return {
        "id": i,
        "workspace": "w",
        "type": "peer.escalation",
        "summary": summary,
        "ts": (NOW - timedelta(days=days)).isoformat(),
    }


class CountingStore:
    """The store, counting the rows the recall asks for."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.rows = 0

    def get_memories(self, workspace_id: str, ids: Sequence[str]) -> list[Memory]:
        self.rows += len(ids)
        found: list[Memory] = self.inner.get_memories(workspace_id, ids)
        return found

    def rank_rows(self, workspace_id: str, ids: Sequence[str]) -> dict[str, Any]:
        self.rows += len(ids)
        found: dict[str, Any] = self.inner.rank_rows(workspace_id, ids)
        return found

    def memories_and_longest(self, workspace_id: str, ids: Sequence[str]) -> tuple[Any, int]:
        self.rows += len(ids)
        found: tuple[Any, int] = self.inner.memories_and_longest(workspace_id, ids)
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def recall(mem: Episodic, text: str) -> tuple[list[tuple[str, float]], int, int]:
    """(hits, rows read, candidates fused) of a default recall of ``text``."""
    store = CountingStore(mem.store)
    vectors = engine.QueryVectors(FakeEmbedder(dim=64))
    query = Query(text=text, workspace_id="w", k=5)
    result = engine.run_recall(store, vectors, query, DEFAULT, now=NOW, mark=False)  # type: ignore[arg-type]
    fused = {c.memory_id for leg in result.legs.values() for c in leg}
    return [(h.id, h.score) for h in result.hits], store.rows, len(fused)


def test_a_time_aware_recall_reads_only_the_rows_that_can_reach_the_top(
    mem: Episodic, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Some memories match the query well, a hundred share one word with it; the query
    # names a time, so the time boost re-ranks, but it is bounded (the policy's floor
    # to 1) like the other factors: the weak matches cannot climb into the top.
    strong = [
        event(f"s{i}", f"database migration rollback failed on node {i}", i) for i in range(16)
    ]
    weak = [
        event(f"w{i}", f"weekly database lunch {i} menu pizza salad team", 3 + i % 30)
        for i in range(120)
    ]
    report = mem.ingest([*strong, *weak])
    assert report.admitted == 136
    mem.index_once()
    text = "database migration rollback failed last week"

    hits, rows, candidates = recall(mem, text)

    assert candidates > 60
    assert rows < candidates / 2
    # The same hits, scores and order as re-ranking every candidate.
    monkeypatch.setattr(engine, "split_head", lambda fused, *_: (list(fused), []))
    exact, all_rows, _ = recall(mem, text)
    assert hits == exact
    assert all_rows >= candidates
    assert len(hits) == 5 and all(i.startswith("s") for i, _ in hits)


def test_a_query_naming_no_asker_bounds_the_scope_factor_by_the_levels_it_can_give() -> None:
    # With nobody asking, no memory is at the asker's team level (x1.5): the bound that
    # decides which rows are read is the project level's x1.2.
    nobody = Query(text="q", workspace_id="w")
    agent = Query(text="q", workspace_id="w", agent_id="a")
    flat = dataclasses.replace(DEFAULT, length_prior=0.0)
    assert engine._factor_bounds(flat, nobody) == pytest.approx((0.7, 1.2))
    assert engine._factor_bounds(flat, agent) == pytest.approx((0.7, 1.5))
    # default's length prior lowers the least factor to what the longest memory keeps
    floor = length_prior_floor(DEFAULT.length_prior, MAX_CONTENT_CHARS)
    assert engine._factor_bounds(DEFAULT, nobody) == pytest.approx((0.7 * floor, 1.2))


def test_a_write_after_a_recall_is_seen_by_the_next_recall(mem: Episodic) -> None:
    report = mem.ingest([event("a", "the payment gateway timed out", 1)])
    assert report.admitted == 1
    mem.index_once()

    first = mem.recall("payment gateway", workspace="w", mark=False).hits
    assert [(h.id, h.memory.reference_count) for h in first] == [("a", 0)]
    # A recall that marks its hits writes the row; the next recall reads the new value.
    mem.recall("payment gateway", workspace="w")
    again = mem.recall("payment gateway", workspace="w", mark=False).hits
    assert [(h.id, h.memory.reference_count) for h in again] == [("a", 1)]
    assert again[0].memory.last_referenced_at == NOW

    mem.forget(workspace="w", memory="a")
    assert mem.recall("payment gateway", workspace="w", mark=False).hits == []
    report = mem.ingest([event("b", "the payment gateway is back", 0.5)])
    mem.index_once()
    assert [h.id for h in mem.recall("payment gateway", workspace="w", mark=False).hits] == ["b"]


def test_a_long_hit_found_by_its_own_vector_shows_its_whole_first_passage() -> None:
    # The first passage is found from the text's first PASSAGE_CHARS + 1 characters, not
    # by splitting all of it; it must end where splitting all of it would end it.
    from episodic.model import Candidate, Hit
    from episodic.scoring.passages import PASSAGE_CHARS, passage_spans

    for word in ("ab", "abcde", "a\nbc"):
        content = " ".join([word] * (3 * PASSAGE_CHARS // len(word)))
        memory = Memory(id="m", workspace="w", ts=NOW, type="message", content=content)
        hit = Hit(memory=memory, score=1.0, age_seconds=0.0)
        (shown,) = engine.shown_passages([hit], [Candidate("m", 0.9, 1)], "query")
        first = passage_spans(content)[0]
        # It ends on a word's end, short of PASSAGE_CHARS.
        assert shown.passage == (0, first.stop) and first.stop < PASSAGE_CHARS


def test_mmr_reads_the_words_of_only_the_candidates_it_compares(
    mem: Episodic, monkeypatch: pytest.MonkeyPatch
) -> None:
    # teaparty diversifies with MMR: a candidate's words are compared only when it is
    # about to be picked, so most of the pool is never tokenised.
    strong = [
        event(f"s{i}", f"database entry {i} on the {w} shelf", i)
        for i, w in enumerate(["kettle", "harbour", "violin", "meadow"])
    ]
    weak = [
        event(f"w{i}", f"entry {i} about lantern pebble saddle orbit {i * 7}", i) for i in range(60)
    ]
    notes = [*strong, *weak]
    mem.ingest(notes)
    mem.index_once()
    read: list[str] = []
    get = engine.TOKEN_SETS.get

    def counted(memory_id: str, text: str) -> frozenset[str]:
        read.append(memory_id)
        return get(memory_id, text)

    monkeypatch.setattr(engine.TOKEN_SETS, "get", counted)
    result = mem.recall("database entry", workspace="w", policy="teaparty", k=3)
    ranked = {c.memory_id for leg in result.legs.values() for c in leg}
    assert len(result.hits) == 3
    assert len(ranked) >= 12
    assert len(set(read)) <= len(ranked) / 2
