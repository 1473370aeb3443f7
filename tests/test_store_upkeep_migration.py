"""Migration 4 on a database that already holds v3 data."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from episodic.store import SqliteStore
from episodic.store import migrations as m
from store_contract import event, memory_of


def test_v3_data_survives_and_sources_lose_only_the_events_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "v3.db"
    monkeypatch.setattr(m, "MIGRATIONS", m.MIGRATIONS[:3])
    monkeypatch.setattr(m, "LATEST_VERSION", 3)
    import episodic.store.sqlite.connection as sqlite_connection

    monkeypatch.setattr(sqlite_connection, "LATEST_VERSION", 3)
    with SqliteStore(path) as v3:
        e1, e2 = event("e1"), event("e2")
        v3.append([e1, e2], [memory_of(e1, source_event_ids=("e2", "e1"))])
        assert v3.schema_version() == 3
    monkeypatch.undo()

    with SqliteStore(path) as v4:
        assert v4.schema_version() == m.MIGRATIONS[-1][0] >= 4
        assert v4.get_memory("acme", "e1").source_event_ids == ("e2", "e1")  # order kept
    raw = sqlite3.connect(path)
    raw.execute("PRAGMA foreign_keys = ON")
    keys = raw.execute("PRAGMA foreign_key_list(memory_sources)").fetchall()
    assert [k[2] for k in keys] == ["memories"]  # the key to events is gone
    raw.execute("DELETE FROM events WHERE id = 'e2'")  # archiving can now move it
    raw.commit()
    raw.close()
