"""A server's batched reference marks, written in short transactions, on both backends.

A busy server's recalls leave hundreds of marks a second. Written in one transaction they
held SQLite's writer long enough for every write to queue behind them; written in batches
of ``MARK_BATCH`` ids each, every memory still gets one mark per recall that returned it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from episodic.service.recalling import MARK_BATCH, ReferenceBuffer
from episodic.store import open_store
from store_contract import event, remember

AT = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)


class Recorder:
    """The store as the buffer sees it, recording how many ids each write carried."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.sizes: list[int] = []

    def mark_referenced(self, workspace_id: str, ids: Sequence[str], at: datetime) -> None:
        self.sizes.append(len(ids))
        self.store.mark_referenced(workspace_id, ids, at)


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
