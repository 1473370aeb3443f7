"""What ``add`` reports, through ``Memory``, ``AsyncMemory`` and Mem0's REST route.

Mem0 1.x answered ``add`` with ``{"results": [{"id", "memory", "event"}]}``, event one of
ADD / UPDATE / DELETE / NONE (mem0ai 1.0.x, ``mem0/memory/main.py``); Mem0 2.0.18
(read 2026-08) answers only ADD from ``add``. Here each event says what episodic decided:
ADD a memory stored, DELETE an older memory a new one superseded (kept, readable by id),
NONE a candidate left out because the scope already says it (the 0.86 dedupe on the
real model). episodic never rewrites a memory while adding: a changed fact is a new
memory and a DELETE of the one it replaces, so ``add`` never reports UPDATE; UPDATE is
what ``history`` lists for an edit made with ``update``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from episodic import Episodic, Settings
from episodic.compat.mem0 import AsyncMemory, Memory
from episodic.embed.base import Embedder
from episodic.http import asgi
from episodic.store import open_store
from servers import call, serve

Add = Callable[..., dict[str, Any]]
INTERFACES = ("memory", "async", "rest")

# Two wordings of one fact (cosine 0.868 on MiniLM, over 0.86) and a related new fact
# (0.799, under it). Their content words differ enough that the word-share check
# (restates_known) does not decide: the similarity does.
FACT = "I started a new job as a night nurse at the Leeds hospital last week."
SAME_FACT = "Last week I began working night shifts as a nurse in the Leeds hospital."
NEW_FACT = "My new night nurse job at the Leeds hospital pays better than the old one."


@contextmanager
def adder(kind: str, ep: Episodic) -> Iterator[Add]:
    """``add`` of one interface over ``ep``, called like ``Memory.add``."""
    if kind == "memory":
        yield Memory(episodic=ep).add
    elif kind == "async":
        am = AsyncMemory(episodic=ep)

        def add_async(messages: Any, **kwargs: Any) -> dict[str, Any]:
            return asyncio.run(am.add(messages, **kwargs))

        yield add_async
    else:
        key = ep.create_key("default", role="admin")[1]
        with serve(asgi(ep)) as base:

            def add_rest(messages: Any, **kwargs: Any) -> dict[str, Any]:
                if isinstance(messages, str):
                    messages = [{"role": "user", "content": messages}]
                r = call(base, key, "POST", "/mem0/memories", {"messages": messages, **kwargs})
                assert r.status_code == 200, r.text
                out: dict[str, Any] = r.json()
                return out

            yield add_rest


@pytest.fixture(scope="module")
def minilm() -> Embedder:
    from episodic.embed.local import MiniLMEmbedder

    return MiniLMEmbedder()


@pytest.mark.model
@pytest.mark.parametrize("kind", INTERFACES)
def test_a_near_duplicate_is_none_and_a_new_fact_is_add(
    kind: str, db_url: str, minilm: Embedder
) -> None:
    with Episodic(store=open_store(db_url), embedder=minilm, settings=Settings()) as ep:
        with adder(kind, ep) as add:
            first = add(FACT, user_id="alice")["results"]
            again = add(SAME_FACT, user_id="alice")["results"]
            new = add(NEW_FACT, user_id="alice")["results"]
        entries = {e["id"] for e in first if e["event"] == "ADD" and e["id"].startswith("ent_")}
        assert len(entries) == 1
        none = [e for e in again if e["event"] == "NONE"]
        assert [(e["memory"], e["reason"], e["id"]) for e in none] == [(SAME_FACT, "similar", None)]
        # it says what already holds it: the entry the first add stored
        assert none[0]["detail"].startswith("cosine 0.8")
        assert none[0]["detail"].endswith(f"with memory {next(iter(entries))}")
        # the wording said again is no new entry; the message itself is kept
        assert not any(e["id"].startswith("ent_") for e in again if e["event"] == "ADD")
        assert "NONE" not in {e["event"] for e in new}
        assert [e["memory"] for e in new if e["id"].startswith("ent_")] == [NEW_FACT]


@pytest.mark.parametrize("infer", [False, True], ids=["as-is", "inferred"])
@pytest.mark.parametrize("kind", INTERFACES)
def test_a_replaced_memory_is_delete_and_add_never_reports_update(
    kind: str, infer: bool, db_url: str
) -> None:
    """With ``infer`` the conversation path decides (the message, the episode and the
    note drawn from it are each replaced); without it the stored message is."""
    start = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    now = [start]
    old_text = "Always pay my subscriptions with card A from now on please."
    with Episodic.open(db_url, embedder=None, settings=Settings(), clock=lambda: now[0]) as ep:
        with adder(kind, ep) as add:
            old = add(old_text, user_id="u", infer=infer)["results"]
            assert {e["event"] for e in old} == {"ADD"}
            now[0] = start + timedelta(days=21)
            new = add(
                "Card A expired. From now on pay my subscriptions with card B.",
                user_id="u",
                infer=infer,
            )["results"]
        events = {e["event"] for e in new}
        assert events == {"ADD", "DELETE"}  # never UPDATE
        added = [e["id"] for e in new if e["event"] == "ADD"]
        deleted = [e for e in new if e["event"] == "DELETE"]
        assert {e["id"] for e in deleted} == {e["id"] for e in old}
        assert all(e["replaced_by"] in added and e["reason"] for e in deleted)
        # Mem0's UPDATE would mean the old id now says the new text; here it does not
        m = Memory(episodic=ep)
        message = next(e["id"] for e in old if e["id"].startswith("evt_"))
        kept = m.get(message)
        assert kept is not None and kept["memory"] == old_text
        assert {i["id"] for i in m.get_all(user_id="u")["results"]} == set(added)
        m.update(added[0], "From now on pay my subscriptions with card C.")
        assert [h["event"] for h in m.history(added[0])] == ["ADD", "UPDATE"]
