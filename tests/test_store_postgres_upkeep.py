"""PostgresStore upkeep beyond the shared contract: the decay formulas in SQL against
their Python twins, and what only a server shared by several processes needs (claims,
leases and nudges raced by threads, each with its own store and connections).

Rows are written with plain SQL so these tests need nothing but the upkeep methods."""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import psycopg
import pytest

from episodic.scoring.decay import decayed_importance, prominence_importance
from episodic.store.base import Merge, ReviewRequest
from episodic.store.postgres import PostgresStore, upkeep
from episodic.store.sqlite import ts_text

NOW = datetime(2027, 4, 5, 6, 7, 8, 901234, tzinfo=UTC)
THREADS = 8
T = TypeVar("T")


@pytest.fixture
def store(pg_url: str) -> Iterator[PostgresStore]:
    s = PostgresStore(pg_url)
    yield s
    s.close()


def put_memory(
    conn: psycopg.Connection[Any],
    id: str,
    ts: datetime,
    *,
    ws: str = "acme",
    base: float = 0.5,
    refs: int = 0,
    status: str = "active",
    payload: str = "{}",
) -> None:
    """A memory (and the event it cites) as the writes mixin would store it."""
    stamp = ts_text(ts)
    conn.execute(
        "INSERT INTO events (id, workspace_id, ts, type, severity, summary, admitted, "
        "created_at) VALUES (%s, %s, %s, 'note', 'info', %s, 1, %s)",
        (id, ws, stamp, f"event {id}", stamp),
    )
    conn.execute(
        "INSERT INTO memories (id, workspace_id, ts, type, severity, content, payload, "
        "base_importance, importance, reference_count, status, created_at, updated_at) "
        "VALUES (%s, %s, %s, 'note', 'info', %s, %s, %s, %s, %s, %s, %s, %s)",
        (id, ws, stamp, f"event {id}", payload, base, base, refs, status, stamp, stamp),
    )
    conn.execute("INSERT INTO memory_sources (memory_id, event_id) VALUES (%s, %s)", (id, id))


def importances(url: str) -> dict[str, float]:
    with psycopg.connect(url) as conn:
        return dict(conn.execute("SELECT id, importance FROM memories").fetchall())


def race(url: str, n: int, work: Callable[[PostgresStore, int], T]) -> list[T]:
    """``work(store, i)`` in ``n`` threads at once, each with its own store."""
    stores = [PostgresStore(url, pool_max=1) for _ in range(n)]
    start = threading.Barrier(n)

    def run(i: int) -> T:
        start.wait()
        return work(stores[i], i)

    try:
        with ThreadPoolExecutor(n) as pool:
            return list(pool.map(run, range(n)))
    finally:
        for s in stores:
            s.close()


# -- decay ------------------------------------------------------------------------------
@pytest.mark.parametrize("formula", ["crewship", "prominence"])
def test_decay_in_sql_equals_the_python_formula(
    store: PostgresStore, pg_url: str, formula: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Fractional ages down to the microsecond, a future timestamp (age 0), many
    # reference counts; small chunks so the work spans several transactions.
    monkeypatch.setattr(upkeep, "DECAY_CHUNK_ROWS", 7)
    rng = random.Random(5)
    want: dict[str, float] = {}
    with psycopg.connect(pg_url) as conn:
        for i in range(60):
            age = timedelta(seconds=rng.uniform(-3 * 86_400, 500 * 86_400))
            base, refs = rng.uniform(0.05, 1.0), rng.choice([0, 1, 2, 3, 7, 40])
            # Seed 000's count in its column, seed 001's in the payload.
            uses = json.dumps({"reinforcement_count": refs})
            put_memory(conn, f"m{i:02}", NOW - age, base=base, refs=refs, payload=uses)
            days = age.total_seconds() / 86_400.0
            fn = decayed_importance if formula == "crewship" else prominence_importance
            want[f"m{i:02}"] = fn(base, days, refs)
    assert store.decay_importance(NOW, formula=formula) == 60
    got = importances(pg_url)
    for memory_id, value in want.items():
        assert got[memory_id] == pytest.approx(value, abs=1e-9), memory_id
    assert store.decay_importance(NOW, formula=formula) == 0  # idempotent, nothing written
    assert importances(pg_url) == got


def test_decay_of_one_workspace_in_chunks(
    store: PostgresStore, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(upkeep, "DECAY_CHUNK_ROWS", 2)
    with psycopg.connect(pg_url) as conn:
        for i in range(9):
            put_memory(conn, f"a{i}", NOW - timedelta(days=30 + i), ws="acme" if i % 3 else "beta")
        put_memory(conn, "old", NOW - timedelta(days=90), status="retired")
    assert store.decay_importance(NOW, workspace_id="acme") == 6
    got = importances(pg_url)
    assert [got[f"a{i}"] == 0.5 for i in range(9)] == [i % 3 == 0 for i in range(9)]
    assert got["old"] == 0.5
    assert store.decay_importance(NOW) == 3


# -- payload edits keep the stored JSON as SQLite's json_set writes it -------------------
def test_retirement_and_compaction_keep_the_payload_text_shape(
    store: PostgresStore, pg_url: str
) -> None:
    payload = json.dumps({"phase": "p1", "domain": "task", "n": 1e20, "é": "ü"},
                         ensure_ascii=False, separators=(",", ":"))  # fmt: skip
    with psycopg.connect(pg_url) as conn:
        for name in ("r1", "a", "b"):
            put_memory(
                conn, name, NOW, payload=payload.replace("p1", "p2") if name != "r1" else payload
            )
    assert store.retire_phase("acme", "p1", NOW) == ["r1"]
    merge = Merge("a", (("b", 0.9),), "event a", 0.5, 0.5, 0, None, NOW)
    assert store.compact_memories("acme", [merge], NOW) == 1
    with psycopg.connect(pg_url) as conn:
        rows = dict(conn.execute("SELECT id, payload FROM memories WHERE status <> 'active'"))
    assert rows == {
        "r1": payload[:-1] + f',"status":"retired","retired_at":"{ts_text(NOW)}"}}',
        "b": payload.replace("p1", "p2")[:-1] + ',"compacted_into":"a"}',
    }


def test_a_payload_that_jsonb_refuses_does_not_break_upkeep(
    store: PostgresStore, pg_url: str
) -> None:
    # JSON text may escape a NUL ("\u0000"); PostgreSQL's jsonb refuses it. Such a row must
    # read as "no keys", not fail every upkeep query of its workspace.
    nul = json.dumps({"phase": "p1", "domain": "task", "flashbulb": True, "note": "a\x00b"})
    with psycopg.connect(pg_url) as conn:
        put_memory(conn, "bad", NOW, payload=nul)
        put_memory(conn, "ok", NOW, payload='{"phase": "p1", "domain": "task"}')
    assert store.consolidation_backlog("acme").unconsolidated >= 2
    assert store.retire_phase("acme", "p1", NOW) == ["ok"]


# -- several processes -------------------------------------------------------------------
def test_one_lease_holder_among_racing_processes(pg_url: str) -> None:
    for round_ in range(5):
        got = race(
            pg_url,
            THREADS,
            lambda s, i, r=round_: s.acquire_lease("decay", f"ws{r}", f"p{i}", NOW, 60),
        )
        assert sum(got) == 1, got
    # Expired: exactly one of the racers takes it over.
    later = NOW + timedelta(seconds=61)
    got = race(pg_url, THREADS, lambda s, i: s.acquire_lease("decay", "ws0", f"q{i}", later, 60))
    assert sum(got) == 1, got


def test_no_review_is_claimed_twice(store: PostgresStore, pg_url: str) -> None:
    ids = [store.add_review(ReviewRequest("acme", "q", (f"m{i}",), NOW)) for i in range(120)]

    def claim_all(s: PostgresStore, i: int) -> list[int]:
        mine: list[int] = []
        while batch := s.claim_reviews(f"h{i}", NOW, lease_s=300, limit=3):
            mine += [p.id for p in batch]
        return mine

    claimed = Counter(i for batch in race(pg_url, THREADS, claim_all) for i in batch)
    assert sorted(claimed) == sorted(ids)
    assert set(claimed.values()) == {1}


def test_one_nudge_per_session_among_racing_processes(pg_url: str) -> None:
    for session in ("s1", "s2", "s3"):
        got = race(pg_url, THREADS, lambda s, i, x=session: s.claim_nudge("acme", "a1", x, i, NOW))
        assert sum(got) == 1, got


def test_overlapping_consolidations_one_wins(store: PostgresStore, pg_url: str) -> None:
    with psycopg.connect(pg_url) as conn:
        for name in "abcdefgh":
            put_memory(conn, name, NOW)

    def consolidate(s: PostgresStore, i: int) -> bool:
        # Every racer names "a" among its members, in different orders.
        members = ["a", *"bcdefgh"[i % 7 :], *"bcdefgh"[: i % 7]][: 2 + i % 3]
        return s.store_consolidation("acme", [], [], members[::-1] if i % 2 else members, NOW)

    assert sum(race(pg_url, THREADS, consolidate)) == 1


def test_racing_archivers_move_each_event_once(store: PostgresStore, pg_url: str) -> None:
    with psycopg.connect(pg_url) as conn:
        for i in range(50):
            put_memory(conn, f"e{i:02}", NOW - timedelta(days=100, minutes=i))
    moved = race(pg_url, 4, lambda s, i: s.archive_events(NOW, limit=20))
    assert sum(moved) == 50
    with psycopg.connect(pg_url) as conn:
        row = conn.execute("SELECT count(*), count(DISTINCT id) FROM events_archive").fetchone()
    assert row == (50, 50)
