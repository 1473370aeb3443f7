"""The trace reads true: each stage shows the ranking as that step left it (the time
boost's before the length step and the newest-first reorder moved it, and each reorder
as a stage of its own), and a keyword match BM25 weighs at almost nothing shows as a
match, not as a score of 0 that reads as a miss."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from episodic import Episodic, Settings
from episodic.cli import app
from episodic.embed.local import MiniLMEmbedder
from episodic.recall.trace import ORDER_NEWEST_FIRST, ORDER_WITHIN_HITS, shown_score
from episodic.store import open_store
from test_supersession_soft import PLAIN, RAISED, WITHIN, remember_turns

T = datetime(2026, 3, 2, tzinfo=UTC)


def test_a_keyword_match_every_memory_shares_shows_as_a_match(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One memory: every memory holds the query's words, so BM25 gives them no weight.
    monkeypatch.setenv("EPISODIC_EMBEDDER", "none")
    url = f"sqlite:///{tmp_path}/m.db"
    with Episodic.open(url, settings=Settings(embedder="none")) as mem:
        memory_id = mem.remember("checkout ran out of memory", workspace="shop").id
    result = CliRunner().invoke(
        app, ["--db", url, "recall", "checkout memory", "-w", "shop", "--explain"]
    )
    assert result.exit_code == 0, result.stderr
    out = " ".join(result.stdout.split())
    assert f"leg:sparse: 1. {memory_id} (matched, weight ~0)" in out, out
    assert "(0.0000)" not in out
    assert "so do half or more of the memories" in out


def test_a_weighed_score_shows_its_decimals() -> None:
    assert shown_score("leg:sparse", 1.23456) == "1.2346"
    assert shown_score("leg:dense", 0.0) == "0.0000"  # a cosine of 0 is a cosine of 0
    assert shown_score("leg:sparse", 0.0) == "matched, weight ~0"


@pytest.fixture
def standup(tmp_path: Path) -> Episodic:
    """Two versions of one fact two weeks apart, and something else."""
    clock = [T]
    mem = Episodic(
        store=open_store(f"sqlite:///{tmp_path}/m.db"),
        embedder=MiniLMEmbedder(),
        clock=lambda: clock[0],
    )
    text = "Our team standup happens every morning at {} in the small meeting room."
    mem.remember(text.format("9:30"), workspace="w", id="old")
    clock[0] = T + timedelta(days=14)
    mem.remember(text.format("10:15"), workspace="w", id="new")
    mem.remember("The cafeteria serves lunch from noon.", workspace="w", id="other")
    mem.index_once()
    clock[0] = T + timedelta(days=15)
    return mem


def ids(rows: list[tuple[str, float]]) -> list[str]:
    return [i for i, _ in rows]


@pytest.mark.model
def test_the_time_stage_is_the_ranking_the_time_boost_left(standup: Episodic) -> None:
    # "two weeks ago" holds the older version only: the time boost puts it first; the
    # newest-first reorder then lifts the newer one, as a stage of its own.
    result = standup.recall("when was the team standup two weeks ago", workspace="w", mark=False)
    explained = standup.recall(
        "when was the team standup two weeks ago", workspace="w", mark=False, explain=True
    )
    trace = explained.trace
    assert trace is not None and trace.time_windows
    timed = [(r.memory_id, r.score) for r in trace.stages["time"]]
    assert ids(timed)[:2] == ["old", "new"]
    assert timed[0][1] > timed[1][1]  # the boost's own scores, before any reorder
    stages = list(trace.stages)
    assert stages.index(ORDER_NEWEST_FIRST) > stages.index("time")
    assert [r.memory_id for r in trace.stages[ORDER_NEWEST_FIRST]][:2] == ["new", "old"]
    assert [h.id for h in explained.hits] == [h.id for h in result.hits] == ["new", "old"]
    standup.close()


@pytest.mark.model
def test_a_reorder_is_a_stage_only_when_it_moved_something(standup: Episodic) -> None:
    moved = standup.recall("when is the team standup", workspace="w", mark=False, explain=True)
    assert moved.trace is not None
    assert [h.id for h in moved.hits][:2] == ["new", "old"]
    assert [r.memory_id for r in moved.trace.stages[ORDER_NEWEST_FIRST]][:2] == ["new", "old"]
    still = standup.recall("when is lunch served", workspace="w", mark=False, explain=True)
    assert still.trace is not None and ORDER_NEWEST_FIRST not in still.trace.stages
    standup.close()


@pytest.mark.model
def test_the_hits_own_order_is_a_stage_when_it_moved_them(tmp_path: Path) -> None:
    # The newer turn goes just above the older one among the hits: a stage of its own,
    # after the ranking that chose the hits.
    mem = remember_turns(tmp_path, RAISED)
    query = "what is my monthly grocery budget"
    moved = mem.recall(query, workspace="w", k=5, policy=WITHIN, mark=False, explain=True)
    assert moved.trace is not None
    stages = list(moved.trace.stages)
    assert stages[-1] == ORDER_WITHIN_HITS
    shown = [r.memory_id for r in moved.trace.stages[ORDER_WITHIN_HITS]]
    assert shown == [h.id for h in moved.hits]
    assert shown.index("new") + 1 == shown.index("old")
    before = [r.memory_id for r in moved.trace.stages[stages[-2]] if r.memory_id in shown]
    assert before.index("old") < before.index("new")  # as the ranking left them
    plain = mem.recall(query, workspace="w", k=5, policy=PLAIN, mark=False, explain=True)
    assert plain.trace is not None and ORDER_WITHIN_HITS not in plain.trace.stages
    mem.close()
