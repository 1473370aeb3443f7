"""What a flush makes is searchable by vector when the call returns: ``segment(flush=True)``,
``episodic index --once --flush`` and ``MemoryLayer.on_complete`` embed the episodes,
entries and learnings they create, with no sweep in between; an embedder outage leaves
them stored, found by keywords, and pending for the indexer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from episodic import Episodic, Settings
from episodic.cli import app
from episodic.embed.fake import FakeEmbedder
from episodic.layer import MemoryLayer
from episodic.store import open_store
from test_conversations import REFUND

T0 = datetime(2026, 5, 8, 13, 0, tzinfo=UTC)

QUERY = "refund idempotency key gateway 409"


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder(dim=64)


@pytest.fixture
def mem(db_url: str, embedder: FakeEmbedder) -> Iterator[Episodic]:
    # A fake embedder: what is tested is that vectors exist, not how alike they are.
    service = Episodic(
        store=open_store(db_url),
        embedder=embedder,
        settings=Settings(),
        clock=lambda: T0 + timedelta(hours=1),
        llm=None,
    )
    yield service
    service.close()


def feed(mem: Episodic, conversation: str = "c1") -> None:
    for i, (role, name, text) in enumerate(REFUND):
        mem.add_message(
            text,
            workspace="acme",
            conversation=conversation,
            role=role,
            name=name,
            agent="helper",
            ts=T0 + timedelta(minutes=i),
        )


def dense_types(mem: Episodic, types: tuple[str, ...]) -> list[str]:
    result = mem.recall(QUERY, workspace="acme", policy="dense", types=types, k=10)
    assert result.mode == "vector"
    return [h.memory.type for h in result.hits]


def test_a_flushed_episode_is_found_by_vector_at_once(mem: Episodic) -> None:
    feed(mem)
    report = mem.segment(flush=True)
    assert report.episodes >= 1 and report.entries >= 1
    # No sweep ran: the dense leg alone finds the episode and its entries...
    assert dense_types(mem, ("episode",)) == ["episode"] * report.episodes
    assert dense_types(mem, ("entry",)) == ["entry"] * report.entries
    # ...because nothing the flush made is left for the indexer.
    assert mem.store.pending_vectors(100) == []
    assert report.unembedded == 0


def test_on_complete_episodes_are_recalled_by_relevance_on_the_dense_leg(
    mem: Episodic,
) -> None:
    layer = MemoryLayer(mem, workspace="acme", agent="helper", order="relevant", policy="dense")
    transcript = [
        {"role": role, "name": name, "content": text, "ts": (T0 + timedelta(minutes=i)).isoformat()}
        for i, (role, name, text) in enumerate(REFUND)
    ]
    episodes = layer.on_complete(transcript, conversation="run-1")
    assert episodes
    recalled = layer.recall(2000, QUERY)
    assert sorted(e.id for e in recalled.episodes) == sorted(e.id for e in episodes)


def test_an_embedder_outage_keeps_the_episode_and_says_so(
    mem: Episodic, embedder: FakeEmbedder
) -> None:
    feed(mem)
    embedder.fail = True
    report = mem.segment(flush=True)
    # Stored all the same, and the report counts what waits for the indexer.
    assert report.episodes == 1
    assert report.unembedded == 1 + report.entries + report.learnings
    assert report.to_json()["unembedded"] == report.unembedded
    found = mem.recall(QUERY, workspace="acme", policy="bm25", types=("episode",)).hits
    assert [h.memory.type for h in found] == ["episode"]
    # The embedder is back: the next sweep embeds it like any pending memory.
    embedder.fail = False
    assert mem.index_once().embedded >= report.unembedded
    assert dense_types(mem, ("episode",)) == ["episode"]


@pytest.mark.model
def test_index_once_flush_then_a_dense_recall_finds_the_episode(
    db_url: str, tmp_path: Path
) -> None:
    # The default path: the CLI with its default (local MiniLM) embedder.
    env = {"EPISODIC_DB": db_url, "EPISODIC_EMBEDDER": "local"}
    lines = [
        json.dumps(
            {
                "workspace": "acme",
                "conversation": "chat-42",
                "type": "message",
                "summary": text,
                "payload": {"role": role, "name": name},
                "ts": (T0 + timedelta(minutes=i)).isoformat(),
            }
        )
        for i, (role, name, text) in enumerate(REFUND)
    ]
    events = tmp_path / "chat.jsonl"
    events.write_text("\n".join(lines) + "\n", encoding="utf-8")
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", str(events)], env=env).exit_code == 0
    done = runner.invoke(app, ["index", "--once", "--flush", "--json"], env=env)
    assert done.exit_code == 0, done.output
    segmentation = json.loads(done.stdout)["segmentation"]
    assert segmentation["episodes"] >= 1
    ask = ["recall", "why did partial refunds fail", "--workspace", "acme", "--json"]
    found = runner.invoke(app, [*ask, "--policy", "dense", "--type", "episode"], env=env)
    assert found.exit_code == 0, found.output
    hits = json.loads(found.stdout)
    assert [h["type"] for h in hits] == ["episode"] * segmentation["episodes"]
    assert segmentation["unembedded"] == 0
