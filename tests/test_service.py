"""The service end to end on a real SQLite store, with the deterministic fake embedder."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from episodic import Episodic, InvalidInput, ModelMismatch, Settings
from episodic.embed.fake import FakeEmbedder
from episodic.store import open_store

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def ev(
    i: str,
    ws: str,
    summary: str,
    *,
    agent: str = "a1",
    crew: str = "c1",
    type: str = "peer.escalation",
    severity: str = "info",
    days_ago: float = 1.0,
    **extra: object,
) -> dict[str, object]:
    return {
        "id": i,
        "workspace": ws,
        "agent": agent,
        "crew": crew,
        "type": type,
        "severity": severity,
        "summary": summary,
        "ts": (NOW - timedelta(days=days_ago)).isoformat(),
        **extra,
    }


@pytest.fixture
def fake() -> FakeEmbedder:
    return FakeEmbedder(dim=1024)  # wide enough that unrelated words rarely collide


@pytest.fixture
def svc(fake: FakeEmbedder, db_url: str) -> Iterator[Episodic]:
    mem = Episodic(
        store=open_store(db_url),
        embedder=fake,
        settings=Settings(),
        clock=lambda: NOW,
    )
    yield mem
    mem.close()


JOURNAL = [
    ev("e1", "acme", "checkout service OOM after cache TTL change", agent="deployer"),
    ev(
        "e2",
        "acme",
        "keeper denied production deploy without approval",
        agent="deployer",
        type="approval.denied",
    ),
    ev("e3", "acme", "flaky payment gateway test retried three times", agent="reviewer"),
    ev(
        "e4",
        "acme",
        "disk usage 40 percent",
        type="container.metrics",
        agent="oncall",
        refs={"episodic": True},
    ),
    ev("e5", "orbit", "checkout OOM in the orbit sandbox", agent="deployer"),
    ev("e6", "acme", "routine info chatter", type="tool.call", agent="deployer"),
]


def test_ingest_admits_selectively_and_is_idempotent(svc: Episodic) -> None:
    report = svc.ingest(JOURNAL)
    assert (report.received, report.stored, report.admitted, report.duplicates) == (6, 6, 4, 0)
    again = svc.ingest(JOURNAL)
    assert (again.stored, again.admitted, again.duplicates) == (0, 0, 6)


def test_bad_items_are_reported_and_the_rest_stored(svc: Episodic) -> None:
    report = svc.ingest(
        [
            JOURNAL[0],
            {"summary": "no workspace"},
            JOURNAL[1],
            {"workspace": "acme", "severity": "fatal"},
        ]
    )
    assert report.stored == 2
    assert [(e.line, e.field) for e in report.errors] == [(2, "workspace"), (4, "severity")]
    with pytest.raises(InvalidInput) as info:
        svc.add_event({"workspace": "acme", "payload": "not an object"})
    assert info.value.field == "payload"


def test_recall_is_hybrid_after_indexing_and_marks_hits(svc: Episodic, fake: FakeEmbedder) -> None:
    svc.ingest(JOURNAL)
    assert svc.index_once().embedded == 4
    result = svc.recall("checkout OOM", workspace="acme")
    assert result.mode == "vector"
    assert result.hits[0].id == "e1"
    assert {h.memory.workspace for h in result.hits} == {"acme"}
    assert result.hits[0].cosine is not None and result.hits[0].bm25_rank == 1
    first = svc.store.get_memory("acme", "e1")
    assert first.reference_count == 1 and first.last_referenced_at == NOW
    svc.recall("checkout OOM", workspace="acme", mark=False)
    assert svc.store.get_memory("acme", "e1").reference_count == 1


def test_workspaces_never_see_each_other(svc: Episodic) -> None:
    svc.ingest(JOURNAL)
    svc.index_once()
    for query in ("checkout OOM in the orbit sandbox", "orbit sandbox"):
        ids = {h.id for h in svc.recall(query, workspace="acme", k=50).hits}
        assert "e5" not in ids
    assert {h.id for h in svc.recall("orbit sandbox", workspace="orbit").hits} == {"e5"}
    assert svc.recall("checkout", workspace="nobody").hits == []


def test_scopes(svc: Episodic) -> None:
    svc.ingest(JOURNAL)
    svc.index_once()
    own = svc.recall(
        "checkout keeper payment", workspace="acme", agent="reviewer", scope="own", k=50
    )
    assert {h.memory.agent for h in own.hits} == {"reviewer"}
    with pytest.raises(InvalidInput) as info:
        svc.recall("x", workspace="acme", scope="own")
    assert info.value.field == "agent"
    with pytest.raises(InvalidInput) as info:
        svc.recall("x", workspace="acme", scope="crew_shared")
    assert info.value.field == "crew"
    with pytest.raises(InvalidInput) as info:
        svc.recall("x", workspace="acme", scope="everything")
    assert info.value.field == "scope"


@pytest.mark.parametrize(("k", "expected"), [(None, 5), (0, 5), (51, 5), (-3, 5), (1, 1), (7, 7)])
def test_k_is_clamped_as_the_seed_says(svc: Episodic, k: int | None, expected: int) -> None:
    svc.ingest([ev(f"m{i}", "acme", f"deploy incident number {i}") for i in range(12)])
    svc.index_once()
    assert len(svc.recall("deploy incident", workspace="acme", k=k).hits) == expected


def test_sparse_only_without_embedder_and_says_so() -> None:
    with Episodic(store=open_store("sqlite:///:memory:"), embedder=None, clock=lambda: NOW) as mem:
        mem.ingest(JOURNAL)
        result = mem.recall("keeper denied deploy", workspace="acme")
        assert result.mode == "sparse-only"
        assert result.hits[0].id == "e2"
        assert any("sparse-only" in w for w in result.warnings)
        assert mem.doctor().episodic == "sparse-only"
        assert mem.index_once().embedded == 0


def test_doctor_counts_the_memories_that_wait_for_embedding(svc: Episodic) -> None:
    svc.ingest(JOURNAL[:1])
    waiting = {c.name: c.detail for c in svc.doctor().checks}["indexer"]
    assert waiting == "1 memory waits for embedding"
    svc.ingest(JOURNAL[1:3])
    waiting = {c.name: c.detail for c in svc.doctor().checks}["indexer"]
    assert waiting == "3 memories wait for embedding"


def test_embedder_outage_loses_nothing_and_recovers(svc: Episodic, fake: FakeEmbedder) -> None:
    svc.ingest(JOURNAL)
    fake.fail = True
    result = svc.index_once()
    assert result.embedded == 0 and result.failed == 4 and result.error
    assert svc.stats().pending_vectors == 4
    degraded = svc.recall("checkout OOM", workspace="acme")
    assert degraded.mode == "sparse-only" and degraded.hits[0].id == "e1"
    fake.fail = False
    assert svc.index_once().embedded == 4
    assert svc.stats().pending_vectors == 0


def test_model_change_is_refused_until_reindex(fake: FakeEmbedder) -> None:
    store = open_store("sqlite:///:memory:")
    with Episodic(store=store, embedder=fake, clock=lambda: NOW) as mem:
        mem.ingest(JOURNAL)
        mem.index_once()
        other = FakeEmbedder(dim=32)
        switched = Episodic(store=store, embedder=other, clock=lambda: NOW)
        with pytest.raises(ModelMismatch) as info:
            switched.recall("checkout", workspace="acme")
        assert "episodic reindex" in str(info.value)
        assert switched.reindex().embedded == 4
        assert switched.store.vector_model() == (other.model_id, 32)
        assert switched.recall("checkout OOM", workspace="acme").hits[0].id == "e1"


def test_render_block_and_empty_result(svc: Episodic) -> None:
    svc.ingest(JOURNAL)
    svc.index_once()
    block = svc.render("checkout OOM", workspace="acme", max_chars=800)
    assert block.startswith("<recalled-memory>") and block.endswith("</recalled-memory>")
    assert "checkout service OOM after cache TTL change" in block and len(block) <= 800
    assert "1 day ago" in block
    assert svc.render("zzzz qqqq", workspace="acme") == ""
    with pytest.raises(InvalidInput):
        svc.render("checkout", workspace="acme", max_chars=0)


def test_index_one_makes_a_memory_vector_searchable_at_once(svc: Episodic) -> None:
    svc.ingest([JOURNAL[0]])
    assert svc.stats().pending_vectors == 1
    assert svc.index_one("acme", "e1") is True
    assert svc.stats().pending_vectors == 0


def wait_until(predicate: object, timeout: float = 10.0) -> bool:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


def test_background_sweeper_indexes_new_memories_and_survives_outages(fake: FakeEmbedder) -> None:
    settings = Settings(sweep_interval_s=0.05, sweep_batch=2)
    with Episodic(
        store=open_store("sqlite:///:memory:"), embedder=fake, settings=settings, clock=lambda: NOW
    ) as mem:
        fake.fail = True
        assert mem.start_indexer() is True
        mem.ingest(JOURNAL)
        assert wait_until(lambda: fake.calls >= 3)  # it kept retrying through the outage
        assert mem.stats().pending_vectors == 4
        fake.fail = False
        assert wait_until(lambda: mem.stats().pending_vectors == 0)
        mem.ingest([ev("late", "acme", "late escalation about checkout")])
        assert wait_until(lambda: mem.stats().pending_vectors == 0)
        assert mem.recall("late escalation", workspace="acme").hits[0].id == "late"


def test_start_indexer_without_embedder_warns(caplog: pytest.LogCaptureFixture) -> None:
    with Episodic(store=open_store("sqlite:///:memory:"), embedder=None) as mem:
        assert mem.start_indexer() is False
    assert "sparse-only" in caplog.text and "episodic doctor" in caplog.text
