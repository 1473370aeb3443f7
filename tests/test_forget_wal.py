"""SQLite: a forget empties the WAL so that no forgotten text is left in the files, and
while that waits for a reader of an older snapshot, writes go on; if the reader outlasts
the short tries, the forget waits for it rather than return with the text on disk."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from episodic import Episodic, Settings
from episodic.embed.fake import FakeEmbedder
from episodic.model import ScopeFilter
from episodic.store.sqlite import SqliteStore
from episodic.store.sqlite import connection as sqlite_connection

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
MARK = "quaxitron"  # only the forgotten agent's text holds it


def event(i: str, agent: str, summary: str) -> dict[str, Any]:
    return {
        "id": i,
        "workspace": "acme",
        "agent": agent,
        "type": "peer.escalation",
        "summary": summary,
        "ts": (NOW - timedelta(hours=1)).isoformat(),
    }


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Episodic]:
    m = Episodic(
        store=SqliteStore(tmp_path / "m.db"),
        embedder=FakeEmbedder(dim=32),
        settings=Settings(),
        clock=lambda: NOW,
    )
    report = m.ingest(
        [event(f"g{i}", "ghost", f"{MARK} incident {i} in the billing pod") for i in range(20)]
        + [event(f"k{i}", "keeper", f"routine deploy {i} went fine") for i in range(20)]
    )
    assert report.admitted == 40
    m.index_once()
    yield m
    m.close()


def file_bytes(path: Path) -> bytes:
    wal = path.with_name(path.name + "-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


class OldSnapshot:
    """Another connection reading from a snapshot taken now, until ``release``."""

    def __init__(self, path: Path) -> None:
        self.release = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._hold, args=(path,))

    def _hold(self, path: Path) -> None:
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            conn.execute("BEGIN")
            conn.execute("SELECT count(*) FROM memories").fetchone()
            self._ready.set()
            self.release.wait(30)
            conn.execute("COMMIT")
        finally:
            conn.close()

    def __enter__(self) -> OldSnapshot:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *_: object) -> None:
        self.release.set()
        self._thread.join(30)


def test_writes_go_on_while_a_forget_waits_for_an_old_reader(mem: Episodic, tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    # The reader's snapshot predates the forget's deletion (a WAL frame of its own).
    mem.ingest([event("k-late", "keeper", "one more routine deploy")])
    forgot: list[Any] = []
    with OldSnapshot(path) as reader:
        forgetting = threading.Thread(
            target=lambda: forgot.append(mem.forget(workspace="acme", agent="ghost"))
        )
        forgetting.start()
        time.sleep(0.3)  # the forget is now trying to empty the WAL
        assert not forgot, "the forget returned with an older snapshot still open"
        # The write must go through while the reader still holds its snapshot: before
        # the change, the forget held the writer until the reader was gone.
        watchdog = threading.Timer(3.0, reader.release.set)
        watchdog.start()
        report = mem.ingest([event("k-new", "keeper", "a deploy written during the forget")])
        held = not reader.release.is_set()
        watchdog.cancel()
        assert report.admitted == 1
        assert held, "the write waited for the forget's WAL truncation"
    forgetting.join(30)
    assert forgot and forgot[0].memories >= 20
    assert MARK.encode() not in file_bytes(path)
    kept = {m.id for m in mem.list_memories(ScopeFilter("acme"), limit=200).items}
    assert kept >= {"k-late", "k-new"} and not any(i.startswith("g") for i in kept)


def test_a_forget_outlasted_by_a_reader_still_leaves_no_text_on_disk(
    mem: Episodic, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_connection, "WAL_TRUNCATE_TRIES_S", 0.2)
    path = tmp_path / "m.db"
    mem.ingest([event("k-late", "keeper", "one more routine deploy")])
    with OldSnapshot(path) as reader:
        threading.Timer(1.0, reader.release.set).start()
        t0 = time.monotonic()
        counts = mem.forget(workspace="acme", agent="ghost")
        # The last try waited for the reader (released after 1 s) instead of giving up.
        assert time.monotonic() - t0 >= 0.9
    assert counts.memories >= 20
    assert MARK.encode() not in file_bytes(path)
