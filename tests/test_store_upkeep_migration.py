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
    # Steps 1-3, and the validity columns today's writer fills in (step 10 touches
    # nothing steps 4-9 do).
    old = tuple(s for s in m.MIGRATIONS if s[0] <= 3 or s[0] == 10)
    monkeypatch.setattr(m, "MIGRATIONS", old)
    with SqliteStore(path) as v3:
        e1, e2 = event("e1"), event("e2")
        v3.append([e1, e2], [memory_of(e1, source_event_ids=("e2", "e1"))])
    applied = sqlite3.connect(path).execute("SELECT version FROM schema_migrations").fetchall()
    assert sorted(v for (v,) in applied) == [1, 2, 3, 10]
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
