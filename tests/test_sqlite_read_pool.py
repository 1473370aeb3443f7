"""SQLite reads in parallel: one writer connection and a pool of read connections (WAL).

What a user of one store shared by many threads notices: a read does not wait for a write
in progress and sees only what was committed; answers under load equal the answers one at
a time; the dense index follows commits of any connection or process; closing the store
closes every connection, including one lent to a read at that moment."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from episodic.errors import InvalidInput, StoreError
from episodic.model import ScopeFilter
from episodic.store import SqliteStore
from episodic.store.dense import SharedLock
from episodic.store.sqlite.connection import DEFAULT_READERS, READERS_ENV, reader_count
from store_contract import DIM, MODEL, axis, dense_ids, event, memory_of, remember, sparse_ids

ACME = ScopeFilter("acme")
OTHER = ScopeFilter("other")
WORDS = ["deploy", "rollback", "incident", "database", "cache", "release", "alert", "queue"]


def seeded(path: Path, count: int = 120, **options: Any) -> SqliteStore:
    """A store with ``count`` memories in ``acme``, each with words and a vector."""
    store = SqliteStore(path, **options)
    rng = np.random.default_rng(7)
    events = [
        event(f"m{i:03d}", summary=f"{WORDS[i % 8]} {WORDS[(i * 3) % 8]} step {i}", minutes=i)
        for i in range(count)
    ]
    remember(store, *events)
    vectors = rng.normal(size=(count, DIM)).astype(np.float32)
    store.put_vectors(MODEL, DIM, [(e.id, v) for e, v in zip(events, vectors, strict=True)])
    return store


def recall_answers(store: SqliteStore, queries: Sequence[int]) -> list[Any]:
    """What a recall reads, for each query: the dense, sparse and recent legs and the
    memories themselves."""
    answers: list[Any] = []
    for q in queries:
        dense = dense_ids(store, ACME, axis(q % DIM), 10)
        answers.append(
            (
                dense,
                sparse_ids(store, ACME, WORDS[q % 8], 10),
                [c.memory_id for c in store.search_recent(ACME, 5)],
                [m.content for m in store.get_memories("acme", dense)],
            )
        )
    return answers


def db_handles(path: Path) -> int:
    """Open file descriptors of this process on the database file itself."""
    target = str(path.resolve())
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == target:
                count += 1
        except OSError:
            continue
    return count


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "pool.db"


class Gate:
    """A tracer that stops the thread running a chosen statement until released; with
    ``after``, only once a statement starting so has run on that thread."""

    def __init__(self, statement: str, after: str = "") -> None:
        self.statement = statement
        self.after = after
        self.armed = not after
        self.thread: int | None = None
        self.reached = threading.Event()
        self.release = threading.Event()

    def __call__(self, sql: str, params: Sequence[Any]) -> None:
        if threading.get_ident() != self.thread:
            return
        if self.armed and sql.startswith(self.statement):
            self.reached.set()
            assert self.release.wait(10), "the gate was never released"
        elif self.after and sql.startswith(self.after):
            self.armed = True


def hold(gate: Gate, action: Callable[[], Any]) -> threading.Thread:
    """Run ``action`` on a thread of its own, stopped at ``gate``'s statement."""

    def run() -> None:
        gate.thread = threading.get_ident()
        action()

    thread = threading.Thread(target=run)
    thread.start()
    assert gate.reached.wait(10), "the action never reached the gate"
    return thread


# -- reads beside a write ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("readers", "read_waits"),
    [(4, False), (0, True)],
    ids=["pooled readers read beside the write", "one connection waits for it"],
)
def test_a_read_does_not_wait_for_an_open_write(
    db_path: Path, readers: int, read_waits: bool
) -> None:
    gate = Gate("COMMIT", after="INSERT OR IGNORE INTO memories ")
    store = SqliteStore(db_path, tracer=gate, readers=readers)
    try:
        remember(store, event("m1", summary="deploy started"))
        store.put_vectors(MODEL, DIM, [("m1", axis(1))])
        # The write has inserted m2 and stops just before its COMMIT.
        writing = hold(gate, lambda: remember(store, event("m2", summary="deploy finished")))
        seen: list[Any] = []
        reading = threading.Thread(
            target=lambda: seen.append(
                (
                    sparse_ids(store, ACME, "deploy"),
                    [m.id for m in store.get_memories("acme", ["m1", "m2"])],
                    dense_ids(store, ACME, axis(0)),
                )
            )
        )
        reading.start()
        reading.join(1.5)
        assert reading.is_alive() is read_waits
        if not read_waits:
            # The read saw the last commit only.
            assert seen == [(["m1"], ["m1"], ["m1"])]
        gate.release.set()
        writing.join(10)
        reading.join(10)
        assert sorted(sparse_ids(store, ACME, "deploy")) == ["m1", "m2"]
    finally:
        gate.release.set()
        store.close()


def test_a_read_nested_in_a_write_sees_the_write_so_far(db_path: Path) -> None:
    with SqliteStore(db_path) as store:
        remember(store, event("m1", summary="as written"))
        with pytest.raises(RuntimeError, match="undo"), store._write():
            store._execute("UPDATE memories SET content = 'changed' WHERE id = 'm1'")
            # get_memory reads: on the writer's connection, so it sees the update.
            assert store.get_memory("acme", "m1").content == "changed"
            raise RuntimeError("undo")
        assert store.get_memory("acme", "m1").content == "as written"


# -- many threads at once ------------------------------------------------------------------
def test_recalls_and_writes_from_many_threads_equal_the_serial_answers(db_path: Path) -> None:
    queries = list(range(24))
    with seeded(db_path) as first:
        expected = recall_answers(first, queries)
    errors: list[BaseException] = []
    with SqliteStore(db_path) as store:

        def write(n: int) -> None:
            # Into another workspace: acme's answers must not move.
            for i in range(10):
                e = event(f"w{n}-{i}", ws="other", summary=f"deploy elsewhere {i}")
                store.append([e], [memory_of(e)])
                store.put_vectors(MODEL, DIM, [(e.id, axis(i % DIM))])

        def recall(_: int) -> list[Any]:
            return recall_answers(store, queries)

        with ThreadPoolExecutor(12) as pool:
            writers = [pool.submit(write, n) for n in range(3)]
            answers = list(pool.map(recall, range(12)))
            for w in writers:
                try:
                    w.result()
                except BaseException as exc:  # collected, asserted below
                    errors.append(exc)
        assert errors == []
        assert all(a == expected for a in answers)
        assert sum(store.count_memories(OTHER).values()) == 30
        assert len(dense_ids(store, OTHER, axis(0), 100)) == 30
        assert store.open_connections() <= 1 + DEFAULT_READERS


def test_searches_while_vectors_arrive_only_return_rows_with_their_true_scores(
    db_path: Path,
) -> None:
    rng = np.random.default_rng(3)
    vectors = {f"m{i:03d}": rng.normal(size=DIM).astype(np.float32) for i in range(300)}
    units = {k: v / np.linalg.norm(v) for k, v in vectors.items()}
    bad: list[str] = []
    with SqliteStore(db_path) as store:
        remember(store, *(event(k) for k in vectors))
        ids = list(vectors)
        done = threading.Event()

        def search() -> None:
            while not done.is_set():
                for hit in store.search_dense(ACME, axis(0), 20):
                    if abs(hit.score - float(units[hit.memory_id][0])) > 1e-5:
                        bad.append(hit.memory_id)

        searchers = [threading.Thread(target=search) for _ in range(4)]
        for t in searchers:
            t.start()
        for start in range(0, len(ids), 10):  # many small loads while searches run
            batch = ids[start : start + 10]
            store.put_vectors(MODEL, DIM, [(k, vectors[k]) for k in batch])
        done.set()
        for t in searchers:
            t.join()
        assert len(dense_ids(store, ACME, axis(0), 500)) == 300
    assert bad == []


# -- the dense index and other processes ---------------------------------------------------
def test_every_pooled_reader_sees_a_vector_another_process_wrote(db_path: Path) -> None:
    with seeded(db_path, count=20) as store:
        remember(store, event("late", summary="written later"))
        # Searches from several threads: several read connections, each with its stamp.
        with ThreadPoolExecutor(6) as pool:
            list(pool.map(lambda _: dense_ids(store, ACME, axis(7), 5), range(24)))
        assert "late" not in dense_ids(store, ACME, axis(7), 50)
        script = (
            "import sys, numpy as np\n"
            "from episodic.store import SqliteStore\n"
            "v = np.zeros(8, np.float32); v[7] = 1\n"
            "with SqliteStore(sys.argv[1]) as s:\n"
            f"    s.put_vectors({MODEL!r}, 8, [('late', v)])\n"
        )
        subprocess.run([sys.executable, "-c", script, str(db_path)], check=True, timeout=60)
        with ThreadPoolExecutor(6) as pool:
            firsts = list(pool.map(lambda _: dense_ids(store, ACME, axis(7), 1), range(24)))
        assert firsts == [["late"]] * 24


# -- lifecycle -------------------------------------------------------------------------------
def test_closing_while_a_read_is_lent_lets_it_finish_then_closes_everything(
    db_path: Path,
) -> None:
    gate = Gate("SELECT m.type, m.status, COUNT(*)")
    store = seeded(db_path, count=10, tracer=gate)
    with ThreadPoolExecutor(4) as pool:  # open a few readers
        list(pool.map(lambda _: store.search_recent(ACME, 3), range(8)))
    counted: list[int] = []
    reading = hold(gate, lambda: counted.append(sum(store.count_memories(ACME).values())))
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.search_recent(ACME, 3)
    with pytest.raises(StoreError, match="closed"):
        store.search_dense(ACME, axis(0), 3)
    gate.release.set()
    reading.join(10)
    assert counted == [10]
    assert store.open_connections() == 0
    assert db_handles(db_path) == 0


def test_a_burst_of_threads_leaves_at_most_the_pool_open(db_path: Path) -> None:
    with seeded(db_path, count=30, readers=3) as store:
        with ThreadPoolExecutor(32) as pool:
            list(pool.map(lambda q: recall_answers(store, [q]), range(200)))
        assert store.open_connections() <= 1 + 3
        assert db_handles(db_path) <= 1 + 3
    assert db_handles(db_path) == 0


def test_a_memory_store_keeps_one_connection_and_serves_threads() -> None:
    with SqliteStore(":memory:") as store:
        remember(store, event("m1", summary="deploy"))
        store.put_vectors(MODEL, DIM, [("m1", axis(0))])

        def work(n: int) -> list[str]:
            e = event(f"t{n}", summary="deploy too")
            store.append([e], [memory_of(e)])
            return sparse_ids(store, ACME, "deploy", 100)

        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(work, range(16)))
        assert all("m1" in a for a in answers)
        assert sum(store.count_memories(ACME).values()) == 17
        assert store.open_connections() == 1


def test_a_read_only_store_reads_from_several_threads(db_path: Path) -> None:
    with seeded(db_path, count=40) as writer:
        expected = recall_answers(writer, [1, 2, 3])
    with SqliteStore(db_path, read_only=True) as store:
        with ThreadPoolExecutor(6) as pool:
            answers = list(pool.map(lambda _: recall_answers(store, [1, 2, 3]), range(12)))
        assert all(a == expected for a in answers)
        with pytest.raises(StoreError, match="read-only"):
            remember(store, event("new"))


# -- settings ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "expected"),
    [(None, DEFAULT_READERS), ("", DEFAULT_READERS), ("0", 0), (" 8 ", 8), ("256", 256)],
)
def test_reader_count_from_the_environment(raw: str | None, expected: int) -> None:
    assert reader_count(raw) == expected


@pytest.mark.parametrize("raw", ["many", "-1", "257", "2.5"])
def test_a_bad_reader_count_names_the_setting(raw: str) -> None:
    with pytest.raises(InvalidInput, match=READERS_ENV):
        reader_count(raw)


def test_the_environment_sets_the_pool_size(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(READERS_ENV, "2")
    with seeded(db_path, count=10) as store:
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda q: recall_answers(store, [q]), range(40)))
        assert store.open_connections() <= 1 + 2


# -- the dense index's lock -----------------------------------------------------------------
def test_shared_holders_overlap_and_an_exclusive_one_waits_for_them() -> None:
    lock = SharedLock()
    inside = threading.Barrier(3, timeout=5)
    entered = threading.Event()
    order: list[str] = []

    def share(name: str) -> None:
        with lock.shared():
            inside.wait()  # all three inside at once, or this times out
            entered.set()
            time.sleep(0.05)
            order.append(name)

    sharers = [threading.Thread(target=share, args=(f"s{i}",)) for i in range(3)]
    for t in sharers:
        t.start()
    assert entered.wait(5)
    with lock.exclusive():
        order.append("x")
    for t in sharers:
        t.join()
    assert order[-1] == "x" and sorted(order[:3]) == ["s0", "s1", "s2"]


@pytest.fixture(autouse=True)
def _no_reader_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(READERS_ENV, raising=False)
    yield
