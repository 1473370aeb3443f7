"""The scheduler (what runs when) and jobs run twice at once on one database (a SQLite
file, or PostgreSQL): no double work, no lost update."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from conftest import raw_rows
from episodic import Episodic, InvalidInput, Settings
from episodic.embed.fake import FakeEmbedder
from episodic.model import ScopeFilter
from episodic.store import open_store
from episodic.upkeep.consolidate import CONSOLIDATED_TYPE, consolidate
from episodic.upkeep.scheduler import scheduled_before

NOON = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
CACHE = "checkout pod OOM killed after the cache TTL change in production"
RANK = "ranking model NDCG regression detected after the feature removal"


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def events(ws: str = "acme") -> list[dict[str, Any]]:
    texts = [CACHE + " again", CACHE + " twice", RANK + " today", RANK + " in staging"]
    return [
        {
            "id": f"{ws}-{i}",
            "workspace": ws,
            "agent": "a1",
            "type": "peer.escalation",
            "summary": t,
            "ts": (NOON - timedelta(days=1, minutes=10 - i)).isoformat(),
        }
        for i, t in enumerate(texts)
    ]


def open_svc(url: str, clock: Clock) -> Episodic:
    return Episodic(
        store=open_store(url), embedder=FakeEmbedder(dim=1024), settings=Settings(), clock=clock
    )


@pytest.fixture
def db(db_url: str) -> str:
    with open_svc(db_url, Clock(NOON)) as mem:
        mem.ingest(events("acme") + events("beta"))
        mem.index_once()
    return db_url


@pytest.mark.parametrize(
    ("now", "clock", "expected"),
    [
        ("2026-11-24T12:00", "03:00", "2026-11-24T03:00"),
        ("2026-11-24T02:59", "03:00", "2026-11-23T03:00"),
        ("2026-11-24T03:00", "03:00", "2026-11-24T03:00"),
    ],
)
def test_scheduled_before(now: str, clock: str, expected: str) -> None:
    at = datetime.fromisoformat(now).replace(tzinfo=UTC)
    assert scheduled_before(at, clock) == datetime.fromisoformat(expected).replace(tzinfo=UTC)


def ran(results: list[Any]) -> list[tuple[str, str]]:
    return sorted((r.job, r.scope) for r in results if r.status == "ok")


def test_what_runs_when(db: str) -> None:
    clock = Clock(NOON)
    with open_svc(db, clock) as mem:
        sched = mem.scheduler()
        # First tick of the day, after 03:00 and 04:00: everything is due.
        assert ran(sched.run_pending()) == [
            ("compact", "acme"),
            ("compact", "beta"),
            ("consolidate", "acme"),
            ("consolidate", "beta"),
            ("decay", ""),
            ("health", "acme"),
            ("health", "beta"),
            ("reviews", ""),
        ]
        assert mem.memory_health("acme") is not None
        clock.now = NOON + timedelta(minutes=1)
        assert ran(sched.run_pending()) == []
        clock.now = NOON + timedelta(minutes=6)  # the review period (300 s) has passed
        assert ran(sched.run_pending()) == [("reviews", "")]
        clock.now = NOON + timedelta(hours=15, minutes=30)  # 03:30 next day
        assert ("decay", "") in ran(sched.run_pending())
        clock.now = NOON + timedelta(hours=16, minutes=5)  # 04:05 next day
        daily = ran(sched.run_pending())
        assert ("health", "acme") in daily and ("decay", "") not in daily


def test_a_backlog_triggers_consolidation_on_the_review_tick(db: str) -> None:
    clock = Clock(NOON)
    with Episodic(
        store=open_store(db),
        embedder=FakeEmbedder(dim=1024),
        settings=Settings(consolidate_threshold=4, daily_at="23:59", decay_at="23:59"),
        clock=clock,
    ) as mem:
        results = mem.scheduler().run_pending()
        triggered = [r for r in results if r.job == "consolidate"]
        assert {r.scope for r in triggered} == {"acme", "beta"}
        assert all(r.detail["trigger"] == "threshold" for r in triggered)


def test_the_thread_starts_ticks_and_stops(db: str) -> None:
    with open_svc(db, Clock(NOON)) as mem:
        sched = mem.scheduler(tick_s=0.05)
        sched.start()
        deadline = time.monotonic() + 10
        while mem.store.last_run("health", "beta") is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sched.running
        sched.stop()
        assert not sched.running
        assert mem.store.last_run("decay", "") is not None


# -- two at once ---------------------------------------------------------------------------
def derived_count(db: str) -> int:
    sql = f"SELECT count(*) FROM memories WHERE type = '{CONSOLIDATED_TYPE}'"
    return int(raw_rows(db, sql)[0][0])


def test_two_consolidations_at_once_do_the_work_once(db: str) -> None:
    """The lease: the second runner is skipped while the first works."""
    barrier = threading.Barrier(2)
    results: dict[str, Any] = {}
    errors: list[BaseException] = []

    def runner(name: str, slow: bool) -> None:
        try:
            with open_svc(db, Clock(NOON)) as mem:
                if slow:
                    scan = mem.store.scan_memories

                    def slow_scan(*a: Any, **k: Any) -> Any:
                        time.sleep(0.5)
                        return scan(*a, **k)

                    mem.store.scan_memories = slow_scan  # type: ignore[method-assign]
                    barrier.wait()
                else:
                    barrier.wait()
                    time.sleep(0.1)  # start while the slow one holds the lease
                results[name] = mem.consolidate(workspace="acme")[0]
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [
        threading.Thread(target=runner, args=("slow", True)),
        threading.Thread(target=runner, args=("fast", False)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    assert (results["slow"].status, results["fast"].status) == ("ok", "skipped")
    assert derived_count(db) == 2  # one per cluster


def test_without_the_lease_the_claim_still_keeps_work_single(db: str) -> None:
    """Two consolidations that planned the same clusters race to store them: the store's
    claim lets one win each cluster and refuses the other whole."""
    barrier = threading.Barrier(2, timeout=10)
    reports: list[Any] = []
    errors: list[BaseException] = []

    def runner() -> None:
        try:
            store = open_store(db)
            save = store.store_consolidation

            def in_step(*a: Any, **k: Any) -> bool:
                barrier.wait()  # both planned the cluster; now both try to store it
                return save(*a, **k)

            store.store_consolidation = in_step  # type: ignore[method-assign]
            reports.append(consolidate(store, "acme", now=NOON, llm=None))
            store.close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=runner) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    assert sorted(len(r.derived) for r in reports) == [1, 1] or sorted(
        len(r.derived) for r in reports
    ) == [0, 2]
    assert sum(r.taken_elsewhere for r in reports) == 2
    assert derived_count(db) == 2


def test_two_review_jobs_at_once_rate_each_recall_once(db: str) -> None:
    clock = Clock(NOON)
    with open_svc(db, clock) as mem:
        for i in range(20):
            mem.recall(
                "checkout cache TTL", workspace="acme", policy="bm25", review_conversation=f"k{i}"
            )
            mem.add_message(
                "the cache TTL change made checkout OOM",
                workspace="acme",
                conversation=f"k{i}",
                role="assistant",
                ts=NOON + timedelta(minutes=1),
            )
    clock.now = NOON + timedelta(minutes=5)
    barrier = threading.Barrier(2)
    outcomes: list[Any] = []

    def runner() -> None:
        with open_svc(db, clock) as mem:
            barrier.wait()
            outcomes.append(mem.run_reviews())

    threads = [threading.Thread(target=runner) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    rated = sum(o.detail.get("reviews", 0) for o in outcomes if o.status == "ok")
    assert rated == 20
    closed = raw_rows(db, "SELECT count(*) FROM memory_reviews WHERE reviewed_at IS NOT NULL")
    assert closed == [(20,)]
    with open_svc(db, clock) as mem:
        # Each memory was reviewed once (a second review within the day is skipped), so
        # its FSRS state is that of one first review: easy for acme-0, whose words the
        # output repeats (5 of 8), good for acme-1 (5 of 9).
        a0, a1 = mem.store.get_memories("acme", ["acme-0", "acme-1"])
        assert a0.last_reviewed_at == a1.last_reviewed_at == clock.now
        assert (a0.stability, a1.stability) == pytest.approx((8.2956, 2.3065))


def test_decay_while_recalls_mark_references_loses_no_update(db: str) -> None:
    stop = threading.Event()
    errors: list[BaseException] = []

    def decayer() -> None:
        try:
            with open_svc(db, Clock(NOON)) as mem:
                day = 0
                while not stop.is_set():
                    day += 1
                    mem.store.decay_importance(NOON + timedelta(days=day))
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=decayer)
    t.start()
    try:
        with open_svc(db, Clock(NOON)) as mem:
            for _ in range(100):
                mem.store.mark_referenced("acme", ["acme-0"], NOON)
    finally:
        stop.set()
        t.join(30)
    assert not errors
    with open_svc(db, Clock(NOON)) as mem:
        assert mem.store.get_memory("acme", "acme-0").reference_count == 100
        found = mem.store.search_recent(ScopeFilter("acme"), 10)
        assert len(found) == 4


@pytest.mark.parametrize(
    ("env", "field"),
    [
        ({"EPISODIC_DAILY_AT": "25:00"}, "EPISODIC_DAILY_AT"),
        ({"EPISODIC_DECAY_AT": "3am"}, "EPISODIC_DECAY_AT"),
        ({"EPISODIC_REVIEW_INTERVAL": "0"}, "EPISODIC_REVIEW_INTERVAL"),
        ({"EPISODIC_CONSOLIDATE_THRESHOLD": "many"}, "EPISODIC_CONSOLIDATE_THRESHOLD"),
    ],
)
def test_schedule_settings_are_checked_by_name(env: dict[str, str], field: str) -> None:
    with pytest.raises(InvalidInput, match=field):
        Settings.from_env(env)


def test_schedule_settings_from_the_environment(db: str) -> None:
    s = Settings.from_env(
        {
            "EPISODIC_DAILY_AT": "05:30",
            "EPISODIC_REVIEW_RECALLS": "0",
            "EPISODIC_REVIEW_INTERVAL": "60",
        }
    )
    assert (s.daily_at, s.review_recalls, s.review_interval_s) == ("05:30", False, 60.0)
    with open_svc(db, Clock(NOON)) as mem, pytest.raises(InvalidInput, match="tick_s"):
        mem.scheduler(tick_s=0)
