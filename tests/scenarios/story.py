"""The public interfaces a scenario drives, around one service: a simulated clock, a real
HTTP server, a real MCP server with the SDK client, and the CLI.

The clock starts 60 days before the real now, so stories run over simulated days on the
Python API, HTTP and MCP (which share the service and its clock), while a CLI call (its own
``Episodic``, the real clock) happens after all of them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import anyio
import httpx
from mcp import Client
from typer.testing import CliRunner, Result

from episodic import Episodic
from episodic.cli import app
from episodic.http import asgi
from episodic.mcp import Binding, build_server
from servers import serve


@dataclass
class SimClock:
    """The service's clock, moved by the story: ``clock.advance(days=1)``."""

    now: datetime

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


@contextmanager
def http_client(mem: Episodic, workspace: str, *, role: str = "admin") -> Iterator[httpx.Client]:
    """A client of a real HTTP server over ``mem``, holding a new key for ``workspace``."""
    key = mem.create_key(workspace, role=role)[1]
    with (
        serve(asgi(mem)) as base,
        httpx.Client(
            base_url=base, headers={"authorization": f"Bearer {key}"}, timeout=60
        ) as client,
    ):
        yield client


def mcp_call(
    mem: Episodic,
    tool: str,
    arguments: dict[str, Any],
    *,
    workspace: str,
    agent: str | None = None,
    crew: str | None = None,
    resource: str | None = None,
    role: str | None = None,
) -> dict[str, Any]:
    """One tool call through a real streamable-HTTP MCP server and the SDK client; with
    no agent named, the server is bound as admin (said explicitly, as the CLI needs)."""
    role = role or (None if agent else "admin")
    server = build_server(mem, Binding.of(workspace, agent, crew, role, resource=resource))

    async def call() -> dict[str, Any]:
        with serve(server.streamable_http_app()) as base:
            async with Client(f"{base}/mcp") as client:
                out = await client.call_tool(tool, arguments)
                assert not out.is_error, out.content
                text = out.content[0].text if out.content else "{}"  # type: ignore[union-attr]
                return dict(out.structured_content or json.loads(text))

    return anyio.run(call)


def cli(db_url: str, *args: str) -> Result:
    """The CLI on the same database, with default settings; asserts it succeeded."""
    result = CliRunner().invoke(app, ["--db", db_url, *args])
    assert result.exit_code == 0, result.output
    return result
