"""SQLite: finding what a forget removes reads what it removes, not the workspace.

The work is counted in SQLite's virtual-machine steps (a progress handler on the writer),
which do not depend on the machine's speed: forgetting one conversation in a workspace of
2,000 other events must cost about what it costs among 200. Before the forget's lookups
were driven from the ids already found (and messages found through ``events_episode``),
each one walked every event or memory of the workspace, ten times the steps here.

Two later steps are not counted, and still grow with the file, each outside that
transaction: the check of the forgotten texts' cached embeddings against every remaining
memory's text (the cache is shared across workspaces; on a read connection), and the FTS5
merge that drops the forgotten terms from the search indexes (on the SQLite this runs,
3.40, it rewrites them whole; FTS5's ``secure-delete`` needs 3.42), one transaction per
index with writes in between (the last test). ``benchmarks/bench_forget.py``
times a whole forget and the writes beside it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from episodic import Episodic, Settings
from episodic.model import ScopeFilter
from episodic.store.sqlite import SqliteStore

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def events(n: int, start: int = 0) -> list[dict[str, Any]]:
    return [
        {
            "id": f"e{i}",
            "workspace": "acme",
            "agent": f"agent{i % 7}",
            "type": "peer.escalation",
            "summary": f"escalation {i} about the billing pod and its nightly batch",
            "ts": (NOW - timedelta(hours=2, seconds=i)).isoformat(),
        }
        for i in range(start, start + n)
    ]


def lived_in(path: Path, others: int) -> Episodic:
    """A workspace with ``others`` journal events (with their memories) and two
    conversations, segmented into episodes."""
    mem = Episodic(store=SqliteStore(path), settings=Settings(embedder="none"), clock=lambda: NOW)
    for start in range(0, others, 500):
        report = mem.ingest(events(min(500, others - start), start))
        assert not report.errors
    for c in ("keep", "gone"):
        for j in range(6):
            mem.add_message(
                f"conversation {c} line {j}: the deploy window moves to friday",
                workspace="acme",
                conversation=f"conv-{c}",
                role="user" if j % 2 == 0 else "assistant",
                ts=NOW - timedelta(hours=1, minutes=-j),
            )
    report = mem.segment(workspace="acme", flush=True)
    assert report.episodes >= 2, report
    return mem


def counted(store: SqliteStore) -> tuple[list[int], Callable[[], None]]:
    """Count the VM steps of the forget's row work (``_forget_rows``) on ``store``."""
    steps = [0]
    original = store._forget_rows

    def step() -> int:
        steps[0] += 1
        return 0  # go on

    def rows(*args: Any, **kwargs: Any) -> Any:
        store._writer.set_progress_handler(step, 1)
        try:
            return original(*args, **kwargs)
        finally:
            store._writer.set_progress_handler(None, 1)

    store._forget_rows = rows  # type: ignore[method-assign]

    def undo() -> None:
        del store._forget_rows

    return steps, undo


@pytest.fixture
def forget_steps(tmp_path: Path) -> Iterator[Callable[[int], tuple[int, int]]]:
    opened: list[Episodic] = []

    def measure(others: int) -> tuple[int, int]:
        mem = lived_in(tmp_path / f"w{others}.db", others)
        opened.append(mem)
        store = mem.store
        assert isinstance(store, SqliteStore)
        steps, undo = counted(store)
        try:
            counts = mem.forget(workspace="acme", conversation="conv-gone")
        finally:
            undo()
        return steps[0], counts.events

    yield measure
    for mem in opened:
        mem.close()


def test_forgetting_a_conversation_reads_what_it_forgets_not_the_workspace(
    forget_steps: Callable[[int], tuple[int, int]],
) -> None:
    small, small_events = forget_steps(200)
    large, large_events = forget_steps(2000)
    assert small_events == large_events == 6  # the same conversation went in both
    # Ten times the workspace, about the same work (the b-tree lookups grow a level).
    assert large < small * 1.5, (small, large)


def test_an_episode_forgotten_alone_gives_its_messages_their_own_keys_back(
    tmp_path: Path,
) -> None:
    # The messages of an episode are now found through events_episode; the rekey they
    # get when only the episode goes must still reach every one of them.
    mem = lived_in(tmp_path / "m.db", 50)
    try:
        found = mem.store.list_memories(ScopeFilter(workspace_id="acme"), 500)
        episode = next(m for m in found if m.conversation == "conv-gone" and m.type == "episode")
        counts = mem.forget(workspace="acme", memory=episode.id)
        assert counts.rekeyed == 6
        assert counts.events == 0  # the messages stay
    finally:
        mem.close()


def test_a_write_sent_while_a_forget_merges_an_index_goes_in_before_the_next(
    tmp_path: Path,
) -> None:
    # A forget merges both search indexes' segments to drop the forgotten terms: on a
    # large store each merge is much work, and a write sent meanwhile must not wait for
    # the rest of the forget, only for the merge under way.
    trace: list[tuple[str, str]] = []
    writer: list[threading.Thread] = []

    def late_write() -> None:
        mem.ingest(events(1, start=90_000))

    def tracer(sql: str, params: Any) -> None:
        trace.append((threading.current_thread().name, sql))
        if "('optimize')" in sql and not writer:
            writer.append(threading.Thread(target=late_write, name="late-write"))
            writer[0].start()
            time.sleep(0.2)  # the write is waiting for the writer by the time this ends

    mem = Episodic(
        store=SqliteStore(tmp_path / "m.db", tracer=tracer),
        settings=Settings(embedder="none"),
        clock=lambda: NOW,
    )
    try:
        assert not mem.ingest(events(300)).errors
        trace.clear()
        mem.forget(workspace="acme", agent="agent3")
        writer[0].join(30)
        merges = [i for i, (_, sql) in enumerate(trace) if "('optimize')" in sql]
        written = [
            i for i, (who, sql) in enumerate(trace) if who == "late-write" and "COMMIT" in sql
        ]
        assert len(merges) == 3  # the memories' index, their passages', then the journal's
        assert written and merges[0] < written[0] < merges[1], "the write waited for all"
        assert [e.id for e in mem.store.get_events("acme", ["e90000"])] == ["e90000"]
    finally:
        mem.close()
