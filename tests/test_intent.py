"""Destructive actions need intent, and keys can do something: forgetting a whole
workspace over HTTP only when the body says ``"all": true``; the operator page asks before
forgetting; MCP tools say which of them read, add or delete; a key is refused at creation
when its role could never read with it. On both backends, through real servers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from typer.testing import CliRunner

from episodic import Episodic, Settings
from episodic.cli import app
from episodic.embed.fake import FakeEmbedder
from episodic.errors import InvalidInput
from episodic.http import asgi
from episodic.mcp import Binding, build_server
from episodic.store import open_store
from servers import serve


def event(i: str, agent: str) -> dict[str, Any]:
    return {
        "id": i,
        "workspace": "acme",
        "agent": agent,
        "type": "peer.escalation",
        "summary": f"checkout outage number {i}",
    }


@pytest.fixture
def mem(db_url: str) -> Iterator[Episodic]:
    m = Episodic(store=open_store(db_url), embedder=FakeEmbedder(dim=64), settings=Settings())
    m.ingest([event("m1", "deployer"), event("m2", "reviewer")])
    yield m
    m.close()


def client(base: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=30)


def stored(mem: Episodic) -> list[str]:
    return sorted(m.id for m in mem.store.get_memories("acme", ["m1", "m2"]))


def test_http_forgets_a_whole_workspace_only_when_asked_by_name(mem: Episodic) -> None:
    _, admin = mem.create_key("acme", role="admin")
    _, agent = mem.create_key("acme", role="agent", agent="deployer")
    with serve(asgi(mem)) as base, client(base, admin) as c:
        for body in ({}, {"workspace": "acme"}, {"all": False}):
            r = c.post("/v1/forget", json=body)
            assert r.status_code == 422, (body, r.text)
            error = r.json()["error"]
            assert error["field"] == "all" and '"all": true' in error["message"]
        r = c.post("/v1/forget", json={"all": True, "agent": "deployer"})
        assert r.status_code == 422 and r.json()["error"]["field"] == "all"
        assert stored(mem) == ["m1", "m2"]  # nothing went on any refusal
        with client(base, agent) as a:
            assert a.post("/v1/forget", json={"all": True}).status_code == 403
        r = c.post("/v1/forget", json={"all": True})
        assert r.status_code == 200 and r.json()["memories"] == 2
        assert stored(mem) == []


def test_the_page_asks_before_forgetting(mem: Episodic) -> None:
    _, admin = mem.create_key("acme", role="admin")
    with serve(asgi(mem)) as base:
        session = mem.sign_in(admin)
        page = httpx.Client(base_url=base, cookies={"episodic_session": session}, timeout=30)
        # The row's button opens the question; a bare post (an old page, a stray
        # resubmit) only asks too. Neither forgets.
        asked = page.get("/ui/memories/m1/forget")
        assert asked.status_code == 200 and "checkout outage number m1" in asked.text
        assert 'name="confirm" value="yes"' in asked.text
        bare = page.post("/ui/memories/m1/forget")
        assert bare.status_code == 200 and "Forget this memory for good?" in bare.text
        assert stored(mem) == ["m1", "m2"]
        done = page.post("/ui/memories/m1/forget", data={"confirm": "yes"})
        assert done.status_code == 303 and "forgot+m1" in done.headers["location"]
        assert stored(mem) == ["m2"]
        gone = page.get("/ui/memories/m1/forget")
        assert gone.status_code == 303 and "no+memory+m1+here" in gone.headers["location"]
        page.close()


def test_mcp_tools_say_what_they_do(mem: Episodic) -> None:
    server = build_server(mem, Binding.of("acme", "deployer", None, None))

    async def main() -> dict[str, Any]:
        async with Client(server) as c:
            tools = (await c.list_tools()).tools
        return {t.name: t.annotations for t in tools}

    found = anyio.run(main)
    hints = {
        name: (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint)
        for name, a in found.items()
    }
    assert hints == {
        "recall_memory": (True, False, True, False),
        "memory_health": (True, False, True, False),
        "remember": (False, False, False, False),
        "forget": (False, True, True, False),
        "update_memory": (False, False, True, False),
        "restore_memory": (False, False, True, False),
        "recall_episodes": (True, False, True, False),
        "on_complete": (False, False, False, False),
        "end_session": (False, False, True, False),
    }


def test_a_key_that_could_never_read_is_refused(
    db_url: str, mem: Episodic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EPISODIC_EMBEDDER", "none")
    runner = CliRunner()
    create = ["--db", db_url, "keys", "create", "--workspace", "acme"]
    result = runner.invoke(app, create)
    assert result.exit_code == 2 and "agent: an agent key reads as one agent" in result.stderr
    assert "--agent" in result.stderr
    result = runner.invoke(app, [*create, "--role", "lead"])
    assert result.exit_code == 2 and "--crew" in result.stderr
    assert mem.list_keys("acme") == []  # nothing was created
    with pytest.raises(InvalidInput) as info:
        mem.create_key("acme", role="agent")
    assert info.value.field == "agent"
    with pytest.raises(InvalidInput) as info:
        mem.create_key("acme", role="lead", agent="keeper")
    assert info.value.field == "crew"

    # Named, each key can read at once.
    result = runner.invoke(app, [*create, "--agent", "deployer", "--json"])
    assert result.exit_code == 0, result.output
    secret = json.loads(result.stdout)["key"]
    with serve(asgi(mem)) as base, client(base, secret) as c:
        r = c.post("/v1/recall", json={"query": "checkout outage"})
        assert r.status_code == 200 and [h["id"] for h in r.json()["hits"]] == ["m1"]
