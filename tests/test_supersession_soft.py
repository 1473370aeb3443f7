"""The soft signal: among near-duplicates recalled together, the newer ranks first and the
rendered block marks the older one as earlier (nothing hidden)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from episodic import Episodic
from episodic.embed.local import MiniLMEmbedder
from episodic.model import Hit, Memory
from episodic.recall.render import hit_line, memory_line
from episodic.scoring.supersede import newer_of
from episodic.store import open_store

T = datetime(2026, 3, 2, tzinfo=UTC)


def test_the_older_near_duplicate_is_named_earlier() -> None:
    ranked = [("old", 0.9), ("new", 0.8), ("other", 0.7)]
    similar = {"old": [("new", 0.9)], "new": [("old", 0.9)], "other": []}
    ts = {"old": T, "new": T + timedelta(days=3), "other": T + timedelta(days=9)}

    assert newer_of(ranked, similar, ts) == {"old": "new"}
    # A near-duplicate that is not ranked with it marks nothing.
    assert newer_of([("old", 0.9)], similar, ts) == {}


def test_the_block_marks_the_earlier_line() -> None:
    memory = Memory(id="old", workspace="w", ts=T, type="note", content="Ship with Falcon.")
    hit = Hit(memory=memory, score=0.5, age_seconds=86400.0, newer="new")

    assert "earlier than new" in hit_line(hit)
    assert "earlier than new" in memory_line(hit)
    assert "earlier" not in hit_line(Hit(memory=memory, score=0.5, age_seconds=1.0))
    assert hit.to_json()["newer"] == "new"


@pytest.mark.model
def test_recall_puts_the_newer_first_and_marks_the_older(tmp_path: Path) -> None:
    clock = [T]
    mem = Episodic(
        store=open_store(f"sqlite:///{tmp_path}/m.db"),
        embedder=MiniLMEmbedder(),
        clock=lambda: clock[0],
    )
    mem.remember(
        "Our team standup happens every morning at 9:30 in the small meeting room.",
        workspace="w",
        id="old",
    )
    clock[0] = T + timedelta(days=14)
    mem.remember(
        "Our team standup happens every morning at 10:15 in the small meeting room.",
        workspace="w",
        id="new",
    )
    mem.index_once()
    query = "when is the team standup"
    hits = mem.recall(query, workspace="w", mark=False).hits

    assert [h.id for h in hits][:2] == ["new", "old"]
    assert hits[1].newer == "new" and hits[0].newer is None
    assert "earlier than new" in mem.render(query, workspace="w")
    mem.close()
