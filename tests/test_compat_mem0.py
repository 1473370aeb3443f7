"""``episodic.compat.mem0``: Mem0's ``Memory`` names and result shapes over episodic."""

from __future__ import annotations

import ast
import asyncio
import hashlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from episodic import Episodic, Settings
from episodic.compat.mem0 import AsyncMemory, Memory, settings_from_config
from episodic.embed.fake import FakeEmbedder
from episodic.errors import InvalidInput
from episodic.model import ScopeFilter
from episodic.store import open_store

SRC = Path(__file__).resolve().parents[1] / "src"

# Mem0's result shapes, read from the open-source ``mem0ai`` package (mem0/memory/main.py
# and the MemoryItem model, mem0ai 1.0.x): every item of ``get``/``get_all``/``search``
# has these keys (``search`` adds ``score``); ``add`` answers ``{"results": [{"id",
# "memory", "event"}]}`` with event ADD | UPDATE | DELETE | NONE; ``update``, ``delete``
# and ``delete_all`` answer ``{"message": ...}``; ``history`` lists rows with these keys.
MEM0_ITEM = {"id", "memory", "hash", "metadata", "created_at", "updated_at"}
MEM0_IDS = {"user_id", "agent_id", "run_id"}
MEM0_ADD = {"id", "memory", "event"}
MEM0_EVENTS = {"ADD", "UPDATE", "DELETE", "NONE"}
MEM0_HISTORY = {
    "id",
    "memory_id",
    "old_memory",
    "new_memory",
    "event",
    "created_at",
    "updated_at",
    "is_deleted",
    "actor_id",
    "role",
}


@pytest.fixture
def memory(db_url: str) -> Iterator[Memory]:
    ep = Episodic(store=open_store(db_url), embedder=FakeEmbedder())
    m = Memory(episodic=ep)
    yield m
    ep.close()


def _item_shape(item: dict[str, Any], *, score: bool = False) -> None:
    assert set(item) >= MEM0_ITEM | MEM0_IDS
    assert ("score" in item) is score
    assert isinstance(item["memory"], str)
    assert item["hash"] == hashlib.md5(item["memory"].encode()).hexdigest()
    assert item["created_at"] is not None


def test_every_method_answers_in_mem0s_shape(memory: Memory) -> None:
    added = memory.add(
        [{"role": "user", "content": "I live in Paris"}],
        user_id="alice",
        agent_id="helper",
        run_id="r1",
        metadata={"topic": "home"},
        infer=False,
    )
    assert set(added) == {"results"} and len(added["results"]) == 1
    event = added["results"][0]
    assert set(event) >= MEM0_ADD and event["event"] in MEM0_EVENTS
    mid = event["id"]

    got = memory.get(mid)
    assert got is not None
    _item_shape(got)
    assert (got["user_id"], got["agent_id"], got["run_id"]) == ("alice", "helper", "r1")
    assert got["metadata"] == {"topic": "home"}

    listed = memory.get_all(user_id="alice")
    assert [i["id"] for i in listed["results"]] == [mid]
    _item_shape(listed["results"][0])

    found = memory.search("Paris", user_id="alice")
    assert found["results"] and found["results"][0]["id"] == mid
    _item_shape(found["results"][0], score=True)

    assert memory.update(mid, "I live in Lyon") == {"message": "Memory updated successfully!"}
    history = memory.history(mid)
    assert [set(h) for h in history] == [MEM0_HISTORY, MEM0_HISTORY]
    assert [(h["event"], h["old_memory"], h["new_memory"]) for h in history] == [
        ("ADD", None, "I live in Paris"),
        ("UPDATE", "I live in Paris", "I live in Lyon"),
    ]
    after = memory.get(mid)
    assert after is not None and after["updated_at"] != after["created_at"]

    assert memory.delete(mid) == {"message": "Memory deleted successfully!"}
    assert memory.get(mid) is None
    memory.add("a second note", user_id="alice", infer=False)
    assert memory.delete_all(user_id="alice") == {"message": "Memories deleted successfully!"}
    assert memory.get_all(user_id="alice") == {"results": []}


def test_ids_map_to_resource_agent_and_conversation(memory: Memory) -> None:
    mid = memory.add("tea, no sugar", user_id="bob", agent_id="barista", run_id="s1", infer=False)[
        "results"
    ][0]["id"]
    stored = memory.episodic.memory(ScopeFilter(workspace_id="default"), mid)
    assert (stored.resource, stored.agent, stored.conversation) == ("user:bob", "barista", "s1")
    assert memory.get_all(user_id="carol") == {"results": []}
    assert [i["id"] for i in memory.get_all(agent_id="barista")["results"]] == [mid]
    # newer Mem0 takes the ids inside filters: the same answer
    assert [i["id"] for i in memory.get_all(filters={"user_id": "bob"})["results"]] == [mid]


def test_metadata_filters_keep_only_matching_memories(memory: Memory) -> None:
    memory.add("likes jazz", user_id="a", metadata={"kind": "music"}, infer=False)
    memory.add("likes rain", user_id="a", metadata={"kind": "weather"}, infer=False)
    got = memory.get_all(user_id="a", filters={"kind": "music"})["results"]
    assert [i["memory"] for i in got] == ["likes jazz"]
    with pytest.raises(InvalidInput, match=r"filters\.kind"):
        memory.get_all(user_id="a", filters={"kind": {"in": ["music"]}})


def test_add_with_inference_runs_the_conversation_path(memory: Memory) -> None:
    out = memory.add(
        [
            {"role": "user", "content": "My sister Ana moved to Porto last spring"},
            {"role": "assistant", "content": "Good to know, thanks"},
        ],
        user_id="alice",
    )["results"]
    ids = {e["id"] for e in out}
    types = {memory.episodic.memory(ScopeFilter(workspace_id="default"), i).type for i in ids}
    # the messages are stored and flushed into an episode at once
    assert "message" in types and "episode" in types
    assert all(e["event"] == "ADD" for e in out)
    # the conversation made for the call is not shown as a run id
    assert all(i["run_id"] is None for i in memory.get_all(user_id="alice")["results"])


def test_delete_all_and_reset_refuse_without_a_filter_or_confirmation(memory: Memory) -> None:
    memory.add("keep me", user_id="alice", infer=False)
    with pytest.raises(InvalidInput, match="user_id"):
        memory.delete_all()
    with pytest.raises(InvalidInput, match="confirm"):
        memory.reset()
    assert len(memory.get_all(user_id="alice")["results"]) == 1
    memory.reset(confirm=True)
    assert memory.get_all(user_id="alice")["results"] == []


def test_add_needs_an_id_and_text(memory: Memory) -> None:
    with pytest.raises(InvalidInput, match="user_id"):
        memory.add("orphan")
    with pytest.raises(InvalidInput, match=r"messages\[1\].content"):
        memory.add([{"role": "user", "content": "ok"}, {"role": "user"}], user_id="a")


def test_the_same_script_through_compat_and_episodic_gives_the_same_memories(
    tmp_path: Path,
) -> None:
    notes = ["prefers window seats", "allergic to peanuts", "works night shifts"]
    via = Episodic(store=open_store(f"sqlite:///{tmp_path}/a.db"), embedder=FakeEmbedder())
    compat = Memory(episodic=via)
    for n in notes:
        compat.add(n, user_id="alice", agent_id="travel", infer=False)
    direct = Episodic(store=open_store(f"sqlite:///{tmp_path}/b.db"), embedder=FakeEmbedder())
    for n in notes:
        direct.remember(n, workspace="default", resource="user:alice", agent="travel")
    flt = ScopeFilter(workspace_id="default", resource_id="user:alice")
    one = [(m.content, m.type, m.agent) for m in via.list_memories(flt).items]
    two = [(m.content, m.type, m.agent) for m in direct.list_memories(flt).items]
    assert one == two and len(one) == 3
    hits = compat.search("peanuts", user_id="alice")["results"]
    own = direct.recall("peanuts", workspace="default", resource="user:alice").hits
    assert [h["memory"] for h in hits][:1] == [h.memory.content for h in own][:1]
    via.close()
    direct.close()


def test_the_same_conversation_through_compat_and_episodic_gives_the_same_memories(
    tmp_path: Path,
) -> None:
    """``add`` with inference is episodic's conversation path, nothing of its own: the
    messages added and segmented through ``Episodic`` give the same memories."""
    chat = [
        {"role": "user", "content": "My sister Ana moved to Porto last spring with her kids."},
        {"role": "assistant", "content": "Good to know, thanks."},
        {"role": "user", "content": "I'm vegetarian, so no fish in the recipes please."},
    ]
    via = Episodic(store=open_store(f"sqlite:///{tmp_path}/a.db"), embedder=FakeEmbedder())
    Memory(episodic=via).add(chat, user_id="alice", agent_id="cook", run_id="r1")
    direct = Episodic(store=open_store(f"sqlite:///{tmp_path}/b.db"), embedder=FakeEmbedder())
    direct.add_messages(
        chat, workspace="default", conversation="r1", agent="cook", resource="user:alice"
    )
    direct.segment(flush=True, workspace="default", conversation="r1")
    flt = ScopeFilter(workspace_id="default", resource_id="user:alice")

    def made(ep: Episodic) -> list[tuple[str, str, str | None, str | None]]:
        return sorted(
            (m.type, m.content, m.agent, m.conversation) for m in ep.list_memories(flt).items
        )

    one, two = made(via), made(direct)
    assert one == two
    assert {t for t, *_ in one} == {"message", "episode", "profile"}
    via.close()
    direct.close()


def test_from_config_maps_the_database_and_names_unknown_keys(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/cfg.db"
    with pytest.warns(UserWarning, match=r"embedder\.config\.embedding_dims, history_db_path"):
        settings, ws = settings_from_config(
            {
                "vector_store": {"provider": "pgvector", "config": {"connection_string": url}},
                "embedder": {"provider": "ollama", "config": {"model": "m", "embedding_dims": 8}},
                "llm": {"provider": "openai", "config": {"model": "gpt-x", "api_key": "k"}},
                "history_db_path": "/tmp/h.db",
                "workspace": "team",
            }
        )
    assert (settings.db_url, settings.embedder, settings.ollama_model) == (url, "ollama", "m")
    assert (settings.llm_model, settings.llm_url, ws) == (
        "gpt-x",
        "https://api.openai.com/v1",
        "team",
    )
    with pytest.raises(InvalidInput, match=r"vector_store\.config\.url"):
        settings_from_config({"vector_store": {"config": {"url": ""}}})


def test_async_memory_awaits_the_same_methods(tmp_path: Path) -> None:
    ep = Episodic(store=open_store(f"sqlite:///{tmp_path}/x.db"), embedder=FakeEmbedder())
    am = AsyncMemory(episodic=ep)

    async def main() -> list[str]:
        await am.add("likes green tea", user_id="u", infer=False)
        found = await am.search("green tea", user_id="u")
        return [r["memory"] for r in found["results"]]

    assert asyncio.run(main()) == ["likes green tea"]
    ep.close()


def test_import_episodic_does_not_load_compat() -> None:
    code = "import sys, episodic; print('episodic.compat' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.model
def test_the_pages_quickstart_runs_unchanged_offline_and_finds_the_memory(
    tmp_path: Path,
) -> None:
    """The issue's done-when: Mem0's quickstart with the import swapped, run as the page
    shows it, with default settings (no EPISODIC_* variable) and no network."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "mem0.md").read_text("utf-8")
    match = re.search(r"```python\n(.*?)\n```", page, re.S)
    assert match is not None
    code = match.group(1)
    assert 'm.add("I\'m vegetarian", user_id="alice")' in code
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("EPISODIC_", "HF_", "PYTHON", "OPENAI_"))
    }
    data = tmp_path / "home" / "data"
    env |= {"PYTHONPATH": str(SRC), "HF_HUB_OFFLINE": "1", "HOME": str(tmp_path / "home")}
    env["XDG_DATA_HOME"] = str(data)
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    found = ast.literal_eval(done.stdout.strip())
    assert [r["memory"] for r in found["results"]][:1] == ["I'm vegetarian"]
    assert found["results"][0]["user_id"] == "alice"
    assert "sparse-only" not in done.stderr  # the local model ranked it, not keywords alone
    # no .episodic/ folder up from here: the user's data folder
    assert (data / "episodic" / "memory.db").exists()


def test_a_replaced_memory_is_reported_deleted_and_kept(db_url: str) -> None:
    """episodic's supersession is Mem0's DELETE event: the old memory leaves get_all and
    search, and stays readable by id (nothing is erased)."""
    start = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    now = [start]
    ep = Episodic.open(db_url, embedder=None, settings=Settings(), clock=lambda: now[0])
    m = Memory(episodic=ep)
    old = m.add("Always pay my subscriptions with card A.", user_id="u", infer=False)
    old_id = old["results"][0]["id"]
    now[0] = start + timedelta(days=21)
    new = m.add(
        "Card A expired. From now on pay my subscriptions with card B.", user_id="u", infer=False
    )["results"]
    assert [e["event"] for e in new] == ["ADD", "DELETE"]
    assert new[1]["id"] == old_id and new[1]["replaced_by"] == new[0]["id"]
    assert [i["id"] for i in m.get_all(user_id="u")["results"]] == [new[0]["id"]]
    kept = m.get(old_id)
    assert kept is not None and kept["memory"].endswith("card A.")
    ep.close()


def test_search_keeps_to_the_ids_given(memory: Memory) -> None:
    """episodic's recall takes the agent as who asks (a weight), Mem0's as a filter: the
    shell keeps only that agent's memories."""
    memory.add("the deploy key rotates monthly", user_id="u", agent_id="ops", infer=False)
    memory.add("the deploy key lives in the vault", user_id="u", agent_id="sec", infer=False)
    found = memory.search("deploy key", user_id="u", agent_id="ops")["results"]
    assert [r["agent_id"] for r in found] == ["ops"]
    assert memory.search("deploy key", user_id="someone-else")["results"] == []


def test_update_takes_mem0s_text_its_older_data_and_metadata_alone(memory: Memory) -> None:
    """Mem0 2.x names the new text ``text`` (1.x ``data``, both second positionally) and
    lets metadata change alone."""
    mid = memory.add("likes tea", user_id="u", metadata={"k": 1}, infer=False)["results"][0]["id"]
    memory.update(mid, text="likes green tea")
    memory.update(mid, data="likes white tea")
    memory.update(mid, metadata={"k": 2})
    got = memory.get(mid)
    assert got is not None and (got["memory"], got["metadata"]) == ("likes white tea", {"k": 2})
    with pytest.raises(InvalidInput, match="text"):
        memory.update(mid)
    with pytest.raises(InvalidInput, match="data"):
        memory.update(mid, text="a", data="b")


def test_arguments_with_no_counterpart_are_named_in_a_warning(memory: Memory) -> None:
    with pytest.warns(UserWarning, match="arguments not used here: memory_type, prompt"):
        memory.add("likes tea", user_id="u", infer=False, prompt="p", memory_type="core")
    with pytest.warns(UserWarning, match="arguments not used here: rerank"):
        assert memory.search("tea", filters={"user_id": "u"}, rerank=True)["results"]


def test_metadata_given_to_an_inferred_add_is_on_every_memory_it_makes(memory: Memory) -> None:
    """Mem0 gives an ``add``'s metadata to each memory it makes: a metadata filter finds
    the episode and the profile memory drawn from the messages, not only the messages."""
    said = "I'm vegetarian, and I started a new job as a night nurse in Leeds last week."
    out = memory.add(said, user_id="alice", metadata={"topic": "food"})["results"]
    made = {e["id"] for e in out if e["event"] == "ADD"}
    types = {memory.episodic.memory(ScopeFilter(workspace_id="default"), i).type for i in made}
    assert types == {"message", "episode", "profile"}
    found = memory.get_all(user_id="alice", filters={"topic": "food"})["results"]
    assert {i["id"] for i in found} == made
    assert all(i["metadata"] == {"topic": "food"} for i in found)
    # given at the making, not an edit: no memory has a second version
    assert all(len(memory.history(i)) == 1 for i in made)
