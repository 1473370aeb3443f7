"""The relation graph: `similar` edges on index, idempotent, inside the workspace; the
per-agent read-time walk."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from episodic import Episodic, InvalidInput, Settings, StoreError
from episodic.embed.fake import FakeEmbedder
from episodic.model import ScopeFilter
from episodic.store import open_store
from episodic.upkeep.relations import SIMILAR_MIN_COSINE, link_similar, similar_edges

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
BASE = "checkout pod OOM killed after the cache TTL change in production"


def ev(i: str, summary: str, ws: str = "acme", agent: str = "deployer", minutes: int = 0) -> Any:
    return {
        "id": i,
        "workspace": ws,
        "agent": agent,
        "type": "peer.escalation",
        "summary": summary,
        "ts": (NOW - timedelta(days=1) + timedelta(minutes=minutes)).isoformat(),
    }


def make(url: str, **settings: Any) -> Episodic:
    return Episodic(
        store=open_store(url),
        embedder=FakeEmbedder(dim=1024),
        settings=Settings(**settings),
        clock=lambda: NOW,
    )


@pytest.fixture
def svc(db_url: str) -> Iterator[Episodic]:
    mem = make(db_url)
    yield mem
    mem.close()


def edges(svc: Episodic, ws: str = "acme") -> set[tuple[str, str, float]]:
    ids = [m.id for m in svc.store.scan_memories(ws, limit=1000)[0]]
    related = svc.store.related(ScopeFilter(ws), ids, "similar")
    # Each edge appears from both ends; keep it once, from the newer memory (src).
    order = {i: n for n, i in enumerate(ids)}
    return {
        (a, b, round(w, 4)) for a, found in related.items() for b, w in found if order[a] > order[b]
    }


def cosine(a: str, b: str) -> float:
    m = FakeEmbedder(dim=1024).embed_batch([a, b])
    return float(m[0] @ m[1])


def test_each_indexed_memory_links_to_its_three_closest_older_ones(svc: Episodic) -> None:
    texts = {
        "a": BASE,
        "b": BASE + " again",
        "c": BASE + " twice",
        "d": BASE + " thrice",
        "e": BASE + " once more",
        "x": "quarterly ranking model eval regression on the NDCG metric",
    }
    svc.ingest([ev(i, t, minutes=n) for n, (i, t) in enumerate(texts.items())])
    svc.ingest([ev("other-ws", BASE, ws="beta")])
    assert svc.index_once().embedded == 7
    got = edges(svc)
    by_src: dict[str, list[str]] = {}
    for src, dst, weight in got:
        by_src.setdefault(src, []).append(dst)
        assert weight >= SIMILAR_MIN_COSINE
        assert weight == pytest.approx(cosine(texts[src], texts[dst]), abs=1e-4)
    # "a" came first: nothing older to link to. "e" had four candidates, keeps three.
    assert "a" not in by_src and sorted(by_src["b"]) == ["a"]
    assert sorted(by_src["c"]) == ["a", "b"] and len(by_src["e"]) == 3
    assert all("x" not in (s, d) for s, d, _ in got)  # unrelated text: no edge
    assert edges(svc, "beta") == set()  # and never across workspaces
    (left_out,) = {"a", "b", "c", "d"} - set(by_src["e"])
    assert all(
        cosine(texts["e"], texts[o]) >= cosine(texts["e"], texts[left_out]) for o in by_src["e"]
    )


def test_linking_again_changes_nothing(svc: Episodic) -> None:
    svc.ingest([ev("a", BASE), ev("b", BASE + " again", minutes=1)])
    svc.index_once()
    before = edges(svc)
    vectors = svc.store.get_vectors("acme", ["a", "b"])
    assert link_similar(svc.store, [("b", "acme", vectors["b"])]) == 1  # re-upserted
    assert svc.index_one("acme", "b")
    assert edges(svc) == before and len(before) == 1


def test_index_one_links_a_new_memory_to_existing_ones(svc: Episodic) -> None:
    svc.ingest([ev("a", BASE)])
    svc.index_once()
    svc.ingest([ev("hot", BASE + " again", minutes=5)])
    assert svc.index_one("acme", "hot")
    assert {(s, d) for s, d, _ in edges(svc)} == {("hot", "a")}


def test_within_a_batch_only_earlier_members_are_linked(db_url: str) -> None:
    store = open_store(db_url)
    mem = Episodic(store=store, embedder=FakeEmbedder(dim=64), settings=Settings())
    mem.ingest([ev("p", BASE), ev("q", BASE, minutes=1)])
    rows = mem.store.pending_vectors(10)
    vectors = FakeEmbedder(dim=64).embed_batch([r.content for r in rows])
    store.put_vectors("fake-bow-64", 64, [(r.memory_id, vectors[i]) for i, r in enumerate(rows)])
    found = similar_edges(store, "acme", ["p", "q"], vectors)
    assert [(e.src, e.dst) for e in found] == [("q", "p")]
    assert similar_edges(store, "acme", [], np.zeros((0, 64), np.float32)) == []
    mem.close()


def test_a_linking_failure_never_undoes_the_embedding(
    svc: Episodic, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: Any, **__: Any) -> int:
        raise StoreError("disk full")

    monkeypatch.setattr(svc.store, "add_relations", broken)
    svc.ingest([ev("a", BASE), ev("b", BASE + " again", minutes=1)])
    assert svc.index_once().embedded == 2
    assert svc.store.stats().pending_vectors == 0


def test_the_walk_is_off_by_default_and_on_for_configured_agents(db_url: str) -> None:
    with make(db_url, memory_walk_depth=(("deployer", 1),)) as mem:
        mem.ingest(
            [
                ev("a", BASE),
                ev("b", BASE + " again", minutes=1),
                ev("c", "rollback of the payments service", minutes=2),
                ev("q", BASE, agent="planner", minutes=3),
                ev("r", BASE + " again", agent="planner", minutes=4),
            ]
        )
        mem.index_once()
        walked = mem.recall("production TTL", workspace="acme", agent="deployer", k=1)
        assert [h.via for h in walked.hits] == [None, walked.hits[0].id]
        plain = mem.recall("production TTL", workspace="acme", agent="planner", k=1)
        assert [h.via for h in plain.hits] == [None]
        forced = mem.recall("production TTL", workspace="acme", agent="planner", k=1, walk=1)
        assert len(forced.hits) == 2
        off = mem.recall("production TTL", workspace="acme", agent="deployer", k=1, walk=0)
        assert len(off.hits) == 1


def test_walk_depths_from_the_environment() -> None:
    s = Settings.from_env({"EPISODIC_MEMORY_WALK_DEPTH": "deployer=1, planner , lead=0"})
    assert s.memory_walk_depth == (("deployer", 1), ("planner", 1), ("lead", 0))
    assert s.walk_depth_for("deployer") == 1 and s.walk_depth_for("x") is None
    with pytest.raises(InvalidInput, match="EPISODIC_MEMORY_WALK_DEPTH"):
        Settings.from_env({"EPISODIC_MEMORY_WALK_DEPTH": "deployer=2"})
    with pytest.raises(InvalidInput, match="EPISODIC_MEMORY_WALK_DEPTH"):
        Settings.from_env({"EPISODIC_MEMORY_WALK_DEPTH": "deployer=deep"})
