"""Supersession through every interface, on SQLite and on PostgreSQL: the HTTP API (a
real uvicorn), the MCP server (the SDK's own client over streamable HTTP) and the CLI
(typer's runner). Each shows what replaced what with the same names (``as_of``,
``include_superseded``, ``replaces``, ``valid_from``, ``valid_to``, ``superseded_by``),
follows the edit rules of API keys, and refuses bad input naming the field."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from typer.testing import CliRunner

from episodic import Episodic, Settings
from episodic.cli import app
from episodic.http import asgi
from episodic.mcp import Binding, build_server
from episodic.model import MemoryStatus
from servers import call, serve
from test_supersession import NEW, OLD, QUESTION, T0, WS, Clock

CHANGED = T0 + timedelta(days=21)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def mem(db_url: str, clock: Clock) -> Iterator[Episodic]:
    m = Episodic.open(db_url, embedder=None, settings=Settings(), clock=clock)
    yield m
    m.close()


def card_change(mem: Episodic, clock: Clock) -> None:
    """Card A on day 0; on day 21 the billing agent says it changed to card B (the
    offline rule decides card-b supersedes card-a as it is written)."""
    mem.remember(OLD, workspace=WS, agent="billing", id="card-a")
    clock.now = CHANGED
    mem.remember(NEW, workspace=WS, agent="billing", id="card-b")
    assert mem.store.get_memory(WS, "card-a").status is MemoryStatus.SUPERSEDED


# -- HTTP ---------------------------------------------------------------------------------
@pytest.fixture
def http(mem: Episodic) -> Iterator[tuple[str, dict[str, str]]]:
    """The server's URL and a secret per key (``<name>.id`` holds each key's id)."""
    keys: dict[str, str] = {}
    for name, agent in (("admin", None), ("billing", "billing"), ("reviewer", "reviewer")):
        key, secret = mem.create_key(WS, role="agent" if agent else "admin", agent=agent)
        keys[name], keys[f"{name}.id"] = secret, key.id
    with serve(asgi(mem)) as base:
        yield base, keys


def links(base: str, secret: str, memory_id: str) -> list[dict[str, Any]]:
    response = call(base, secret, "GET", f"/v1/memories/{memory_id}/supersessions")
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["supersessions"]
    return found


def hit_ids(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [h["id"] for h in response.json()["hits"]]


def test_http_recall_and_render_answer_as_memory_stood(
    mem: Episodic, clock: Clock, http: tuple[str, dict[str, str]]
) -> None:
    base, keys = http
    card_change(mem, clock)
    admin = keys["admin"]
    ask = {"query": QUESTION, "mark": False}

    assert hit_ids(call(base, admin, "POST", "/v1/recall", ask)) == ["card-b"]
    both = call(base, admin, "POST", "/v1/recall", {**ask, "include_superseded": True})
    shown = {h["id"]: h for h in both.json()["hits"]}
    assert set(shown) == {"card-a", "card-b"}
    assert shown["card-a"]["status"] == "superseded"
    assert shown["card-a"]["superseded_by"] == "card-b"
    assert shown["card-a"]["valid_to"] == CHANGED.isoformat()
    assert (shown["card-b"]["valid_to"], shown["card-b"]["valid_from"]) == (
        None,
        CHANGED.isoformat(),
    )
    then = (T0 + timedelta(days=14)).isoformat()
    assert hit_ids(call(base, admin, "POST", "/v1/recall", {**ask, "as_of": then})) == ["card-a"]

    block = call(base, admin, "POST", "/v1/render", {**ask, "include_superseded": True})
    assert block.status_code == 200, block.text
    assert "superseded 2026-03-23 by card-b" in block.json()["block"]
    plain = call(base, admin, "POST", "/v1/render", ask).json()["block"]
    assert "card B" in plain and "card A." not in plain and "superseded" not in plain

    listed = call(base, admin, "GET", "/v1/memories", status="superseded").json()["items"]
    assert [(m["id"], m["superseded_by"]) for m in listed] == [("card-a", "card-b")]
    [link] = links(base, admin, "card-b")
    assert (link["old"], link["new"]) == ("card-a", "card-b")
    assert link["decided_by"].startswith("offline:")


def test_http_supersede_follows_the_edit_rules(
    mem: Episodic, clock: Clock, http: tuple[str, dict[str, str]]
) -> None:
    base, keys = http
    mem.remember("the staging database is db-old.internal", workspace=WS, agent="billing", id="db")
    clock.now = T0 + timedelta(days=2)
    path = "/v1/memories/db/supersede"
    body = {"new": "the staging database is db-new.internal", "reason": "migrated"}

    # Another agent's key cannot see the memory; its owner's key may replace it.
    assert call(base, keys["reviewer"], "POST", path, body).status_code == 404
    done = call(base, keys["billing"], "POST", path, body)
    assert done.status_code == 200, done.text
    new = done.json()
    assert new["content"].endswith("db-new.internal") and new["agent"] == "billing"
    old = call(base, keys["billing"], "GET", "/v1/memories/db").json()
    assert (old["status"], old["superseded_by"]) == ("superseded", new["id"])
    [link] = links(base, keys["billing"], "db")
    assert (link["old"], link["new"]) == ("db", new["id"])
    assert call(base, keys["reviewer"], "GET", "/v1/memories/db/supersessions").status_code == 404

    # PATCH with supersede: the content becomes a new memory; the edited one is kept.
    patched = call(
        base,
        keys["billing"],
        "PATCH",
        f"/v1/memories/{new['id']}",
        {"content": "the staging database is db-3.internal", "supersede": True},
    )
    assert patched.status_code == 200, patched.text
    third = patched.json()
    assert third["id"] != new["id"] and third["content"].endswith("db-3.internal")
    kept = call(base, keys["admin"], "GET", f"/v1/memories/{new['id']}").json()
    assert kept["content"].endswith("db-new.internal") and kept["superseded_by"] == third["id"]

    # remember with replaces: the reviewer's key may not replace the billing agent's.
    note = {"content": "the staging database is db-4.internal", "replaces": third["id"]}
    assert call(base, keys["reviewer"], "POST", "/v1/memories", note).status_code == 404
    created = call(base, keys["billing"], "POST", "/v1/memories", note)
    assert created.status_code == 201, created.text
    again = call(base, keys["admin"], "GET", f"/v1/memories/{third['id']}").json()
    assert again["superseded_by"] == created.json()["id"]


def test_a_replacement_by_text_records_who_decided_and_why(
    mem: Episodic, http: tuple[str, dict[str, str]]
) -> None:
    base, keys = http
    mem.remember("the staging database is db-old.internal", workspace=WS, agent="billing", id="db")
    body = {"new": "the staging database is db-new.internal", "reason": "migrated"}
    done = call(base, keys["billing"], "POST", "/v1/memories/db/supersede", body)
    assert done.status_code == 200, done.text
    [link] = links(base, keys["billing"], "db")
    assert (link["decided_by"], link["reason"]) == (f"explicit:{keys['billing.id']}", "migrated")


def test_a_replacement_by_id_records_the_key_and_the_reason(
    mem: Episodic, clock: Clock, http: tuple[str, dict[str, str]]
) -> None:
    base, keys = http
    mem.remember("the on-call phone is 555-0100", workspace=WS, agent="billing", id="phone-1")
    clock.now = T0 + timedelta(days=1)
    mem.remember("the on-call phone is 555-0199", workspace=WS, agent="ops", id="phone-2")
    body = {"new": "phone-2", "reason": "new number"}
    done = call(base, keys["billing"], "POST", "/v1/memories/phone-1/supersede", body)
    assert done.status_code == 200 and done.json()["id"] == "phone-2", done.text
    [link] = links(base, keys["admin"], "phone-2")
    assert (link["old"], link["decided_by"], link["reason"]) == (
        "phone-1",
        f"explicit:{keys['billing.id']}",
        "new number",
    )


def test_a_crew_key_may_not_supersede(mem: Episodic, http: tuple[str, dict[str, str]]) -> None:
    # Like editing: an admin key, or a key bound to the memory's agent; a crew's lead
    # key is neither.
    base, _ = http
    mem.remember("the build runs on Jenkins", workspace=WS, agent="billing", crew="ops", id="ci")
    lead = mem.create_key(WS, role="lead", crew="ops")[1]
    refused = call(base, lead, "POST", "/v1/memories/ci/supersede", {"new": "on Actions"})
    assert refused.status_code == 403, refused.text
    note = {"content": "the build runs on Actions", "replaces": "ci"}
    assert call(base, lead, "POST", "/v1/memories", note).status_code == 403
    assert mem.store.get_memory(WS, "ci").status is MemoryStatus.ACTIVE


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("POST", "/v1/recall", {"query": "q", "as_of": "last tuesday"}, "as_of"),
        ("POST", "/v1/recall", {"query": "q", "include_superseded": "yes"}, "include_superseded"),
        ("POST", "/v1/render", {"query": "q", "as_of": 17}, "as_of"),
        ("POST", "/v1/render", {"query": "q", "include_superseded": 1}, "include_superseded"),
        ("POST", "/v1/memories", {"content": "x", "replaces": ""}, "replaces"),
        ("POST", "/v1/memories", {"content": "x", "replaces": "card-a"}, "replaces"),
        ("PATCH", "/v1/memories/card-b", {"supersede": True}, "content"),
        ("PATCH", "/v1/memories/card-b", {"supersede": "yes", "content": "x"}, "supersede"),
        (
            "PATCH",
            "/v1/memories/card-b",
            {"supersede": True, "content": "x", "importance": 0.5},
            "importance",
        ),
        ("POST", "/v1/memories/card-b/supersede", {}, "new"),
        ("POST", "/v1/memories/card-b/supersede", {"new": ""}, "new"),
        ("POST", "/v1/memories/card-b/supersede", {"new": "card-b"}, "new"),
        ("POST", "/v1/memories/card-a/supersede", {"new": "card C"}, "old_id"),
        ("POST", "/v1/memories/card-b/supersede", {"new": "x", "colour": "red"}, "colour"),
    ],
)
def test_http_refuses_bad_supersession_input_by_field(
    mem: Episodic,
    clock: Clock,
    http: tuple[str, dict[str, str]],
    method: str,
    path: str,
    body: dict[str, Any],
    field: str,
) -> None:
    base, keys = http
    card_change(mem, clock)
    r = call(base, keys["admin"], method, path, body)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["field"] == field
    assert mem.store.get_memory(WS, "card-b").status is MemoryStatus.ACTIVE


def test_http_list_refuses_an_unknown_status(
    mem: Episodic, http: tuple[str, dict[str, str]]
) -> None:
    base, keys = http
    r = call(base, keys["admin"], "GET", "/v1/memories", status="stale")
    assert r.status_code == 422 and r.json()["error"]["field"] == "status"


def test_the_openapi_schema_documents_validity_and_the_new_routes(
    mem: Episodic, http: tuple[str, dict[str, str]]
) -> None:
    base, _ = http
    schema = httpx.get(f"{base}/openapi.json", timeout=30).json()
    models = schema["components"]["schemas"]
    for name in ("MemoryOut", "HitOut"):
        assert {"valid_from", "valid_to", "superseded_by"} <= set(models[name]["properties"])
    assert "status" in models["HitOut"]["properties"]
    assert {"as_of", "include_superseded"} <= set(models["RecallIn"]["properties"])
    assert "replaces" in models["MemoryIn"]["properties"]
    assert "supersede" in models["MemoryPatchIn"]["properties"]
    assert "post" in schema["paths"]["/v1/memories/{memory_id}/supersede"]
    assert "get" in schema["paths"]["/v1/memories/{memory_id}/supersessions"]


# -- MCP ----------------------------------------------------------------------------------
def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return dict(result.structured_content)
    return dict(json.loads(result.content[0].text))


def test_mcp_remember_replaces_and_recall_shows_what_was_replaced(
    mem: Episodic, clock: Clock
) -> None:
    mem.remember("the standup is at 9:30 in room Ada", workspace=WS, agent="billing", id="old")
    mem.remember("the reviewer's standup is at 10", workspace=WS, agent="reviewer", id="theirs")
    clock.now = CHANGED
    server = build_server(mem, Binding.of(WS, "billing", None, None))
    query = {"query": "when is the standup"}

    async def main() -> None:
        with serve(server.streamable_http_app()) as base:
            async with Client(f"{base}/mcp") as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                recall_args = tools["recall_memory"].input_schema["properties"]
                assert {"as_of", "include_superseded"} <= set(recall_args)
                assert "replaces" in tools["remember"].input_schema["properties"]
                remember = tools["remember"].annotations
                assert remember is not None and remember.destructive_hint is False

                stored = structured(
                    await client.call_tool(
                        "remember",
                        {"content": "the standup moved to 11:00, room Babbage", "replaces": "old"},
                    )
                )
                now = structured(await client.call_tool("recall_memory", query))
                assert [m["id"] for m in now["memories"]] == [stored["id"]]
                assert "superseded" not in now["memories"][0]
                both = structured(
                    await client.call_tool("recall_memory", {**query, "include_superseded": True})
                )
                replaced = {m["id"]: m for m in both["memories"]}["old"]
                assert replaced["superseded"] == {"at": CHANGED.isoformat(), "by": stored["id"]}
                then = {**query, "as_of": (T0 + timedelta(days=1)).isoformat()}
                earlier = structured(await client.call_tool("recall_memory", then))
                assert [m["id"] for m in earlier["memories"]] == ["old"]

                # Another agent's memory is not this server's to replace.
                theirs = await client.call_tool(
                    "remember", {"content": "standup at noon", "replaces": "theirs"}
                )
                assert theirs.is_error and "theirs" in str(theirs.content)
                for bad, field in (
                    ({**query, "as_of": "last tuesday"}, "as_of"),
                    ({**query, "include_superseded": "yes"}, "include_superseded"),
                ):
                    refused = await client.call_tool("recall_memory", bad)
                    assert refused.is_error and field in str(refused.content)
                gone = await client.call_tool("remember", {"content": "x", "replaces": "old"})
                assert gone.is_error and "replaces" in str(gone.content)

    anyio.run(main)
    assert mem.store.get_memory(WS, "theirs").status is MemoryStatus.ACTIVE


# -- CLI ----------------------------------------------------------------------------------
# Wide enough that the recall table does not fold a line.
ENV = {"EPISODIC_EMBEDDER": "none", "COLUMNS": "250"}


def cli(db_url: str, *args: str) -> Any:
    return CliRunner().invoke(app, ["--db", db_url, *args], env=ENV)


def cli_json(db_url: str, *args: str) -> Any:
    result = cli(db_url, *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_cli_recall_render_and_list_show_what_was_replaced(
    mem: Episodic, clock: Clock, db_url: str
) -> None:
    card_change(mem, clock)
    ask = ("recall", QUESTION, "-w", WS, "--no-mark")
    assert [h["id"] for h in cli_json(db_url, *ask)] == ["card-b"]
    both = {h["id"]: h for h in cli_json(db_url, *ask, "--include-superseded")}
    assert both["card-a"]["superseded_by"] == "card-b"
    assert both["card-a"]["valid_to"] == CHANGED.isoformat()
    then = (T0 + timedelta(days=14)).isoformat()
    assert [h["id"] for h in cli_json(db_url, *ask, "--as-of", then)] == ["card-a"]
    table = cli(db_url, *ask, "--include-superseded")
    assert "superseded 2026-03-23 by card-b" in table.stdout

    block = cli(db_url, "render", QUESTION, "-w", WS, "--no-mark", "--include-superseded")
    assert block.exit_code == 0 and "superseded 2026-03-23 by card-b" in block.stdout

    listed = cli_json(db_url, "memory", "list", "-w", WS, "--status", "superseded")
    assert [m["id"] for m in listed["items"]] == ["card-a"]
    assert "card-a" in cli(db_url, "memory", "list", "-w", WS).stdout
    [link] = cli_json(db_url, "memory", "supersessions", "card-a", "-w", WS)["supersessions"]
    assert (link["old"], link["new"]) == ("card-a", "card-b")
    shown = cli(db_url, "memory", "supersessions", "card-b", "-w", WS)
    assert shown.exit_code == 0 and "card-a superseded by card-b" in shown.stdout


def test_cli_supersede_and_remember_replaces(mem: Episodic, db_url: str) -> None:
    mem.remember("the wiki lives at wiki.old.example", workspace=WS, agent="docs", id="wiki")
    new = cli_json(
        db_url,
        "memory",
        "supersede",
        "wiki",
        "the wiki moved to docs.example",
        "-w",
        WS,
        "--reason",
        "moved",
    )
    assert new["agent"] == "docs" and new["content"] == "the wiki moved to docs.example"
    [link] = mem.supersessions("wiki", workspace=WS)
    assert (link.old_id, link.new_id, link.decided_by) == ("wiki", new["id"], "explicit")

    note = cli_json(
        db_url,
        "memory",
        "remember",
        "the wiki moved again, to kb.example",
        "-w",
        WS,
        "--agent",
        "docs",
        "--replaces",
        new["id"],
    )
    assert note["valid_to"] is None and note["content"].endswith("kb.example")
    assert mem.store.get_memory(WS, new["id"]).superseded_by == note["id"]


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (("recall", "q", "-w", WS, "--as-of", "last tuesday"), "as_of"),
        (("render", "q", "-w", WS, "--as-of", "soon"), "as_of"),
        (("memory", "remember", "x", "-w", WS, "--replaces", "card-a"), "replaces"),
        (("memory", "supersede", "card-a", "card C", "-w", WS), "old_id"),
        (("memory", "supersede", "card-b", "card-b", "-w", WS), "new"),
        (("memory", "supersede", "card-b", " ", "-w", WS), "new"),
        (("memory", "list", "-w", WS, "--status", "stale"), "status"),
    ],
)
def test_cli_refuses_bad_supersession_input_by_field(
    mem: Episodic, clock: Clock, db_url: str, args: tuple[str, ...], field: str
) -> None:
    card_change(mem, clock)
    result = cli(db_url, *args)
    assert result.exit_code == 2, result.output
    assert f"{field}:" in result.output


def test_http_replaces_an_episode_by_name_never_by_its_own_message(
    mem: Episodic, clock: Clock, http: tuple[str, dict[str, str]]
) -> None:
    base, keys = http
    mem.add_messages(
        [{"id": "c1", "role": "user", "content": OLD}],
        conversation="day-1",
        workspace=WS,
        agent="billing",
    )
    clock.now = T0 + timedelta(hours=2)
    mem.segment(flush=True, workspace=WS)
    [episode] = mem.recent(workspace=WS, conversation="day-1")

    refused = call(base, keys["admin"], "POST", "/v1/memories/c1/supersede", {"new": episode.id})
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"]["field"] == "new"
    clock.now = CHANGED
    path = f"/v1/memories/{episode.id}/supersede"
    done = call(base, keys["admin"], "POST", path, {"new": NEW})
    assert done.status_code == 200, done.text
    assert mem.store.get_memory(WS, episode.id).status is MemoryStatus.SUPERSEDED
