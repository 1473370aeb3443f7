"""The keyword search caches its terms' document counts for a few seconds; a caller that
has just written can make the next search count afresh (``forget_term_counts``), and the
benchmark harness does, so its answers do not depend on how long its writing took."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from episodic import Episodic
from episodic.bench.locomo import prepare_locomo
from episodic.config import Settings
from episodic.store import SqliteStore, open_store
from episodic.store.postgres import PostgresStore

FIXTURE = Path(__file__).parent / "fixtures" / "locomo_tiny.json"
T = datetime(2026, 3, 2, tzinfo=UTC)


def counted(store: object, term: str) -> int:
    """How many memories the keyword search counts ``term`` in, through its cache."""
    if isinstance(store, SqliteStore):
        return store._term_doc_counts([term], 10**6)[0]
    assert isinstance(store, PostgresStore)
    with store._read() as conn:
        return store._sparse_stats(conn, "w", [term])[3][0]


def test_the_counts_are_cached_until_forgotten(db_url: str) -> None:
    mem = Episodic(store=open_store(db_url), clock=lambda: T)
    for n in range(2):
        mem.remember(f"the quokka sighting number {n} on the island", workspace="w")
    for n in range(12):  # counts stop at half the workspace: keep the term under it
        mem.remember(f"a plain note about ferry timetable {n}", workspace="w")
    store = mem.store
    store.forget_term_counts()  # writing searched too: count from here
    assert counted(store, "quokka") == 2
    for n in range(3):
        mem.remember(f"another quokka near the lighthouse, {n}", workspace="w")
    assert counted(store, "quokka") == 2  # a few seconds old: the cache's count
    store.forget_term_counts()
    assert counted(store, "quokka") == 5
    mem.close()


def test_the_bench_asks_its_questions_on_counts_taken_after_the_writing(tmp_path: Path) -> None:
    # Conversation ingest searches while it writes (entries, supersession), filling the
    # cache with counts from before its last writes.
    settings = Settings.from_env({}, embedder="none", cache_dir=tmp_path)
    with prepare_locomo(FIXTURE, settings, say=lambda _m: None, ingest="conversation") as run:
        assert run.mem.store._sparse_counts is None
