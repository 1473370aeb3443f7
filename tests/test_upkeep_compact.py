"""Compaction (archive, near-duplicate merge) and stage retirement: what they keep, what
they change, and that retired and compacted memories leave every recall."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from episodic import POLICIES, Episodic, InvalidInput, Settings
from episodic.embed.fake import FakeEmbedder
from episodic.model import Event, Memory, MemoryStatus, ScopeFilter
from episodic.store import open_store
from episodic.upkeep.compact import plan_merges

NOW = datetime(2026, 11, 24, 4, 0, tzinfo=UTC)
T = NOW - timedelta(days=10)
DUP = "deploy of checkout failed because the cache TTL was too short"  # 11 tokens


def mem(id: str, content: str, **fields: Any) -> Memory:
    values: dict[str, Any] = {"ts": T, "type": "learning", "agent": "a1", **fields}
    return Memory(id=id, workspace="acme", content=content, **values)


def test_near_duplicates_merge_into_the_most_important() -> None:
    later = T + timedelta(days=3)
    memories = [
        mem("low", DUP + " again", importance=0.4, base_importance=0.4, reference_count=2,
            last_referenced_at=later, ts=later),
        mem("high", DUP, importance=0.9, base_importance=0.6, reference_count=1),
        mem("other", "rotate the database credentials every quarter"),
    ]  # fmt: skip
    (merge,) = plan_merges(memories)
    assert merge.survivor_id == "high"
    assert [loser for loser, _ in merge.losers] == ["low"]
    assert merge.losers[0][1] == pytest.approx(11 / 12)  # Jaccard of the token sets
    assert merge.content == DUP + " again"  # the longer text
    assert (merge.importance, merge.base_importance) == (0.9, 0.6)  # the highest of each
    assert merge.reference_count == 3  # summed
    assert (merge.last_referenced_at, merge.ts) == (later, later)  # the latest dates


@pytest.mark.parametrize(
    ("a", "b", "merged"),
    [
        (mem("a", DUP), mem("b", DUP + " again"), True),
        (mem("a", DUP), mem("b", DUP + " again", agent="a2"), False),  # another reader
        (mem("a", DUP), mem("b", DUP + " again", type="entry"), False),  # another type
        (mem("a", DUP, type="message"), mem("b", DUP, type="message"), False),  # turns stay
        # Jaccard exactly 0.8 (4 of 5 tokens): seed 001 merges only above it.
        (mem("a", "alpha beta gamma delta"), mem("b", "alpha beta gamma delta epsilon"), False),
        # The ASCII tokens agree but the rest of the text does not.
        (mem("a", "deploy 部署失败了"), mem("b", "deploy 回滚成功了"), False),
        (mem("a", "deploy 部署失败了 ok"), mem("b", "deploy 部署失败了 ok!"), True),
    ],
)
def test_what_counts_as_a_near_duplicate(a: Memory, b: Memory, merged: bool) -> None:
    assert bool(plan_merges([a, b])) is merged


@pytest.fixture
def svc(db_url: str) -> Iterator[Episodic]:
    m = Episodic(
        store=open_store(db_url),
        embedder=FakeEmbedder(dim=512),
        settings=Settings(archive_after_days=90),
        clock=lambda: NOW,
    )
    yield m
    m.close()


def store_memory(svc: Episodic, m: Memory, *, days: float = 10, payload: Any = None) -> None:
    e = Event(id=m.id, workspace="acme", ts=NOW - timedelta(days=days), type=m.type,
              summary=m.content, payload=payload or {"blob": "x" * 900})  # fmt: skip
    svc.store.append([e], [Memory(**{**_fields(m), "source_event_ids": (m.id,), "ts": e.ts})])


def _fields(m: Memory) -> dict[str, Any]:
    return {name: getattr(m, name) for name in Memory.__slots__}  # type: ignore[attr-defined]


def recall_ids(svc: Episodic, query: str) -> dict[str, set[str]]:
    return {
        name: {
            h.id for h in svc.recall(query, workspace="acme", policy=name, k=10, mark=False).hits
        }
        for name in POLICIES
    }


def test_compaction_archives_and_merges_and_deletes_nothing(svc: Episodic) -> None:
    store_memory(svc, mem("keep", DUP, importance=0.9, base_importance=0.9), days=120)
    store_memory(svc, mem("dup", DUP + " again", reference_count=4), days=5)
    store_memory(svc, mem("fresh", "rotate the database credentials every quarter"), days=5)
    svc.index_once()
    (result,) = svc.compact(workspace="acme")
    assert result.detail == {
        "workspace": "acme",
        "archived_events": 1,
        "merges": 1,
        "compacted": 1,
    }
    keep, dup = svc.store.get_memories("acme", ["keep", "dup"])
    assert keep.status is MemoryStatus.ACTIVE and keep.content == DUP + " again"
    assert keep.reference_count == 4 and keep.source_event_ids == ("keep", "dup")
    assert dup.status is MemoryStatus.COMPACTED and dup.payload["compacted_into"] == "keep"
    # The archived journal row is still there to read, and still cited.
    (archived,) = svc.archived_events("acme", ["keep"])
    assert len(archived.payload) == 400 and svc.store.get_events("acme", ["keep"]) == []
    assert svc.store.stats("acme").memories == 3
    # The survivor's new text is embedded again; the loser is out of every recall.
    svc.index_once()
    for name, found in recall_ids(svc, "checkout cache TTL deploy").items():
        assert "dup" not in found and "keep" in found, name


def test_retired_memories_leave_every_policy_and_the_dense_index(svc: Episodic) -> None:
    for i, phase in enumerate(["design", "design", "build"]):
        store_memory(
            svc,
            mem(f"t{i}", f"{DUP} note {i}", type="learning",
                payload={"domain": "task", "phase": phase}),
        )  # fmt: skip
    store_memory(svc, mem("team", DUP + " team", payload={"domain": "team", "phase": "design"}))
    svc.index_once()
    assert all(len(found) == 4 for found in recall_ids(svc, "checkout cache deploy").values())
    assert svc.retire_phase("acme", "design") == ["t0", "t1"]
    for name, found in recall_ids(svc, "checkout cache deploy").items():
        assert found == {"t2", "team"}, name
    vector = svc.store.get_vectors("acme", ["t0"])["t0"]
    found = svc.store.search_dense(ScopeFilter("acme"), vector, 10)
    assert "t0" not in {c.memory_id for c in found}
    assert svc.store.get_memory("acme", "t0").status is MemoryStatus.RETIRED
    with pytest.raises(InvalidInput, match="phase"):
        svc.retire_phase("acme", " ")
