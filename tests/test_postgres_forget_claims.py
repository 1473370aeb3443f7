"""A forget on PostgreSQL while an indexer is embedding a claimed batch: the forget waits
for that batch, and appends never queue behind the waiting forget (found under load: every
append queued behind a forget's table lock, itself queued behind a batch being embedded,
until the connection pool ran dry and requests got 503s)."""

from __future__ import annotations

import threading

import numpy as np

from episodic.store.base import ForgetSpec
from episodic.store.postgres import PostgresStore
from store_contract import event, remember

WAIT_S = 10  # far beyond any wait this test means: only a regression reaches it


def test_appends_go_on_while_a_forget_waits_for_a_batch_being_embedded(pg_url: str) -> None:
    with PostgresStore(pg_url) as store:
        remember(store, *[event(f"p{i}", summary=f"pending {i}") for i in range(3)])
        remember(store, event("gone", agent_id="ghost", summary="to forget"))
        embedding, appended = threading.Event(), threading.Event()
        outcome: dict[str, object] = {}

        def embed(texts: list[str]) -> np.ndarray:
            embedding.set()
            # The batch stays claimed until the append below has gone through.
            appended.wait(3 * WAIT_S)
            return np.ones((len(texts), 4), dtype=np.float32)

        def index() -> None:
            outcome["indexed"] = len(store.index_pending(10, "m", 4, embed))

        def forget() -> None:
            outcome["forgot"] = store.forget(ForgetSpec("acme", agent_id="ghost"), rekey=str)

        indexer = threading.Thread(target=index)
        indexer.start()
        assert embedding.wait(WAIT_S)
        remember(store, event("late", summary="pending, after the claim"))
        forgetter = threading.Thread(target=forget)
        forgetter.start()
        forgetter.join(0.5)  # the forget is now waiting for the claimed batch
        assert forgetter.is_alive()
        # While it waits, another process's indexer claims nothing new...
        with PostgresStore(pg_url) as other:
            quick = lambda texts: np.ones((len(texts), 4), dtype=np.float32)  # noqa: E731
            assert other.index_pending(10, "m", 4, quick) == []
            # ...and an append is not queued behind the waiting forget.
            writer = threading.Thread(
                target=lambda: remember(other, event("new", summary="written meanwhile"))
            )
            writer.start()
            writer.join(WAIT_S)
            assert not writer.is_alive(), "the append waited for the forget"
        appended.set()
        indexer.join(WAIT_S)
        forgetter.join(WAIT_S)
        assert outcome["indexed"] == 4  # the claimed batch was stored
        assert store.get_memories("acme", ["gone", "new"])[0].id == "new"
        assert store.stats("acme").memories == 5
