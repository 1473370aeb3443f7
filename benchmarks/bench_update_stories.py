"""The update stories and look-alike controls of ``tests/fixtures/update_stories.json``
(written for the tests, in everyday wording) through remember, index and recall with the
configured embedder: how often the current statement is first, how often a stale one
ranks above it, and how many controls were falsely superseded.

    EPISODIC_EMBEDDER=local PYTHONPATH=src .venv/bin/python benchmarks/bench_update_stories.py
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from episodic import Episodic
from episodic.config import Settings
from episodic.model import MemoryStatus
from episodic.store import open_store

DATA = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "update_stories.json"
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def main() -> None:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    now = [T0]
    mem = Episodic(
        store=open_store("sqlite:///:memory:"), settings=Settings.from_env(), clock=lambda: now[0]
    )
    first = stale = 0
    for n, story in enumerate(data["stories"]):
        ws = f"story-{n}"
        for i, text in enumerate(story["texts"]):
            now[0] = T0 + timedelta(days=14 * i)
            mem.remember(text, workspace=ws, id=f"{ws}-{i}")
        mem.index_once()
        now[0] += timedelta(days=1)
        hits = [h.id for h in mem.recall(story["question"], workspace=ws, k=5, mark=False).hits]
        current = f"{ws}-{len(story['texts']) - 1}"
        first += bool(hits) and hits[0] == current
        rank = hits.index(current) if current in hits else len(hits)
        stale += any(h != current for h in hits[:rank])
    false = 0
    for n, (old, new) in enumerate(data["controls"]):
        ws = f"control-{n}"
        now[0] = T0
        mem.remember(old, workspace=ws, id=f"{ws}-old")
        now[0] = T0 + timedelta(days=14)
        mem.remember(new, workspace=ws, id=f"{ws}-new")
        mem.index_once()
        false += mem.store.get_memory(ws, f"{ws}-old").status is MemoryStatus.SUPERSEDED
    stories = len(data["stories"])
    print(
        json.dumps(
            {
                "stories": stories,
                "current_first": round(first / stories, 3),
                "stale_above_current": round(stale / stories, 3),
                "controls": len(data["controls"]),
                "false_supersessions": false,
            }
        )
    )
    mem.close()


if __name__ == "__main__":
    main()
