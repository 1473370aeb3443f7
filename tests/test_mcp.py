"""The MCP server, driven by the official SDK's own client: over stdio (``episodic mcp`` as
a subprocess) and over streamable HTTP (a real uvicorn on a free loopback port)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from episodic import Episodic, Settings
from episodic.embed.fake import FakeEmbedder
from episodic.mcp import Binding, build_server
from episodic.store import open_store
from servers import serve

EVENTS = [
    {
        "id": "m1",
        "workspace": "acme",
        "agent": "deployer",
        "type": "peer.escalation",
        "summary": "checkout OOM after the cache TTL change <b>boom</b>",
    },
    {
        "id": "m2",
        "workspace": "acme",
        "agent": "reviewer",
        "type": "peer.escalation",
        "summary": "checkout review found a flaky test",
    },
    {
        "id": "m3",
        "workspace": "orbit",
        "agent": "deployer",
        "type": "peer.escalation",
        "summary": "checkout OOM in orbit",
    },
]
TOOLS = {
    "recall_memory",
    "remember",
    "forget",
    "update_memory",
    "restore_memory",
    "memory_health",
    "recall_episodes",
    "on_complete",
    "end_session",
}


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return dict(result.structured_content)
    return dict(json.loads(result.content[0].text))


async def exercise(client: Client) -> None:
    """What a model would do with the four tools, and what it must not be able to do."""
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    assert "UNTRUSTED" in (tools["recall_memory"].description or "")
    # No workspace, agent or resource: the binding decides what the model may see.
    assert set(tools["recall_memory"].input_schema["properties"]) == {
        "query",
        "k",
        "as_of",
        "include_superseded",
        "learning_type",
        "session",
    }

    found = structured(await client.call_tool("recall_memory", {"query": "checkout OOM", "k": 5}))
    assert "UNTRUSTED" in found["note"]
    assert [m["id"] for m in found["memories"]] == ["m1"]  # own scope: not m2, never orbit
    assert "<b>" not in found["memories"][0]["content"]  # escaped: cannot pose as markup
    assert "vector" not in json.dumps(found)

    stored = structured(
        await client.call_tool(
            "remember",
            {
                "content": "the checkout cache TTL must stay above 60s",
                "source": "user_assertion",
                "evidence": "TTL must stay above 60s",
            },
        )
    )
    again = structured(await client.call_tool("recall_memory", {"query": "checkout cache TTL"}))
    assert stored["id"] in [m["id"] for m in again["memories"]]

    refused = await client.call_tool("forget", {"memory_id": "m2"})  # another agent's
    assert refused.is_error and "no memory m2 here" in refused.content[0].text
    gone = structured(await client.call_tool("forget", {"memory_id": stored["id"]}))
    assert gone["memories"] == 1
    after = structured(await client.call_tool("recall_memory", {"query": "checkout cache TTL"}))
    assert stored["id"] not in [m["id"] for m in after["memories"]]

    # Seed 000: an out-of-range k recalls the default 5, and the result says so.
    wide = structured(await client.call_tool("recall_memory", {"query": "checkout", "k": 99}))
    assert "k=99 is outside 1..50: recalled 5 instead" in wide["warnings"]
    health = structured(await client.call_tool("memory_health", {}))
    assert health == {"status": "no health snapshot yet"}


@pytest.fixture
def db(db_url: str) -> str:
    with Episodic.open(db_url, settings=Settings(embedder="none")) as mem:
        assert mem.ingest(EVENTS).stored == 3
    return db_url


def test_stdio_server_with_the_sdk_client(db: str) -> None:
    exe = Path(sys.executable).with_name("episodic")
    params = StdioServerParameters(
        command=str(exe),
        args=["--db", db, "mcp", "--workspace", "acme", "--agent", "deployer"],
        env={**os.environ, "EPISODIC_EMBEDDER": "none"},
    )

    async def main() -> None:
        async with Client(params) as client:
            await exercise(client)

    anyio.run(main)


@pytest.fixture
def http_mcp(db: str) -> Iterator[str]:
    mem = Episodic(store=open_store(db), embedder=FakeEmbedder(dim=128), settings=Settings())
    server = build_server(mem, Binding.of("acme", "deployer", None, None))
    try:
        with serve(server.streamable_http_app()) as base:
            yield f"{base}/mcp"
    finally:
        mem.close()


def test_streamable_http_server_with_the_sdk_client(http_mcp: str) -> None:
    async def main() -> None:
        async with Client(http_mcp) as client:
            await exercise(client)

    anyio.run(main)


def test_a_binding_that_cannot_read_is_refused() -> None:
    from episodic.errors import InvalidInput

    with pytest.raises(InvalidInput) as info:
        Binding.of("acme", None, None, "agent")
    assert info.value.field == "agent"


def test_a_resource_binding_reads_and_writes_only_that_resource(db_url: str) -> None:
    # Seed 004: an agent serving many users recalls, for each, only what it holds about
    # that one (agentId + resourceId).
    with Episodic.open(db_url, settings=Settings(embedder="none")) as mem:
        for resource in ("user:dana", "user:omar"):
            mem.remember(
                f"order cable arrived broken for {resource}",
                workspace="shop",
                agent="concierge",
                resource=resource,
                id=f"note-{resource[5:]}",
            )
        server = build_server(
            mem, Binding.of("shop", "concierge", None, None, resource="user:dana")
        )

        async def main() -> str:
            with serve(server.streamable_http_app()) as base:
                async with Client(f"{base}/mcp") as client:
                    found = structured(
                        await client.call_tool("recall_memory", {"query": "order cable broken"})
                    )
                    assert [m["id"] for m in found["memories"]] == ["note-dana"]
                    stored = structured(
                        await client.call_tool("remember", {"content": "cable resent by courier"})
                    )
                    refused = await client.call_tool("forget", {"memory_id": "note-omar"})
                    assert refused.is_error and "no memory note-omar here" in str(refused.content)
                    return str(stored["id"])

        stored_id = anyio.run(main)
        assert mem.store.get_memories("shop", [stored_id])[0].resource == "user:dana"
        assert len(mem.store.get_memories("shop", ["note-omar"])) == 1  # not forgotten


def test_the_stdio_server_names_its_database_on_stderr_only(db: str) -> None:
    url = db.replace("postgres:@", "postgres:hunter2@", 1)  # trusted: any password works
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("episodic")),
            "--db",
            url,
            "mcp",
            "-w",
            "acme",
            "--role",
            "admin",
        ],
        env={**os.environ, "EPISODIC_EMBEDDER": "none"},
        stdin=subprocess.DEVNULL,  # the client hangs up at once
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout == ""  # stdout is the protocol's
    assert "episodic mcp: memory " in done.stderr and "workspace acme" in done.stderr
    assert "hunter2" not in done.stderr
    if db.startswith("postgresql"):
        assert "postgres:***@" in done.stderr
    else:
        assert db.removeprefix("sqlite:///") in done.stderr


def test_end_session_ends_only_the_bound_agents_sessions(db_url: str) -> None:
    """A server bound to one agent may not end a session another agent recalled in (its
    end would reinforce what the other's recalls returned); an admin binding may."""
    with Episodic.open(db_url, settings=Settings(embedder="none")) as mem:
        mem.remember("the refund batch timed out", workspace="shop", agent="deployer", id="n1")
        found = mem.recall("refund batch", workspace="shop", agent="deployer", session="s1")
        assert [h.id for h in found.hits] == ["n1"]

        async def end(agent: str | None, role: str | None) -> Any:
            server = build_server(mem, Binding.of("shop", agent, None, role))
            with serve(server.streamable_http_app()) as base:
                async with Client(f"{base}/mcp") as client:
                    return await client.call_tool("end_session", {"session": "s1"})

        refused = anyio.run(end, "other", None)
        assert refused.is_error and "session 's1'" in str(refused.content)
        assert mem.store.get_memory("shop", "n1").payload.get("reinforcement_count", 0) == 0
        ended = structured(anyio.run(end, None, "admin"))
        assert ended["reinforced"] == ["n1"]
