"""Recalls' searches leave a read connection to lookups, on both backends.

A recall's two legs each hold a read connection for its longest reads. With every search
connection busy, a key lookup, a write's own reads or getting a memory must still be
answered at once rather than wait for a leg to end; a further search waits for a search
connection instead of taking the last one.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from episodic.model import ScopeFilter
from episodic.store import SqliteStore
from episodic.store.postgres import PostgresStore
from episodic.store.search import LOOKUP_READS, search_reads
from store_contract import event, remember, sparse_ids

ACME = ScopeFilter("acme")
# A statement only the sparse leg runs, on each backend.
SEARCH_MARKER = {"sqlite": "memories_fts MATCH", "postgres": "to_tsquery"}


class SearchGate:
    """A tracer that stops every thread running a search statement until released."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.stopped = 0
        self.changed = threading.Condition()
        self.release = threading.Event()
        self.armed = False

    def __call__(self, sql: str, params: Sequence[Any]) -> None:
        if not self.armed or self.marker not in sql or self.release.is_set():
            return
        with self.changed:
            self.stopped += 1
            self.changed.notify_all()
        assert self.release.wait(30), "the gate was never released"

    def wait_for(self, count: int) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: self.stopped >= count, timeout=10)


def open_store(backend: str, request: pytest.FixtureRequest, tmp_path: Path, **kw: Any) -> Any:
    gate = SearchGate(SEARCH_MARKER[backend])
    if backend == "sqlite":
        store: Any = SqliteStore(tmp_path / "lookups.db", tracer=gate, readers=kw["reads"])
    else:
        url = request.getfixturevalue("pg_url")
        store = PostgresStore(url, tracer=gate, read_pool=kw["reads"], write_pool=2)
    return store, gate


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    yield request.param


def test_search_reads_keep_lookups_their_connections() -> None:
    assert LOOKUP_READS == 1
    assert [search_reads(n) for n in (1, 2, 3, 5, 9)] == [1, 1, 2, 4, 8]


def test_a_lookup_is_answered_while_searches_hold_their_connections(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    reads = 3  # two for searches, one kept for lookups
    store, gate = open_store(backend, request, tmp_path, reads=reads)
    try:
        remember(store, *[event(f"m{i}", summary=f"deploy step {i}") for i in range(5)])
        gate.armed = True
        answers: list[list[str]] = []
        searches = [
            threading.Thread(target=lambda: answers.append(sparse_ids(store, ACME, "deploy", 10)))
            for _ in range(reads)
        ]
        for thread in searches:
            thread.start()
        try:
            assert gate.wait_for(search_reads(reads)), "the searches never reached the gate"
            looked_up: list[list[str]] = []
            lookup = threading.Thread(
                target=lambda: looked_up.append(
                    [m.id for m in store.get_memories("acme", ["m1", "m3"])]
                )
            )
            lookup.start()
            lookup.join(10)
            # Before the searches are let go: the lookup did not wait for them.
            assert not lookup.is_alive(), "the lookup waited for the searches"
            assert [sorted(ids) for ids in looked_up] == [["m1", "m3"]]
            # The third search waits for a search connection; it never took the lookups'.
            assert gate.stopped == search_reads(reads)
        finally:
            gate.release.set()
            for thread in searches:
                thread.join(30)
        assert len(answers) == reads
        assert all(sorted(a) == [f"m{i}" for i in range(5)] for a in answers)
    finally:
        gate.release.set()
        store.close()


@pytest.mark.parametrize(("reads", "parallel"), [(2, False), (3, True), (5, True)])
def test_legs_run_side_by_side_only_with_two_search_connections(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path, reads: int, parallel: bool
) -> None:
    store, _ = open_store(backend, request, tmp_path, reads=reads)
    try:
        assert store.parallel_reads is parallel
        # Every read still answers, whatever the split.
        remember(store, event("m1", summary="deploy finished"))
        assert sparse_ids(store, ACME, "deploy", 5) == ["m1"]
        assert [m.id for m in store.get_memories("acme", ["m1"])] == ["m1"]
    finally:
        store.close()
