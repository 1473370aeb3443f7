"""A recall in an empty workspace says why it found nothing, through every interface: the
Python service, HTTP (and the client), MCP; the CLI says it once, with the workspaces
there are. A misspelt workspace name otherwise looks like a memory that knows nothing."""

from __future__ import annotations

import anyio
from mcp import Client as McpClient
from starlette.testclient import TestClient
from typer.testing import CliRunner

from episodic import Episodic, Settings
from episodic.cli import app
from episodic.http import asgi
from episodic.mcp import Binding, build_server
from servers import serve

NONE = Settings(embedder="none")
ENV = {"EPISODIC_EMBEDDER": "none", "COLUMNS": "250"}


def _seeded(db_url: str) -> None:
    with Episodic.open(db_url, settings=NONE) as mem:
        mem.remember("the deploy key rotates every Monday", workspace="acme")
        mem.ingest([{"workspace": "logs", "type": "deploy.finished", "summary": "api 2.9"}])


def test_python_says_an_empty_workspace_is_empty(db_url: str) -> None:
    _seeded(db_url)
    with Episodic.open(db_url, settings=NONE) as mem:
        typo = mem.recall("deploy key", workspace="acmee")
        assert typo.hits == []
        assert any("'acmee' holds no memories and no events" in w for w in typo.warnings)
        events = mem.recall("api", workspace="logs")
        assert any("holds 1 journal events but no memories" in w for w in events.warnings)
        # A workspace with memories says nothing of the kind, found or not.
        found = mem.recall("deploy key", workspace="acme")
        assert found.hits and not any("holds" in w for w in found.warnings)
        missed = mem.recall("zebra", workspace="acme")
        assert not missed.hits and not any("holds" in w for w in missed.warnings)
        # Nor does it name any other workspace: a caller may see one only.
        assert not any("acme'" in w or "logs" in w for w in typo.warnings)


def test_http_and_mcp_say_it_too(db_url: str) -> None:
    _seeded(db_url)
    with Episodic.open(db_url, settings=NONE) as mem:
        key = mem.create_key("acmee", role="admin")[1]
        http = TestClient(asgi(mem))
        answer = http.post(
            "/v1/recall",
            json={"query": "deploy key", "workspace": "acmee"},
            headers={"Authorization": f"Bearer {key}"},
        )
        assert answer.status_code == 200, answer.text
        assert any("holds no memories and no events" in w for w in answer.json()["warnings"])

        server = build_server(mem, Binding.of("acmee", "deployer", None, None))

        async def main() -> list[str]:
            with serve(server.streamable_http_app()) as base:
                async with McpClient(f"{base}/mcp") as client:
                    got = await client.call_tool("recall_memory", {"query": "deploy key"})
                    assert not got.is_error
                    data = dict(got.structured_content or {})
                    assert data["memories"] == []
                    return list(data.get("warnings", []))

        assert any("holds no memories and no events" in w for w in anyio.run(main))


def test_the_cli_says_it_once_with_the_workspaces_there_are(db_url: str) -> None:
    _seeded(db_url)
    result = CliRunner().invoke(app, ["--db", db_url, "recall", "deploy", "-w", "acmee"], env=ENV)
    assert result.exit_code == 0
    flat = " ".join(result.stderr.split())
    assert "acme (1 memory" in flat, flat  # the command's own warning names them
    assert flat.count("'acmee' holds no memories") == 1, flat
