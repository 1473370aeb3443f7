"""Large batches reach PostgreSQL through COPY into a staging table (``_copy_insert``);
small ones row by row. Both paths must store the same rows and count the same way: every
test runs one batch each way into its own database and compares."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import psycopg
import pytest

from conftest import _create_db, _drop_db, _with_db
from episodic.errors import IdTaken
from episodic.model import Event, Memory
from episodic.store.base import AppendResult
from episodic.store.postgres import PostgresStore
from episodic.store.postgres import connection as pg_connection
from store_contract import event, memory_of

BIG = 450  # above COPY_MIN_ROWS


def _tables(url: str) -> dict[str, list[tuple[Any, ...]]]:
    with psycopg.connect(url) as conn:
        return {
            "events": conn.execute(
                "SELECT id, workspace_id, agent_id, ts, type, summary, payload, refs, admitted "
                "FROM events ORDER BY id"
            ).fetchall(),
            "memories": conn.execute(
                "SELECT id, workspace_id, content, payload, keys, base_importance, status, tsv "
                "FROM memories ORDER BY seq"
            ).fetchall(),
            "sources": conn.execute(
                "SELECT memory_id, event_id FROM memory_sources ORDER BY seq"
            ).fetchall(),
        }


@pytest.fixture
def two_urls(pg_url: str, pg_server: Any) -> Iterator[tuple[str, str]]:
    other = _create_db(pg_server)
    yield pg_url, _with_db(pg_server.get_uri(), other)
    _drop_db(pg_server, other)


def _both(
    urls: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
    write: Callable[[PostgresStore], AppendResult],
) -> tuple[AppendResult, AppendResult]:
    """``write`` on the first database through COPY, on the second row by row."""
    assert BIG >= pg_connection.COPY_MIN_ROWS
    with PostgresStore(urls[0]) as store:
        copied = write(store)
    monkeypatch.setattr(pg_connection, "COPY_MIN_ROWS", 10**9)
    with PostgresStore(urls[1]) as store:
        row_by_row = write(store)
    monkeypatch.undo()
    return copied, row_by_row


def _batch(start: int = 0, n: int = BIG, ws: str = "acme") -> tuple[list[Event], list[Memory]]:
    events = [
        event(
            f"e{i:04d}",
            ws,
            summary=f"deploy {i} of the checkout service ended with 'quotes' and \\ tabs\t",
            minutes=i,
            agent=f"a{i % 3}",
            payload={"n": i, "nested": {"ok": True}},
        )
        for i in range(start, start + n)
    ]
    memories = [memory_of(e) for e in events if int(e.id[1:]) % 2 == 0]
    return events, memories


def test_a_large_batch_stores_what_row_by_row_stores(
    two_urls: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    events, memories = _batch()
    # Duplicates inside the batch: the first of each id is kept, the rest counted.
    events += events[:5]
    memories += memories[:3]

    def write(store: PostgresStore) -> AppendResult:
        return store.append(events, memories)

    copied, row_by_row = _both(two_urls, monkeypatch, write)
    assert copied == row_by_row
    assert copied.events_inserted == BIG and copied.events_duplicate == 5
    assert copied.memories_inserted == len(memories) - 3
    assert _tables(two_urls[0]) == _tables(two_urls[1])


def test_a_large_batch_skips_stored_and_archived_ids_and_refuses_taken_ones(
    two_urls: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, first_mem = _batch(0, 300)
    second, second_mem = _batch(150, 300)  # half already stored

    def write(store: PostgresStore) -> AppendResult:
        store.append(first, first_mem)
        with psycopg.connect(store.url, autocommit=True) as conn:
            # An archived event id (as compaction leaves it) counts as a duplicate.
            conn.execute(
                "INSERT INTO events_archive (id, workspace_id, ts, type, severity, summary, "
                "payload, archived_at) SELECT id, workspace_id, ts, type, severity, summary, "
                "'{}', ts FROM events WHERE id = 'e0010'"
            )
            conn.execute("DELETE FROM memory_sources WHERE event_id = 'e0010'")
            conn.execute("DELETE FROM memories WHERE id = 'e0010'")
            conn.execute("DELETE FROM events WHERE id = 'e0010'")
        again = [event("e0010", summary="back again"), *second]
        result = store.append(again, second_mem)
        taken, _ = _batch(1000, 250, ws="other")
        taken.append(event("e0001", "other", summary="someone else's id"))
        with pytest.raises(IdTaken) as refused:
            store.append(taken, [])
        assert refused.value.ids == ["e0001"]
        return result

    copied, row_by_row = _both(two_urls, monkeypatch, write)
    assert (
        copied
        == row_by_row
        == AppendResult(events_inserted=150, events_duplicate=151, memories_inserted=75)
    )
    assert _tables(two_urls[0]) == _tables(two_urls[1])
    # Nothing of the refused batch was written.
    assert not [r for r in _tables(two_urls[0])["events"] if r[1] == "other"]


def test_large_vector_batches_store_what_row_by_row_stores(
    two_urls: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    events, memories = _batch()
    rng = np.random.default_rng(3)
    rows = [(m.id, rng.normal(size=8).astype(np.float32)) for m in memories]
    # A repeated id keeps its last vector and counts twice; an unknown id is skipped.
    rows += [(memories[0].id, np.ones(8, dtype=np.float32)), ("nobody", np.ones(8))]

    def write(store: PostgresStore) -> AppendResult:
        store.append(events, memories)
        written = store.put_vectors("m", 8, rows)
        assert written == len(rows) - 1
        again = store.put_vectors("m", 8, rows[1:211])  # replacing is writing
        assert again == 210
        return AppendResult(events_inserted=written, events_duplicate=0, memories_inserted=0)

    _both(two_urls, monkeypatch, write)

    def vectors(url: str) -> list[tuple[Any, ...]]:
        with psycopg.connect(url) as conn:
            return conn.execute(
                "SELECT memory_id, workspace_id, vector::text, dim, model FROM memory_vectors "
                "ORDER BY memory_id"
            ).fetchall()

    stored = vectors(two_urls[0])
    assert stored == vectors(two_urls[1])
    assert len(stored) == len(memories)
    first = next(r for r in stored if r[0] == memories[0].id)
    assert first[2] == "[" + ",".join(["0.35355338"] * 8) + "]"
