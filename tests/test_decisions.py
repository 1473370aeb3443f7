"""Every automatic decision visible and reversible, through every interface, on SQLite
and on PostgreSQL: why an event was not admitted (ingest's report), what was decided
about a memory (``decisions``, ``memory why``, ``GET .../decisions``, the page), and
undoing a supersession (``restore``, ``memory restore``, ``POST .../restore``, the MCP
tool), after which detection, offline or by a model, never makes it again."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from typer.testing import CliRunner

from conftest import raw_execute
from crash_support import doctor_deep, mismatches
from episodic import Episodic, InvalidInput, Settings
from episodic.cli import app
from episodic.embed.fake import FakeEmbedder
from episodic.http import asgi
from episodic.llm.base import ScriptedLLM
from episodic.mcp import Binding, build_server
from episodic.model import MemoryStatus, ScopeFilter
from episodic.store import open_store
from servers import call, serve
from test_supersession import NEW, OLD, QUESTION, WS, Clock
from test_supersession_interfaces import CHANGED, card_change, structured
from test_upkeep_compact import DUP, NOW, store_memory
from test_upkeep_compact import mem as compacted

ENV = {"EPISODIC_EMBEDDER": "none", "COLUMNS": "250"}
KEEP = "set refs.episodic to keep it"
DEPLOY = {"workspace": "scratch", "type": "deploy.finished", "summary": "payments-api 2.9.2"}


def cli(db_url: str, *args: str, stdin: str | None = None) -> Any:
    return CliRunner().invoke(app, ["--db", db_url, *args], env=ENV, input=stdin)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def mem(db_url: str, clock: Clock) -> Iterator[Episodic]:
    m = Episodic.open(db_url, embedder=None, settings=Settings(), clock=clock)
    yield m
    m.close()


def check_again(db_url: str, memory_id: str) -> None:
    """Put a memory back on the list detection reads, as a fresh write would be."""
    raw_execute(db_url, f"UPDATE memories SET supersession_pending = 1 WHERE id = '{memory_id}'")


def hit_ids(mem: Episodic) -> list[str]:
    return [h.id for h in mem.recall(QUESTION, workspace=WS, mark=False).hits]


# -- admission: why an event was not kept -----------------------------------------------------
def test_ingest_says_why_an_info_event_was_not_admitted_and_how_to_keep_it(
    mem: Episodic, db_url: str
) -> None:
    url = db_url
    result = cli(url, "ingest", "-", "--json", stdin=json.dumps(DEPLOY) + "\n")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["admitted"] == 0
    [refused] = report["not_admitted"]
    assert (refused["line"], refused["type"], refused["rule"]) == (
        1,
        "deploy.finished",
        "unlisted-type",
    )
    assert refused["fix"] == "set refs.episodic to keep it"

    kept = {**DEPLOY, "refs": {"episodic": True}}
    again = json.loads(cli(url, "ingest", "-", "--json", stdin=json.dumps(kept) + "\n").stdout)
    assert (again["admitted"], again["not_admitted"]) == (1, [])

    decisions = [
        {"workspace": "scratch", "type": "keeper.decision", "summary": f"limit is {n} GiB"}
        for n in (2, 3, 4)
    ]
    lines = "".join(json.dumps(d) + "\n" for d in [*decisions, DEPLOY])
    text = cli(url, "ingest", "-", stdin=lines)
    assert text.exit_code == 0, text.output
    said = " ".join(text.stdout.split())
    assert (
        "3 events not kept as memories (severity-gate: info-level keeper.decision events "
        "are kept only at warn or error): set refs.episodic to keep it, or send it at warn"
    ) in said
    assert "1 event not kept as a memory (unlisted-type:" in said


def test_an_event_sent_without_a_type_is_told_so_not_named_a_type_it_never_gave(
    mem: Episodic, db_url: str
) -> None:
    untyped = {"workspace": "scratch", "summary": "the nightly backup now runs at 02:00"}
    result = cli(db_url, "ingest", "-", "--json", stdin=json.dumps(untyped) + "\n")
    assert result.exit_code == 0, result.output
    [refused] = json.loads(result.stdout)["not_admitted"]
    assert refused["type"] == "note" and refused["rule"] == "unlisted-type"
    assert refused["reason"].startswith("note events (an event sent without a type is one)")
    assert "give it a type that is kept" in refused["fix"]
    # A type the caller did give is named as before.
    typed = json.loads(cli(db_url, "ingest", "-", "--json", stdin=json.dumps(DEPLOY) + "\n").stdout)
    assert typed["not_admitted"][0]["reason"] == "deploy.finished is not a type kept as a memory"


def test_http_ingest_names_each_event_not_admitted_by_its_position(mem: Episodic) -> None:
    _, secret = mem.create_key("scratch", role="admin")
    with serve(asgi(mem)) as base:
        batch = {"events": [{**DEPLOY, "refs": {"episodic": True}}, DEPLOY, {"type": 3}]}
        response = call(base, secret, "POST", "/v1/events", batch)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["admitted"] == 1 and body["errors"][0]["index"] == 2
    [refused] = body["not_admitted"]
    assert (refused["index"], refused["rule"], refused["fix"]) == (
        1,
        "unlisted-type",
        "set refs.episodic to keep it",
    )
    assert body["not_admitted_by_reason"] == [
        {
            "rule": "unlisted-type",
            "reason": "deploy.finished is not a type kept as a memory",
            "fix": "set refs.episodic to keep it",
            "count": 1,
        }
    ]


# -- restore: undoing a supersession ------------------------------------------------------
def test_a_restored_memory_is_recalled_again_and_detection_never_supersedes_it_again(
    mem: Episodic, clock: Clock, db_url: str
) -> None:
    card_change(mem, clock)
    assert hit_ids(mem) == ["card-b"]

    restored = mem.restore("card-a", workspace=WS)

    assert (restored.status, restored.valid_to, restored.superseded_by) == (
        MemoryStatus.ACTIVE,
        None,
        None,
    )
    assert set(hit_ids(mem)) == {"card-a", "card-b"}
    [undone] = [d for d in mem.decisions("card-a", workspace=WS) if d.kind == "superseded"]
    assert (undone.other, undone.reverted_by) == ("card-b", "python")
    assert undone.decided_by.startswith("offline:") and undone.reverted_at == CHANGED

    # Detection runs again over the newer memory (as after an import or a re-check): the
    # offline rule still says "supersedes", and the reverted pair is not made again.
    check_again(db_url, "card-b")
    result = cli(db_url, "index", "--once", "--flush")
    assert result.exit_code == 0, result.output
    assert mem.store.get_memory(WS, "card-a").status is MemoryStatus.ACTIVE
    check_again(db_url, "card-b")
    assert mem.check_supersessions().superseded == 0

    # An explicit request still replaces it, and the decision is no longer reverted.
    mem.supersede("card-a", "card-b", workspace=WS, reason="the user confirmed")
    [link] = mem.supersessions("card-a", workspace=WS)
    assert (link.reason, link.reverted_at) == ("the user confirmed", None)
    assert mem.store.get_memory(WS, "card-a").status is MemoryStatus.SUPERSEDED


def test_a_model_never_supersedes_a_restored_pair_again(db_url: str, clock: Clock) -> None:
    says = {"decisions": [{"ref": "1", "decision": "supersedes", "reason": "card B now"}]}
    llm = ScriptedLLM([says, says])
    m = Episodic(
        store=open_store(db_url),
        embedder=FakeEmbedder(dim=64),
        llm=llm,
        settings=Settings(),
        clock=clock,
    )
    try:
        card_change(m, clock)
        assert m.supersessions("card-a", workspace=WS)[0].decided_by == "llm:scripted/scripted"
        m.restore("card-a", workspace=WS)
        check_again(db_url, "card-b")
        m.check_supersessions()
        assert llm.replies_used == 1  # the undone pair is not put to the model again
        assert m.store.get_memory(WS, "card-a").status is MemoryStatus.ACTIVE
    finally:
        m.close()


def test_restoring_a_memory_that_is_not_superseded_is_a_clear_error(
    mem: Episodic, clock: Clock, db_url: str
) -> None:
    card_change(mem, clock)
    with pytest.raises(InvalidInput) as refused:
        mem.restore("card-b", workspace=WS)
    assert refused.value.field == "memory_id"
    assert "card-b is active, not superseded" in refused.value.message
    result = cli(db_url, "memory", "restore", "card-b", "-w", WS)
    assert result.exit_code != 0
    assert "not superseded" in " ".join(result.output.split())
    assert mem.store.get_memory(WS, "card-a").status is MemoryStatus.SUPERSEDED


def test_cli_why_and_restore(mem: Episodic, clock: Clock, db_url: str) -> None:
    card_change(mem, clock)
    why = cli(db_url, "memory", "why", "card-a", "-w", WS)
    assert why.exit_code == 0, why.output
    said = " ".join(why.stdout.split())
    assert "admitted card-a (policy:refs.episodic" in said
    assert "superseded card-b (offline:" in said and "reverted" not in said

    restored = cli(db_url, "memory", "restore", "card-a", "-w", WS, "--json")
    assert restored.exit_code == 0, restored.output
    assert json.loads(restored.stdout)["status"] == "active"

    after = cli(db_url, "memory", "why", "card-a", "-w", WS, "--json")
    body = json.loads(after.stdout)
    [undone] = [d for d in body["decisions"] if d["kind"] == "superseded"]
    assert (undone["other"], undone["reverted"], undone["reverted_by"]) == ("card-b", True, "cli")
    links = cli(db_url, "memory", "supersessions", "card-a", "-w", WS)
    assert "[reverted " in links.stdout and " by cli]" in links.stdout
    replacing = json.loads(cli(db_url, "memory", "why", "card-b", "-w", WS, "--json").stdout)
    assert [(d["kind"], d["other"], d["reverted"]) for d in replacing["decisions"][2:]] == [
        ("supersedes", "card-a", True)
    ]
    missing = cli(db_url, "memory", "why", "nope", "-w", WS)
    assert missing.exit_code != 0 and "nope" in missing.output


def test_http_decisions_and_restore_follow_the_edit_rules(mem: Episodic, clock: Clock) -> None:
    card_change(mem, clock)
    keys = {}
    for name, agent in (("admin", None), ("billing", "billing"), ("reviewer", "reviewer")):
        key, secret = mem.create_key(WS, role="agent" if agent else "admin", agent=agent)
        keys[name], keys[f"{name}.id"] = secret, key.id
    with serve(asgi(mem)) as base:
        seen = call(base, keys["admin"], "GET", "/v1/memories/card-a/decisions")
        assert seen.status_code == 200, seen.text
        kinds = [(d["kind"], d["other"]) for d in seen.json()["decisions"]]
        assert kinds == [("admitted", "card-a"), ("importance", None), ("superseded", "card-b")]

        # Another agent's key cannot see billing's memory, let alone restore it.
        other = call(base, keys["reviewer"], "POST", "/v1/memories/card-a/restore")
        assert other.status_code == 404, other.text
        unknown = call(base, keys["billing"], "POST", "/v1/memories/nope/restore")
        assert unknown.status_code == 404, unknown.text
        done = call(base, keys["billing"], "POST", "/v1/memories/card-a/restore")
        assert done.status_code == 200, done.text
        assert (done.json()["status"], done.json()["superseded_by"]) == ("active", None)
        twice = call(base, keys["billing"], "POST", "/v1/memories/card-a/restore")
        assert twice.status_code == 422, twice.text
        assert twice.json()["error"]["field"] == "memory_id"

        after = call(base, keys["admin"], "GET", "/v1/memories/card-a/decisions").json()
        [undone] = [d for d in after["decisions"] if d["kind"] == "superseded"]
        assert (undone["reverted"], undone["reverted_by"]) == (True, keys["billing.id"])
        links = call(base, keys["admin"], "GET", "/v1/memories/card-a/supersessions").json()
        assert links["supersessions"][0]["reverted_by"] == keys["billing.id"]
        schema = httpx.get(f"{base}/openapi.json").json()["paths"]
        assert "get" in schema["/v1/memories/{memory_id}/decisions"]
        assert "post" in schema["/v1/memories/{memory_id}/restore"]


def test_mcp_restore_memory(mem: Episodic, clock: Clock) -> None:
    card_change(mem, clock)
    server = build_server(mem, Binding.of(WS, "billing", None, None))

    async def main() -> None:
        with serve(server.streamable_http_app()) as base:
            async with Client(f"{base}/mcp") as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                assert tools["restore_memory"].annotations is not None
                done = structured(await client.call_tool("restore_memory", {"memory_id": "card-a"}))
                assert done == {"id": "card-a", "restored": True, "status": "active"}
                again = await client.call_tool("restore_memory", {"memory_id": "card-a"})
                assert again.is_error and "not superseded, retired or" in str(again.content)
                missing = await client.call_tool("restore_memory", {"memory_id": "nope"})
                assert missing.is_error and "no memory nope here" in str(missing.content)

    anyio.run(main)
    assert mem.store.get_memory(WS, "card-a").status is MemoryStatus.ACTIVE


def test_the_page_lists_decisions_and_restores(mem: Episodic, clock: Clock) -> None:
    card_change(mem, clock)
    _, secret = mem.create_key(WS, role="admin")
    with serve(asgi(mem)) as base, httpx.Client(base_url=base, timeout=30) as c:
        assert c.post("/ui/login", data={"key": secret}).status_code == 303
        page = c.get("/ui/memories/card-a").text
        table = page.split('id="decisions"')[1].split("</table>")[0]
        assert 'data-kind="superseded"' in table and 'href="/ui/memories/card-b"' in table
        assert "offline:" in table and "reverted" not in table
        assert 'action="/ui/memories/card-a/restore"' in page
        done = c.post("/ui/memories/card-a/restore")
        assert done.status_code == 303 and "restored" in done.headers["location"]
        after = c.get("/ui/memories/card-a").text
        assert 'class="reverted"' in after.split('id="decisions"')[1].split("</table>")[0]
        assert 'action="/ui/memories/card-a/restore"' not in after
    assert mem.store.get_memory(WS, "card-a").status is MemoryStatus.ACTIVE


def test_an_export_carries_a_restore_and_the_import_never_decides_it_again(
    mem: Episodic, clock: Clock, tmp_path: Path, new_db_url: Any
) -> None:
    card_change(mem, clock)
    mem.restore("card-a", workspace=WS)
    mem.export_markdown(tmp_path / "out", workspace=WS)
    url = new_db_url()
    with Episodic.open(url, embedder=None, settings=Settings(), clock=clock) as other:
        report = other.import_markdown(tmp_path / "out")
        assert report.ok, report
        [link] = other.supersessions("card-a", workspace=WS)
        assert (link.new_id, link.reverted_by) == ("card-b", "python")
        assert link.reverted_at == CHANGED
        check_again(url, "card-b")
        other.check_supersessions()
        assert other.store.get_memory(WS, "card-a").status is MemoryStatus.ACTIVE
        hits = other.recall(QUESTION, workspace=WS, mark=False).hits
        assert {OLD, NEW} <= {h.memory.content for h in hits}


def test_doctor_deep_finds_a_restored_memory_sound(
    mem: Episodic, clock: Clock, db_url: str
) -> None:
    card_change(mem, clock)
    mem.restore("card-a", workspace=WS)
    code, report = doctor_deep(db_url)
    assert mismatches(report) == [] and code == 0


def test_why_names_the_merge_and_the_phase_that_took_a_memory_out(db_url: str) -> None:
    m = Episodic(
        store=open_store(db_url),
        embedder=FakeEmbedder(dim=512),
        settings=Settings(archive_after_days=90),
        clock=lambda: NOW,
    )
    try:
        store_memory(m, compacted("keep", DUP, importance=0.9, base_importance=0.9), days=5)
        store_memory(m, compacted("dup", DUP + " again"), days=5)
        task = {"domain": "task", "phase": "design"}
        store_memory(m, compacted("t0", "sketch the schema", payload=task), days=5)
        m.compact(workspace="acme")
        m.retire_phase("acme", "design")
        [merged] = [d for d in m.decisions("dup", workspace="acme") if d.kind == "merged"]
        assert (merged.other, merged.decided_by) == ("keep", "upkeep:compact")
        [retired] = [d for d in m.decisions("t0", workspace="acme") if d.kind == "retired"]
        assert (retired.decided_by, retired.reason, retired.at) == (
            "upkeep:retire-phase",
            "phase design ended",
            NOW,
        )
        # Undone: active again, the retirement listed as reverted, and the end of the same
        # phase does not retire it again.
        assert m.restore("t0", workspace="acme").status is MemoryStatus.ACTIVE
        [undone] = [d for d in m.decisions("t0", workspace="acme") if d.kind == "retired"]
        assert (undone.decided_by, undone.reverted_at, undone.reverted_by) == (
            "upkeep:retire-phase",
            NOW,
            "python",
        )
        assert m.retire_phase("acme", "design") == []
        assert m.store.get_memory("acme", "t0").status is MemoryStatus.ACTIVE
        assert m.history("t0", workspace="acme")[1].payload["status"] == "retired"
        with pytest.raises(InvalidInput, match="t0 is active, not superseded, retired or"):
            m.restore("t0", workspace="acme")
    finally:
        m.close()


def test_a_retired_memory_is_restored_from_every_interface(
    mem: Episodic, clock: Clock, db_url: str
) -> None:
    card_change(mem, clock)
    flt = ScopeFilter(workspace_id=WS)
    _, secret = mem.create_key(WS, role="admin")
    mem.retire(flt, "card-b")
    restored = cli(db_url, "memory", "restore", "card-b", "-w", WS, "--json")
    assert restored.exit_code == 0, restored.output
    assert json.loads(restored.stdout)["status"] == "active"
    why = json.loads(cli(db_url, "memory", "why", "card-b", "-w", WS, "--json").stdout)
    [undone] = [d for d in why["decisions"] if d["kind"] == "retired"]
    assert (undone["decided_by"], undone["reverted"], undone["reverted_by"]) == (
        "explicit",
        True,
        "cli",
    )
    mem.retire(flt, "card-b")
    with serve(asgi(mem)) as base:
        with httpx.Client(base_url=base, timeout=30) as c:
            assert c.post("/ui/login", data={"key": secret}).status_code == 303
            assert 'action="/ui/memories/card-b/restore"' in c.get("/ui/memories/card-b").text
        done = call(base, secret, "POST", "/v1/memories/card-b/restore")
        assert done.status_code == 200, done.text
        assert done.json()["status"] == "active"
    mem.retire(flt, "card-b")
    server = build_server(mem, Binding.of(WS, "billing", None, None))

    async def main() -> None:
        with serve(server.streamable_http_app()) as base:
            async with Client(f"{base}/mcp") as client:
                done = structured(await client.call_tool("restore_memory", {"memory_id": "card-b"}))
                assert done == {"id": "card-b", "restored": True, "status": "active"}

    anyio.run(main)
    assert mem.store.get_memory(WS, "card-b").status is MemoryStatus.ACTIVE
    # Recalled again.
    hits = mem.recall(QUESTION, workspace=WS, mark=False).hits
    assert "card-b" in {h.id for h in hits}


def test_a_message_batch_names_the_messages_not_kept_as_memories(mem: Episodic) -> None:
    said = [{"content": "deploy failed"}, {"content": "exit 1", "role": "tool"}]
    report = mem.add_messages(said, workspace=WS, conversation="c-1").to_json()
    [tool] = report["not_admitted"]
    assert (tool["index"], tool["rule"], tool["fix"]) == (1, "spoken-message", KEEP)
    _, secret = mem.create_key(WS, role="admin")
    with serve(asgi(mem)) as base:
        body = {"conversation": "c-2", "messages": [*said, {"content": "x", "role": "system"}]}
        response = call(base, secret, "POST", "/v1/messages", body)
    assert response.status_code == 200, response.text
    assert [n["index"] for n in response.json()["not_admitted"]] == [1, 2]


def test_a_compacted_memory_is_restored_and_never_merged_again(db_url: str) -> None:
    m = Episodic(
        store=open_store(db_url),
        embedder=FakeEmbedder(dim=512),
        settings=Settings(archive_after_days=90),
        clock=lambda: NOW,
    )
    try:
        store_memory(m, compacted("keep", DUP, importance=0.9, base_importance=0.9), days=5)
        store_memory(m, compacted("dup", DUP + " again"), days=5)
        m.compact(workspace="acme")
        assert m.store.get_memory("acme", "dup").status is MemoryStatus.COMPACTED

        restored = m.restore("dup", workspace="acme")
        assert (restored.status, restored.content) == (MemoryStatus.ACTIVE, DUP + " again")
        assert "compacted_into" not in restored.payload
        [undone] = [d for d in m.decisions("dup", workspace="acme") if d.kind == "merged"]
        assert (undone.other, undone.decided_by, undone.reverted_by) == (
            "keep",
            "upkeep:compact",
            "python",
        )
        assert undone.reverted_at == NOW
        # The next compaction leaves it alone; recall finds it again.
        m.compact(workspace="acme")
        assert m.store.get_memory("acme", "dup").status is MemoryStatus.ACTIVE
        hits = m.recall("cache TTL again", workspace="acme", mark=False).hits
        assert "dup" in {h.id for h in hits}
        with pytest.raises(InvalidInput, match="dup is active, not superseded, retired or"):
            m.restore("dup", workspace="acme")
    finally:
        m.close()


def test_a_compacted_memory_is_restored_from_every_interface(db_url: str) -> None:
    m = Episodic(
        store=open_store(db_url),
        embedder=None,
        settings=Settings(archive_after_days=90),
        clock=lambda: NOW,
    )
    ids = ("dup1", "dup2", "dup3")
    try:
        store_memory(m, compacted("keep", DUP, importance=0.9, base_importance=0.9), days=5)
        for n, memory_id in enumerate(ids):
            store_memory(m, compacted(memory_id, DUP + " again" * (n + 1)), days=5)
        m.compact(workspace="acme")
        assert {m.store.get_memory("acme", i).status for i in ids} == {MemoryStatus.COMPACTED}
        _, secret = m.create_key("acme", role="admin")
        restored = cli(db_url, "memory", "restore", "dup1", "-w", "acme", "--json")
        assert restored.exit_code == 0, restored.output
        assert json.loads(restored.stdout)["status"] == "active"
        with serve(asgi(m)) as base:
            with httpx.Client(base_url=base, timeout=30) as c:
                assert c.post("/ui/login", data={"key": secret}).status_code == 303
                assert 'action="/ui/memories/dup2/restore"' in c.get("/ui/memories/dup2").text
            done = call(base, secret, "POST", "/v1/memories/dup2/restore")
            assert done.status_code == 200, done.text
            assert done.json()["status"] == "active"
        server = build_server(m, Binding.of("acme", "a1", None, None))

        async def main() -> None:
            with serve(server.streamable_http_app()) as base:
                async with Client(f"{base}/mcp") as client:
                    done = structured(
                        await client.call_tool("restore_memory", {"memory_id": "dup3"})
                    )
                    assert done == {"id": "dup3", "restored": True, "status": "active"}

        anyio.run(main)
        assert {m.store.get_memory("acme", i).status for i in ids} == {MemoryStatus.ACTIVE}
    finally:
        m.close()
