"""The background sweeper while the database is unreachable: it backs off (doubling
waits, capped) and resumes at the normal pace once the database answers again, having
lost nothing; and a backlog that outlasts the poll interval does not hold back the work
after the sweeps."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from episodic.embed.base import Matrix
from episodic.embed.fake import FakeEmbedder
from episodic.errors import StoreBusy, StoreUnavailable
from episodic.store import SqliteStore
from episodic.store.base import PendingVector, Vector
from episodic.write.indexer import MAX_BACKOFF_S, Indexer, backoff_s
from store_contract import event, remember


@pytest.mark.parametrize(
    ("interval", "outages", "wait"),
    [
        (30.0, 1, 1.0),
        (30.0, 2, 2.0),
        (30.0, 3, 4.0),
        (30.0, 6, 32.0),
        (30.0, 7, MAX_BACKOFF_S),
        (30.0, 50, MAX_BACKOFF_S),
        (0.1, 1, 0.1),
        (0.1, 4, 0.8),
    ],
)
def test_backoff_doubles_from_a_second_up_to_the_cap(
    interval: float, outages: int, wait: float
) -> None:
    assert backoff_s(interval, outages) == pytest.approx(wait)


DOWN = StoreUnavailable("PostgreSQL at db:5432 is unreachable (test)")


class FlakyStore(SqliteStore):
    """A store whose database is 'down' (or busy: ``fails_with``) for the first ``down``
    sweeps."""

    def __init__(
        self,
        down: int,
        fails_with: Exception = DOWN,
    ) -> None:
        super().__init__(":memory:")
        self.down = down
        self.fails_with = fails_with
        self.calls: list[float] = []

    def index_pending(
        self, limit: int, model_id: str, dim: int, embed: Callable[[list[str]], Vector]
    ) -> list[tuple[PendingVector, Vector]]:
        self.calls.append(time.monotonic())
        if len(self.calls) <= self.down:
            raise self.fails_with
        return super().index_pending(limit, model_id, dim, embed)


def test_the_sweeper_backs_off_while_the_database_is_down_then_indexes_everything() -> None:
    store = FlakyStore(down=3)
    remember(store, *(event(f"e{i}", summary=f"deploy step {i}") for i in range(5)))
    indexer = Indexer(store, FakeEmbedder(dim=8), interval_s=0.1, link_similar=False)
    done = threading.Event()
    seen: list[Any] = []

    def after() -> None:
        seen.append(store.stats().pending_vectors)
        if seen[-1] == 0:
            done.set()

    indexer.after_sweep = after
    indexer.start()
    try:
        assert done.wait(10), "the sweeper never resumed"
    finally:
        indexer.stop()
    assert store.stats().vectors == 5
    gaps = [b - a for a, b in zip(store.calls, store.calls[1:], strict=False)][:3]
    # 0.1 s, 0.2 s, 0.4 s after the three failures: each wait longer than the last.
    assert gaps[0] >= 0.09 and gaps[1] >= 0.19 and gaps[2] >= 0.39
    store.close()


def test_a_busy_database_keeps_the_normal_pace() -> None:
    store = FlakyStore(down=4, fails_with=StoreBusy("PostgreSQL at db:5432 is busy (test)"))
    remember(store, *(event(f"e{i}", summary=f"deploy step {i}") for i in range(5)))
    indexer = Indexer(store, FakeEmbedder(dim=8), interval_s=0.1, link_similar=False)
    done = threading.Event()
    indexer.after_sweep = lambda: done.set() if not store.stats().pending_vectors else None
    indexer.start()
    try:
        assert done.wait(10), "the sweeper never got through"
    finally:
        indexer.stop()
    assert store.stats().vectors == 5
    gaps = [b - a for a, b in zip(store.calls, store.calls[1:], strict=False)][:4]
    # Backing off would have waited 0.1, 0.2, 0.4, 0.8 s: busy waits the interval each time.
    assert all(gap < 0.35 for gap in gaps), gaps
    store.close()


class SlowEmbedder(FakeEmbedder):
    """The fake embedder, taking ``pause`` seconds a batch (a backlog that lasts)."""

    def __init__(self, pause: float) -> None:
        super().__init__(dim=8)
        self.pause = pause

    def embed_batch(self, texts: Sequence[str]) -> Matrix:
        time.sleep(self.pause)
        return super().embed_batch(texts)


def test_a_backlog_longer_than_the_interval_still_lets_the_work_after_sweeps_run() -> None:
    # One memory a sweep, 0.05 s each, 40 pending: ~2 s of full sweeps against a 0.2 s
    # interval. The work after the sweeps (segmenting conversations) must not wait for
    # the backlog to drain.
    store = SqliteStore(":memory:")
    remember(store, *(event(f"e{i}", summary=f"deploy step {i}") for i in range(40)))
    indexer = Indexer(store, SlowEmbedder(0.05), batch=1, interval_s=0.2, link_similar=False)
    pending_then: list[int] = []
    drained = threading.Event()

    def after() -> None:
        pending_then.append(store.stats().pending_vectors)
        if pending_then[-1] == 0:
            drained.set()

    indexer.after_sweep = after
    indexer.start()
    try:
        assert drained.wait(30), "the indexer never drained"
    finally:
        indexer.stop()
    assert store.stats().vectors == 40
    assert any(n > 0 for n in pending_then), pending_then
    store.close()
