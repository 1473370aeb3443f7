"""``EpisodicStore`` against the real ``langgraph`` package: the store's standard cases
(put/get/delete/search/list_namespaces, namespace isolation), sync and async, and a
compiled graph that writes in one run and recalls in the next."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypedDict

import anyio
import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

from episodic import Episodic, InvalidInput, ScopeFilter
from episodic.integrations.langgraph import EpisodicStore

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def store(db_url: str) -> Iterator[EpisodicStore]:
    # Sparse-only: these cases are about the mapping; the graph test below uses the model.
    s = EpisodicStore(Episodic.open(db_url, embedder=None))
    yield s
    s.close()


def test_put_get_update_delete(store: EpisodicStore) -> None:
    ns = ("acme", "planner")
    store.put(ns, "pref", {"content": "the user likes window seats", "confidence": 0.9})
    item = store.get(ns, "pref")
    assert item is not None
    assert (item.namespace, item.key) == (ns, "pref")
    assert item.value == {"content": "the user likes window seats", "confidence": 0.9}

    store.put(ns, "pref", {"content": "the user likes aisle seats", "confidence": 0.6})
    item = store.get(ns, "pref")
    assert item is not None and item.value["content"] == "the user likes aisle seats"
    assert [i.key for i in store.search(ns)] == ["pref"]  # one item, overwritten

    store.delete(ns, "pref")
    assert store.get(ns, "pref") is None
    assert store.search(ns) == []


def test_an_overwrite_keeps_the_old_version(store: EpisodicStore) -> None:
    ns = ("acme", "planner")
    store.put(ns, "k", {"content": "first text"})
    store.put(ns, "k", {"content": "second text"})
    [memory] = store.mem.list_memories(ScopeFilter(workspace_id="acme")).items
    assert memory.content == "second text"
    assert [v.content for v in store.mem.history(memory.id, workspace="acme")][-1] == "first text"


def test_the_same_key_in_two_namespaces_is_two_items(store: EpisodicStore) -> None:
    store.put(("acme", "a"), "k", {"content": "agent a's note"})
    store.put(("acme", "b"), "k", {"content": "agent b's note"})
    store.put(("other",), "k", {"content": "another workspace"})
    a, b = store.get(("acme", "a"), "k"), store.get(("acme", "b"), "k")
    assert a is not None and a.value["content"] == "agent a's note"
    assert b is not None and b.value["content"] == "agent b's note"
    assert [i.namespace for i in store.search(("acme", "a"))] == [("acme", "a")]
    assert {i.namespace for i in store.search(("acme",))} == {("acme", "a"), ("acme", "b")}
    assert [i.value["content"] for i in store.search(("other",))] == ["another workspace"]
    store.delete(("acme", "a"), "k")
    assert store.get(("acme", "b"), "k") is not None


def test_search_with_a_query_recalls_and_filters(store: EpisodicStore) -> None:
    ns = ("acme", "planner", "trip-42")
    store.put(ns, "seat", {"content": "the traveller wants a window seat", "kind": "pref"})
    store.put(ns, "meal", {"content": "the traveller is vegetarian", "kind": "diet"})
    store.put(("acme", "planner", "trip-7"), "seat", {"content": "window seat for bob"})
    hits = store.search(ns, query="window seat")
    assert [h.key for h in hits] == ["seat"]
    assert hits[0].score is not None and hits[0].score > 0
    assert store.search(("acme",), query="vegetarian", filter={"kind": "diet"})[0].key == "meal"
    assert store.search(("acme",), query="vegetarian", filter={"kind": "pref"}) == []
    # The recall behind it, with its trace.
    result = store.recall(ns, "window seat", explain=True)
    assert result.trace is not None and result.hits


def test_a_filtered_query_search_looks_past_the_first_hits(store: EpisodicStore) -> None:
    ns = ("acme", "planner")
    store.put(ns, "best", {"content": "window seat window seat window seat", "kind": "pref"})
    store.put(ns, "other", {"content": "a window seat for the flight home", "kind": "trip"})
    assert [h.key for h in store.search(ns, query="window seat", limit=1)] == ["best"]
    # The best hit fails the filter; the one after it is what a caller asking for one gets.
    found = store.search(ns, query="window seat", filter={"kind": "trip"}, limit=1)
    assert [h.key for h in found] == ["other"]


def test_listing_pages_with_limit_and_offset(store: EpisodicStore) -> None:
    for i in range(5):
        store.put(("w",), f"k{i}", {"content": f"note number {i}"})
    keys = [i.key for i in store.search(("w",), limit=10)]
    assert sorted(keys) == [f"k{i}" for i in range(5)]
    assert [i.key for i in store.search(("w",), limit=2, offset=1)] == keys[1:3]


def test_a_value_without_content_is_recalled_by_its_fields(store: EpisodicStore) -> None:
    store.put(("w", "a"), "food", {"favourite": "pizza margherita", "n": 3})
    store.put(("w", "a"), "city", {"name": "Lisbon", "why": "trip"}, index=["name"])
    assert store.get(("w", "a"), "food").value == {"favourite": "pizza margherita", "n": 3}  # type: ignore[union-attr]
    assert [h.key for h in store.search(("w",), query="pizza")] == ["food"]
    assert [h.key for h in store.search(("w",), query="Lisbon")] == ["city"]


def test_list_namespaces(store: EpisodicStore) -> None:
    store.put(("acme", "a", "r1"), "k", {"content": "one"})
    store.put(("acme", "a"), "k", {"content": "two"})
    store.put(("acme", "b"), "k", {"content": "three"})
    store.put(("zeta",), "k", {"content": "four"})
    assert store.list_namespaces() == [
        ("acme", "a"),
        ("acme", "a", "r1"),
        ("acme", "b"),
        ("zeta",),
    ]
    assert store.list_namespaces(prefix=("acme", "a")) == [("acme", "a"), ("acme", "a", "r1")]
    assert store.list_namespaces(suffix=("r1",)) == [("acme", "a", "r1")]
    assert store.list_namespaces(prefix=("*", "b")) == [("acme", "b")]
    assert store.list_namespaces(max_depth=1) == [("acme",), ("zeta",)]
    assert store.list_namespaces(limit=1, offset=1) == [("acme", "a", "r1")]


def test_memories_written_other_ways_are_found(store: EpisodicStore) -> None:
    m = store.mem.remember("the deploy needs a VPN", workspace="ops", agent="bot")
    [hit] = store.search(("ops", "bot"), query="VPN deploy")
    assert (hit.namespace, hit.key, hit.value["content"]) == (
        ("ops", "bot"),
        m.id,
        "the deploy needs a VPN",
    )


def test_bad_namespaces_and_values_name_the_field(store: EpisodicStore) -> None:
    with pytest.raises(InvalidInput) as err:
        store.put(("a", "b", "c", "d"), "k", {"content": "too deep"})
    assert err.value.field == "namespace"
    with pytest.raises(ValueError):  # LangGraph's own check: no periods in labels
        store.put(("a.b",), "k", {"content": "x"})
    with pytest.raises(NotImplementedError):  # no TTL: said, not ignored
        store.put(("a",), "k", {"content": "x"}, ttl=5)
    assert store.search(("a",)) == []


def test_the_async_methods(store: EpisodicStore) -> None:
    async def main() -> None:
        await store.aput(("w", "a"), "k", {"content": "async note about kites"})
        item = await store.aget(("w", "a"), "k")
        assert item is not None and item.value == {"content": "async note about kites"}
        assert [h.key for h in await store.asearch(("w",), query="kites")] == ["k"]
        assert await store.alist_namespaces() == [("w", "a")]
        await store.adelete(("w", "a"), "k")
        assert await store.aget(("w", "a"), "k") is None

    anyio.run(main)


class State(TypedDict):
    user: str
    text: str
    recalled: list[str]


def build_graph(store: BaseStore) -> Any:
    def write(state: State, *, store: BaseStore) -> dict[str, Any]:
        if state["text"]:
            store.put(("acme", state["user"]), "latest", {"content": state["text"]})
        return {}

    def read(state: State, *, store: BaseStore) -> dict[str, Any]:
        hits = store.search(("acme", state["user"]), query="what does the user drink")
        return {"recalled": [h.value["content"] for h in hits]}

    builder = StateGraph(State)
    builder.add_node("write", write)
    builder.add_node("read", read)
    builder.add_edge(START, "write")
    builder.add_edge("write", "read")
    builder.add_edge("read", END)
    return builder.compile(store=store)


@pytest.mark.model
def test_a_graph_writes_in_one_run_and_recalls_in_the_next(db_url: str) -> None:
    store = EpisodicStore.open(db_url)  # the default path: the local MiniLM model
    try:
        graph = build_graph(store)
        graph.invoke({"user": "ana", "text": "Ana drinks oolong tea, never coffee", "recalled": []})
        graph.invoke({"user": "bo", "text": "Bo's laptop is a ThinkPad", "recalled": []})
        later = graph.invoke({"user": "ana", "text": "", "recalled": []})
        assert later["recalled"] == ["Ana drinks oolong tea, never coffee"]
        # The same graph, run async, reaches the store through abatch.
        again = anyio.run(graph.ainvoke, {"user": "ana", "text": "", "recalled": []})
        assert again["recalled"] == ["Ana drinks oolong tea, never coffee"]
    finally:
        store.close()


def test_the_example_script_runs(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "langgraph_store.py"), str(tmp_path / "m.db")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "recalled: Ana drinks oolong tea" in out.stdout


def test_filters_take_langgraph_operators(store: EpisodicStore) -> None:
    for key, stars, city in (("a", 2, "Oslo"), ("b", 4, "Rome"), ("c", 5, "Rome")):
        store.put(("w",), key, {"content": f"hotel {key}", "stars": stars, "at": {"city": city}})
    store.put(("w",), "d", {"content": "hotel d, unrated"})

    def keys(flt: dict[str, Any]) -> list[str]:
        return sorted(i.key for i in store.search(("w",), filter=flt))

    assert keys({"stars": {"$gte": 4}}) == ["b", "c"]
    assert keys({"stars": {"$gt": 2, "$lt": 5}}) == ["b"]
    assert keys({"stars": {"$ne": 5}}) == ["a", "b", "d"]
    assert keys({"at": {"city": "Rome"}, "stars": {"$eq": 5}}) == ["c"]
    for bad in ({"stars": {"$near": 3}}, {"at": {"city": {"$like": "R%"}}}):
        with pytest.raises(InvalidInput) as err:
            store.search(("nothing-here",), filter=bad)  # said even when nothing is read
        assert err.value.field == "filter"


def test_an_agents_search_is_not_crowded_out_by_other_agents(store: EpisodicStore) -> None:
    for i in range(12):
        store.put(("w", "b"), f"k{i}", {"content": f"parrot parrot parrot facts, part {i}"})
    store.put(("w", "a"), "mine", {"content": "a parrot visited"})
    assert [h.key for h in store.search(("w", "a"), query="parrot", limit=1)] == ["mine"]


def test_an_overwrite_moves_updated_at_and_keeps_created_at(store: EpisodicStore) -> None:
    first = datetime(2026, 1, 1, tzinfo=UTC)
    store.mem.clock = lambda: first
    store.put(("w",), "k", {"content": "v1"})
    store.mem.clock = lambda: first + timedelta(days=2)
    store.put(("w",), "k", {"content": "v2"})
    item = store.get(("w",), "k")
    assert item is not None
    assert (item.created_at, item.updated_at) == (first, first + timedelta(days=2))
    [listed] = store.search(("w",))
    assert listed.updated_at == first + timedelta(days=2)
    versions = store.mem.history(
        store.mem.list_memories(ScopeFilter(workspace_id="w")).items[0].id, workspace="w"
    )
    assert [(v.content, v.replaced_by) for v in versions] == [("v2", None), ("v1", "langgraph")]


def test_without_langgraph_the_import_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['langgraph'] = None\n"
        "from episodic.extras import MissingExtra\n"
        "try:\n    import episodic.integrations.langgraph\n"
        "except MissingExtra as exc:\n    print(exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert "pip install 'episodic-agent-memory[langgraph]'" in out.stdout
