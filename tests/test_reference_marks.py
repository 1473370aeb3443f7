"""A server's batched reference marks and recall reviews, written in short transactions,
on both backends.

A busy server's recalls leave hundreds of marks a second. Written in one transaction they
held SQLite's writer long enough for every write to queue behind them; written in batches
of ``MARK_BATCH`` ids each, every memory still gets one mark per recall that returned it.
The pending review each marked recall records (seed 003) goes with its marks: a server's
recalls are reviewed as a library's are.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from episodic import Episodic, Settings
from episodic.embed.fake import FakeEmbedder
from episodic.http import asgi
from episodic.service.recalling import MARK_BATCH, ReferenceBuffer
from episodic.store import open_store
from episodic.store.upkeep import ReviewRequest
from servers import call, serve
from store_contract import event, remember

AT = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)


class Recorder:
    """The store as the buffer sees it, recording how many ids each write carried."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.sizes: list[int] = []
        self.review_sizes: list[int] = []

    def mark_referenced(self, workspace_id: str, ids: Sequence[str], at: datetime) -> None:
        self.sizes.append(len(ids))
        self.store.mark_referenced(workspace_id, ids, at)

    def add_reviews(self, reviews: Sequence[ReviewRequest]) -> None:
        self.review_sizes.append(len(reviews))
        self.store.add_reviews(reviews)


def test_a_flush_writes_every_mark_in_short_batches(db_url: str) -> None:
    count = 2 * MARK_BATCH + 10
    store = open_store(db_url)
    try:
        remember(store, *[event(f"m{i:03d}", summary=f"step {i}") for i in range(count)])
        remember(store, event("x1", "other", summary="another workspace"))
        recorder = Recorder(store)
        buffer = ReferenceBuffer(recorder, interval_s=3600)  # type: ignore[arg-type]
        returned: Counter[str] = Counter()
        # Recalls returning overlapping hits: some memories once, some two or three times.
        for start, stop in ((0, count), (0, MARK_BATCH + 5), (3, 20)):
            ids = [f"m{i:03d}" for i in range(start, stop)]
            buffer.add("acme", ids, AT)
            returned.update(ids)
        buffer.add("other", ["x1"], AT)
        buffer.flush()

        assert recorder.sizes and max(recorder.sizes) <= MARK_BATCH
        assert sum(recorder.sizes) == sum(returned.values()) + 1
        memories = store.get_memories("acme", [f"m{i:03d}" for i in range(count)])
        assert {m.id: m.reference_count for m in memories} == dict(returned)
        assert all(m.last_referenced_at == AT for m in memories)
        assert store.get_memories("other", ["x1"])[0].reference_count == 1
        # Nothing is written twice.
        recorder.sizes.clear()
        buffer.flush()
        assert recorder.sizes == []
    finally:
        store.close()


def test_a_flush_records_each_recalls_review_once_in_short_batches(db_url: str) -> None:
    store = open_store(db_url)
    try:
        remember(store, event("m1", summary="the deploy needs approval"))
        recorder = Recorder(store)
        buffer = ReferenceBuffer(recorder, interval_s=3600)  # type: ignore[arg-type]
        count = MARK_BATCH + 3
        for i in range(count):
            review = ReviewRequest("acme", f"query {i}", ("m1",), AT, (0.5,), agent_id="a1")
            buffer.add("acme", ["m1"], AT, review)
        buffer.add("acme", ["m1"], AT)  # a recall that records no review (reviews off)
        buffer.flush()

        assert recorder.review_sizes == [MARK_BATCH, 3]
        claimed = store.claim_reviews("h", AT, lease_s=60, limit=1000, workspace_id="acme")
        assert sorted(p.request.query for p in claimed) == sorted(
            f"query {i}" for i in range(count)
        )
        assert store.get_memory("acme", "m1").reference_count == count + 1
        recorder.review_sizes.clear()
        buffer.flush()
        assert recorder.review_sizes == []
    finally:
        store.close()


@pytest.mark.parametrize(
    ("reviews_on", "processes"), [(True, 0), (False, 0), (True, 1)], ids=["", "off", "workers"]
)
def test_a_servers_recalls_are_marked_and_reviewed_as_a_librarys(
    db_url: str, reviews_on: bool, processes: int
) -> None:
    """Seed 003: each marked recall records a pending review, which the review job rates
    by the conversation that follows. A server batches its marks; the reviews must not be
    lost on the way (they were: no recall through the HTTP API was ever reviewed), nor
    when the recalls run in worker processes (the server's process writes them)."""
    mem = Episodic(
        store=open_store(db_url),
        embedder=FakeEmbedder(dim=64),
        settings=Settings(review_recalls=reviews_on),
    )
    try:
        mem.remember(
            "refunds are charged twice when the retry fires",
            workspace="acme",
            conversation="support-7",
            id="r1",
        )
        mem.index_once()
        secret = mem.create_key("acme", role="admin")[1]
        with serve(asgi(mem, recall_processes=processes)) as base:
            asked = {"query": "refunds charged twice", "conversation": "support-7"}
            recalled = call(base, secret, "POST", "/v1/recall", asked)
            assert recalled.status_code == 200
            assert [h["id"] for h in recalled.json()["hits"]] == ["r1"]
            rendered = call(base, secret, "POST", "/v1/render", {"query": "refunds twice"})
            assert rendered.status_code == 200 and rendered.json()["hit_ids"] == ["r1"]
            unmarked = call(base, secret, "POST", "/v1/recall", {**asked, "mark": False})
            assert unmarked.status_code == 200
            mem.flush_marks()
            pending = mem.store.claim_reviews("t", AT, lease_s=1, limit=10, workspace_id="acme")
            assert mem.store.get_memory("acme", "r1").reference_count == 2
        if reviews_on:
            assert sorted((p.request.query, p.request.conversation_id) for p in pending) == [
                ("refunds charged twice", "support-7"),
                ("refunds twice", None),
            ]
            assert all(p.request.memory_ids == ("r1",) for p in pending)
        else:
            assert pending == []
    finally:
        mem.close()
