"""The memory nudge (seed 000): 60 new journal entries since the agent's last
`memory.updated` -> one reminder per session."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from episodic import Episodic, InvalidInput, Settings
from episodic.store import open_store

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


@pytest.fixture
def svc(db_url: str) -> Iterator[Episodic]:
    m = Episodic(store=open_store(db_url), embedder=None, settings=Settings(), clock=lambda: NOW)
    yield m
    m.close()


def journal(svc: Episodic, n: int, start: int, agent: str = "a1", type: str = "tool.call") -> None:
    events: list[dict[str, Any]] = [
        {
            "workspace": "acme",
            "agent": agent,
            "type": type,
            "summary": f"step {start + i}",
            "ts": (NOW - timedelta(hours=1) + timedelta(seconds=start + i)).isoformat(),
        }
        for i in range(n)
    ]
    assert svc.ingest(events).ok


def test_the_nudge_fires_at_60_entries_once_per_session(svc: Episodic) -> None:
    journal(svc, 59, 0)
    journal(svc, 30, 100, agent="a2")  # someone else's entries do not count
    assert svc.memory_nudge("acme", "a1", "s1") is None
    journal(svc, 1, 59)
    text = svc.memory_nudge("acme", "a1", "s1")
    assert text is not None and "60 new journal entries" in text
    assert svc.memory_nudge("acme", "a1", "s1") is None  # once per session
    journal(svc, 12, 60)
    again = svc.memory_nudge("acme", "a1", "s2")
    assert again is not None and "72 new journal entries" in again


def test_a_memory_update_resets_the_count(svc: Episodic) -> None:
    journal(svc, 70, 0)
    journal(svc, 1, 70, type="memory.updated")
    journal(svc, 59, 71)
    assert svc.memory_nudge("acme", "a1", "s1") is None
    journal(svc, 1, 130)
    assert svc.memory_nudge("acme", "a1", "s1") is not None


@pytest.mark.parametrize("field", ["workspace", "agent", "session_id"])
def test_each_id_is_required(svc: Episodic, field: str) -> None:
    args = {"workspace": "acme", "agent": "a1", "session_id": "s1", field: " "}
    with pytest.raises(InvalidInput, match=field):
        svc.memory_nudge(args["workspace"], args["agent"], args["session_id"])
