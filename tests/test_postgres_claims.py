"""An indexer's claim on PostgreSQL while its batch is being embedded: nothing else waits
for the model. Found under load: with the rows locked through the embedding, a recall's
reference bump on a memory being indexed waited for the batch, a forget waited too, and
every append queued behind that forget, until the connection pool ran dry and requests
got 503s."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import psycopg
import pytest

from episodic.model import utcnow
from episodic.store.base import ForgetSpec
from episodic.store.postgres import PostgresStore
from store_contract import event, remember

WAIT_S = 10  # far beyond any wait this test means: only a regression reaches it


def ones(texts: list[str]) -> np.ndarray:
    return np.ones((len(texts), 4), dtype=np.float32)


def in_thread(work: Callable[[], object]) -> None:
    """Run ``work`` and fail unless it is done well before the batch is."""
    failure: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # reported below, in the test's thread
            failure.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(WAIT_S)
    assert not thread.is_alive(), f"{work} waited for the batch being embedded"
    assert not failure, failure


def test_nothing_waits_for_a_batch_being_embedded(pg_url: str) -> None:
    with PostgresStore(pg_url) as store, PostgresStore(pg_url) as other:
        remember(store, *[event(f"p{i}", summary=f"pending {i}") for i in range(3)])
        remember(store, event("gone", agent="ghost", summary="to forget"))
        remember(store, event("moved", summary="to rewrite"))
        embedding, release = threading.Event(), threading.Event()
        outcome: dict[str, object] = {}

        def slow(texts: list[str]) -> np.ndarray:
            embedding.set()
            release.wait(3 * WAIT_S)  # the batch stays claimed until the checks are done
            return ones(texts)

        def index() -> None:
            outcome["indexed"] = [p.memory_id for p, _ in store.index_pending(10, "m", 4, slow)]

        indexer = threading.Thread(target=index)
        indexer.start()
        assert embedding.wait(WAIT_S)
        # A recall bumps a claimed memory, another process appends, forgets one claimed
        # memory and rewrites another (as compaction does): none of it waits.
        in_thread(lambda: other.mark_referenced("acme", ["p0", "p1"], utcnow()))
        in_thread(lambda: remember(other, event("late", summary="pending, after the claim")))
        in_thread(lambda: other.forget(ForgetSpec("acme", agent_id="ghost"), rekey=str))
        with psycopg.connect(pg_url, autocommit=True) as raw:
            raw.execute("UPDATE memories SET content = 'rewritten' WHERE id = 'moved'")
        # A second indexer skips the claimed rows and takes the new one.
        in_thread(
            lambda: outcome.update(
                other=[p.memory_id for p, _ in other.index_pending(10, "m", 4, ones)]
            )
        )
        assert outcome["other"] == ["late"]
        release.set()
        indexer.join(WAIT_S)
        # The batch stored the rows still as they were embedded, and nothing else.
        assert sorted(outcome["indexed"]) == ["p0", "p1", "p2"]  # type: ignore[call-overload]
        assert store.get_memories("acme", ["gone"]) == []
        [p0] = store.get_memories("acme", ["p0"])
        assert p0.reference_count == 1
        # The rewritten memory is pending again for the next sweep, with its new text.
        assert [(p.memory_id, p.content) for p in store.pending_vectors(10)] == [
            ("moved", "rewritten")
        ]


def test_a_claim_is_released_when_its_embedding_fails(pg_url: str) -> None:
    with PostgresStore(pg_url) as store:
        remember(store, *[event(f"e{i}", summary=f"pending {i}") for i in range(3)])

        def broken(texts: list[str]) -> np.ndarray:
            raise RuntimeError("embedder down")

        with pytest.raises(RuntimeError):
            store.index_pending(10, "m", 4, broken)
        # Another sweep takes the same rows at once.
        assert len(store.index_pending(10, "m", 4, ones)) == 3
        assert store.pending_vectors(10) == []
