"""Correcting a memory and reading its history, batches of messages, the memory list's
text filter, a strict ``k``, and a note's text named ``content`` in its errors: through
the Python API, the HTTP API (a real uvicorn), MCP and the CLI, on SQLite and on
PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import anyio
import pytest
from mcp import Client
from typer.testing import CliRunner

from conftest import raw_rows
from episodic import Episodic, Settings
from episodic.cli import app
from episodic.embed.fake import FakeEmbedder
from episodic.errors import InvalidInput
from episodic.http import asgi
from episodic.mcp import Binding, build_server
from episodic.model import ScopeFilter
from episodic.store import open_store
from episodic.write.extract import content_hash
from servers import call, serve

WS = "acme"


@pytest.fixture
def mem(db_url: str) -> Iterator[Episodic]:
    m = Episodic(store=open_store(db_url), embedder=FakeEmbedder(dim=64), settings=Settings())
    yield m
    m.close()


@pytest.fixture
def http(mem: Episodic) -> Iterator[tuple[str, dict[str, str]]]:
    """The server's URL and a secret per key (``<name>.id`` holds each key's id)."""
    keys: dict[str, str] = {}
    for name, agent in (("admin", None), ("deployer", "deployer"), ("reviewer", "reviewer")):
        key, secret = mem.create_key(WS, role="agent" if agent else "admin", agent=agent)
        keys[name], keys[f"{name}.id"] = secret, key.id
    with serve(asgi(mem)) as base:
        yield base, keys


# -- update and history ---------------------------------------------------------------
def test_an_update_keeps_the_old_version_and_searches_the_new_text(mem: Episodic) -> None:
    note = mem.remember("deploys roll out blue green", workspace=WS, agent="deployer")
    mem.update(note.id, workspace=WS, content="deploys roll out canary first")

    # Keyword search (FTS5 / tsvector) follows the new text, not the old.
    found = mem.recall("canary", workspace=WS)
    assert [h.id for h in found.hits] == [note.id]
    assert mem.recall("green", workspace=WS).hits == []
    # Embedded again at once: the stored vector is the new text's.
    vector = mem.store.get_vectors(WS, [note.id])[note.id]
    fresh = FakeEmbedder(dim=64).embed_batch(["deploys roll out canary first"])[0]
    assert list(vector) == pytest.approx(list(fresh), abs=1e-6)

    versions = mem.history(note.id, workspace=WS)
    assert [(v.version, v.current, v.content) for v in versions] == [
        (2, True, "deploys roll out canary first"),
        (1, False, "deploys roll out blue green"),
    ]
    assert versions[0].written_by == "python" and versions[1].replaced_by == "python"
    assert versions[1].written_by is None  # as created
    assert versions[1].replaced_at == versions[0].written_at


def test_new_text_is_not_served_by_its_old_vector_until_embedded(db_url: str) -> None:
    with Episodic(
        store=open_store(db_url), embedder=FakeEmbedder(dim=64), settings=Settings()
    ) as embedded:
        note = embedded.remember("the cache TTL is 60s", workspace=WS)
        assert embedded.store.pending_vectors(10) == []
        # Edited where no embedder runs (sparse-only): the old vector is dropped and
        # the row waits for the indexer, which embeds the new text.
        with Episodic(
            store=open_store(db_url), embedder=None, settings=Settings(embedder="none")
        ) as sparse:
            sparse.update(note.id, workspace=WS, content="the cache TTL is 300s")
        assert [p.memory_id for p in embedded.store.pending_vectors(10)] == [note.id]
        assert embedded.index_once().embedded == 1
        assert embedded.store.pending_vectors(10) == []


def test_an_entry_s_dedupe_hash_follows_its_new_text(mem: Episodic) -> None:
    # Entries carry the hash extraction dedupes by (seed 004): an edit re-derives it.
    note = mem.remember("the cache TTL is 60s", workspace=WS)
    mem.store.restore(replace(note, content_hash=content_hash(note.content)))
    mem.update(note.id, workspace=WS, content="the cache TTL is 300s")
    known = mem.store.known_hashes(
        ScopeFilter(WS),
        [content_hash("the cache TTL is 60s"), content_hash("the cache TTL is 300s")],
    )
    assert known == {content_hash("the cache TTL is 300s")}


def test_a_no_op_update_keeps_no_version(mem: Episodic) -> None:
    note = mem.remember("retries back off exponentially", workspace=WS, importance=0.6)
    same = mem.update(note.id, workspace=WS, content=note.content, importance=0.6)
    assert same.content == note.content
    assert [v.current for v in mem.history(note.id, workspace=WS)] == [True]
    raised = mem.update(note.id, workspace=WS, importance=0.9)
    assert (raised.importance, raised.base_importance) == (0.9, 0.9)
    assert [v.importance for v in mem.history(note.id, workspace=WS)] == [0.9, 0.6]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"content": ""}, "content"),
        ({"content": "a\x00b"}, "content"),
        ({"importance": 1.5}, "importance"),
        ({"importance": True}, "importance"),
        ({"payload": ["not", "an", "object"]}, "payload"),
        ({}, "content"),
    ],
)
def test_bad_updates_are_refused_by_field(
    mem: Episodic, change: dict[str, Any], field: str
) -> None:
    note = mem.remember("keep this text", workspace=WS)
    with pytest.raises(InvalidInput) as info:
        mem.update(note.id, workspace=WS, **change)
    assert info.value.field == field
    assert mem.memory(ScopeFilter(WS), note.id).content == "keep this text"
    assert len(mem.history(note.id, workspace=WS)) == 1


def test_forget_removes_the_history_too(mem: Episodic, db_url: str) -> None:
    note = mem.remember("the old secret text", workspace=WS)
    mem.update(note.id, workspace=WS, content="the new text")
    counts = mem.forget(workspace=WS, memory=note.id)
    assert counts.history == 1
    assert raw_rows(db_url, "SELECT count(*) FROM memory_history")[0][0] == 0


def test_http_patch_and_history_follow_the_forget_rules(
    mem: Episodic, http: tuple[str, dict[str, str]]
) -> None:
    base, keys = http
    own = mem.remember("deploy at noon", workspace=WS, agent="deployer")
    path = f"/v1/memories/{own.id}"
    r = call(base, keys["deployer"], "PATCH", path, {"content": "deploy at 2pm"})
    assert r.status_code == 200, r.text
    assert r.json()["content"] == "deploy at 2pm"
    r = call(base, keys["reviewer"], "PATCH", path, {"importance": 0.9})
    assert r.status_code == 404  # another agent's own memory: invisible to this key
    r = call(base, keys["admin"], "PATCH", path, {"importance": 0.9})
    assert r.status_code == 200 and r.json()["importance"] == 0.9

    history = call(base, keys["deployer"], "GET", f"{path}/history").json()
    versions = history["versions"]
    assert [(v["version"], v["current"], v["content"]) for v in versions] == [
        (3, True, "deploy at 2pm"),
        (2, False, "deploy at 2pm"),
        (1, False, "deploy at noon"),
    ]
    # Each change names the key that made it.
    assert [v["replaced_by"] for v in versions[1:]] == [keys["admin.id"], keys["deployer.id"]]
    assert versions[0]["written_by"] == keys["admin.id"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": ""}, "content"),
        ({"content": "x\u0000y"}, "content"),
        ({"importance": 2}, "importance"),
        ({"importance": "0.5"}, "importance"),
        ({"colour": "red"}, "colour"),
        ({"workspace": "acme"}, "workspace"),
    ],
)
def test_http_patch_refuses_bad_fields(
    mem: Episodic, http: tuple[str, dict[str, str]], body: dict[str, Any], field: str
) -> None:
    base, keys = http
    note = mem.remember("stays as it is", workspace=WS)
    r = call(base, keys["admin"], "PATCH", f"/v1/memories/{note.id}", body)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["field"] == field
    assert mem.memory(ScopeFilter(WS), note.id).content == "stays as it is"


# -- batched messages -----------------------------------------------------------------
def test_a_batch_of_messages_is_stored_in_order_and_bad_items_are_named(
    mem: Episodic, http: tuple[str, dict[str, str]]
) -> None:
    base, keys = http
    batch = {
        "conversation": "c1",
        "messages": [
            {"content": "first", "role": "user"},
            {"content": "bad\u0000text"},
            {"content": "second", "role": "assistant"},
            {"content": "third", "role": "robot"},
            {"content": "fourth"},
        ],
    }
    r = call(base, keys["deployer"], "POST", "/v1/messages", batch)
    assert r.status_code == 200, r.text
    report = r.json()
    assert (report["received"], report["stored"]) == (5, 3)
    assert [(e["index"], e["field"]) for e in report["errors"]] == [(1, "content"), (3, "role")]
    assert report["ids"][1] is None and report["ids"][3] is None
    pending = mem.store.pending_messages(WS, "c1")
    assert [e.summary for e in pending] == ["first", "second", "fourth"]
    assert {e.agent for e in pending} == {"deployer"}  # bound by the key


def test_one_message_keeps_its_form(mem: Episodic, http: tuple[str, dict[str, str]]) -> None:
    base, keys = http
    r = call(base, keys["admin"], "POST", "/v1/messages", {"conversation": "c2", "content": "hi"})
    assert r.status_code == 201, r.text
    assert set(r.json()) == {"id", "workspace", "conversation", "ts"}
    r = call(
        base, keys["admin"], "POST", "/v1/messages", {"conversation": "c2", "content": "a\x00"}
    )
    assert r.status_code == 422 and r.json()["error"]["field"] == "content"


def test_add_messages_in_python(mem: Episodic) -> None:
    report = mem.add_messages(
        [{"content": "one"}, {"content": "two", "conversation": "other"}, {"text": "old name"}],
        workspace=WS,
        conversation="c3",
    )
    assert report.ingest.stored == 2
    assert [(e.line, e.field) for e in report.ingest.errors] == [(2, "text")]
    assert [e.summary for e in mem.store.pending_messages(WS, "c3")] == ["one"]


# -- the list's text filter -----------------------------------------------------------
def test_the_memory_list_filters_by_text_with_the_same_cursors(
    mem: Episodic, http: tuple[str, dict[str, str]]
) -> None:
    base, keys = http
    for i in range(5):
        mem.remember(f"checkout deployed, attempt {i}", workspace=WS, id=f"d{i}")
    mem.remember("an unrelated lunch order", workspace=WS, id="lunch")
    mem.remember("checkout was deployed by hand", workspace=WS, id="hand", agent="x")

    page = mem.list_memories(ScopeFilter(WS), q="checkout deploy", limit=3)
    seen = [m.id for m in page.items]
    assert page.next_cursor is not None
    rest = mem.list_memories(ScopeFilter(WS), q="checkout deploy", limit=3, cursor=page.next_cursor)
    seen += [m.id for m in rest.items]
    assert rest.next_cursor is None
    assert seen == ["hand", "d4", "d3", "d2", "d1", "d0"]  # newest first, no lunch

    r = call(base, keys["admin"], "GET", "/v1/memories", q="lunch")
    assert [m["id"] for m in r.json()["items"]] == ["lunch"]
    r = call(base, keys["admin"], "GET", "/v1/memories", q="the of")  # stopwords only
    assert r.status_code == 200 and r.json()["items"] == []


# -- k is a whole number --------------------------------------------------------------
@pytest.mark.parametrize("k", [True, "5", 2.5])
def test_recall_refuses_a_k_that_is_not_a_whole_number(
    mem: Episodic, http: tuple[str, dict[str, str]], k: Any
) -> None:
    base, keys = http
    for path in ("/v1/recall", "/v1/render"):
        r = call(base, keys["admin"], "POST", path, {"query": "deploy", "k": k})
        assert r.status_code == 422, r.text
        assert r.json()["error"]["field"] == "k"
    with pytest.raises(InvalidInput) as info:
        mem.recall("deploy", workspace=WS, k=k)
    assert info.value.field == "k"


def test_an_out_of_range_k_still_falls_back_to_five(
    mem: Episodic, http: tuple[str, dict[str, str]]
) -> None:
    base, keys = http
    r = call(base, keys["admin"], "POST", "/v1/recall", {"query": "deploy", "k": 99})
    assert r.status_code == 200
    assert "k=99 is outside 1..50: recalled 5 instead" in r.json()["warnings"]


# -- a note's text is its content -----------------------------------------------------
def test_a_nul_in_a_note_or_message_is_named_content(
    mem: Episodic, http: tuple[str, dict[str, str]]
) -> None:
    base, keys = http
    r = call(base, keys["admin"], "POST", "/v1/memories", {"content": "a\u0000b"})
    assert r.status_code == 422 and r.json()["error"]["field"] == "content"
    for write in (
        lambda: mem.remember("a\x00b", workspace=WS),
        lambda: mem.add_message("a\x00b", workspace=WS, conversation="c"),
    ):
        with pytest.raises(InvalidInput) as info:
            write()
        assert info.value.field == "content"


# -- MCP and CLI ----------------------------------------------------------------------
def test_mcp_update_memory_is_bound_to_its_agent(mem: Episodic) -> None:
    own = mem.remember("the queue holds 100 jobs", workspace=WS, agent="deployer")
    other = mem.remember("reviews need two approvals", workspace=WS, agent="reviewer")
    server = build_server(mem, Binding.of(WS, "deployer", None, None))

    async def main() -> None:
        with serve(server.streamable_http_app()) as base:
            async with Client(f"{base}/mcp") as client:
                done = await client.call_tool(
                    "update_memory", {"memory_id": own.id, "content": "the queue holds 500 jobs"}
                )
                assert not done.is_error
                refused = await client.call_tool(
                    "update_memory", {"memory_id": other.id, "content": "one approval"}
                )
                assert refused.is_error

    anyio.run(main)
    assert mem.memory(ScopeFilter(WS), own.id).content == "the queue holds 500 jobs"
    assert mem.history(own.id, workspace=WS)[1].replaced_by == "mcp"
    assert mem.memory(ScopeFilter(WS), other.id).content == "reviews need two approvals"


@pytest.mark.parametrize("k", ["5", True])
def test_mcp_recall_refuses_a_k_that_is_not_a_whole_number(mem: Episodic, k: Any) -> None:
    mem.remember("the queue holds 100 jobs", workspace=WS, agent="deployer")
    server = build_server(mem, Binding.of(WS, "deployer", None, None))

    async def main() -> None:
        with serve(server.streamable_http_app()) as base:
            async with Client(f"{base}/mcp") as client:
                strict = await client.call_tool("recall_memory", {"query": "queue", "k": k})
                assert strict.is_error and "k" in str(strict.content)
                fine = await client.call_tool("recall_memory", {"query": "queue", "k": 3})
                assert not fine.is_error

    anyio.run(main)


def test_cli_memory_update_and_history(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EPISODIC_EMBEDDER", "none")
    with Episodic.open(db_url, settings=Settings(embedder="none")) as m:
        note = m.remember("backups run at 2am", workspace=WS)
    runner = CliRunner()
    env = {"EPISODIC_EMBEDDER": "none"}
    done = runner.invoke(
        app,
        ["--db", db_url, "memory", "update", note.id, "-w", WS, "--content", "backups run at 4am"],
        env=env,
    )
    assert done.exit_code == 0, done.output
    shown = runner.invoke(
        app, ["--db", db_url, "memory", "history", note.id, "-w", WS, "--json"], env=env
    )
    assert shown.exit_code == 0, shown.output
    assert '"replaced_by": "cli"' in shown.stdout
    bad = runner.invoke(
        app, ["--db", db_url, "memory", "update", note.id, "-w", WS, "--importance", "3"], env=env
    )
    assert bad.exit_code == 2 and "importance" in bad.output
