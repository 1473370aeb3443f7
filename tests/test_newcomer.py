"""What a newcomer following the README meets, told rather than left to find: a note that
replaced an older one on its own says so (and how to undo it); an export of a workspace
that holds nothing names the ones there are; a recall in a workspace of journal events
alone says none was kept as a memory; a first request to a path or with a method no route
takes says where the routes are."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from episodic import Episodic, Settings
from episodic.cli import app
from episodic.http import asgi
from servers import serve

ENV = {"EPISODIC_EMBEDDER": "none", "COLUMNS": "250"}
OLD = "Always pay my subscriptions with card A."
NEW = "Card A expired. From now on pay my subscriptions with card B."


def cli(db_url: str, *args: str) -> Any:
    return CliRunner().invoke(app, ["--db", db_url, *args], env=ENV)


@pytest.fixture(autouse=True)
def _made(db_url: str) -> None:
    """The database made as the README makes it (`episodic init`)."""
    assert cli(db_url, "init").exit_code == 0


def test_a_note_that_replaced_an_older_one_on_its_own_says_so(db_url: str) -> None:
    first = cli(db_url, "memory", "remember", OLD, "-w", "acme", "--json")
    assert first.exit_code == 0, first.output
    old_id = first.stdout.split('"id": "')[1].split('"')[0]
    second = cli(db_url, "memory", "remember", NEW, "-w", "acme")
    assert second.exit_code == 0, second.output
    said = " ".join(second.stdout.split())
    assert f"replaces {old_id} (offline:" in said, said
    assert f"`episodic memory restore {old_id} -w acme` undoes it" in said
    # A note that replaces nothing says nothing more.
    third = cli(db_url, "memory", "remember", "The VPN must be up before deploys.", "-w", "acme")
    assert third.exit_code == 0 and "replaces" not in third.stdout


def test_an_export_of_a_workspace_that_holds_nothing_names_the_ones_there_are(
    db_url: str, tmp_path: Path
) -> None:
    assert cli(db_url, "memory", "remember", OLD, "-w", "acme").exit_code == 0
    result = cli(db_url, "export", str(tmp_path / "out"), "-w", "acme-shop")
    flat = " ".join(result.stderr.split())
    assert result.exit_code == 0
    assert "workspace 'acme-shop' holds no memories and no events" in flat, flat
    assert "acme (1 memory, 1 event)" in flat
    exported = cli(db_url, "export", str(tmp_path / "out"), "-w", "acme")
    assert exported.exit_code == 0 and "holds no memories" not in exported.stderr


def test_a_recall_in_a_workspace_of_events_alone_says_where_they_are(db_url: str) -> None:
    event = '{"workspace": "scratch", "type": "deploy.finished", "summary": "payments deployed"}'
    ingested = CliRunner().invoke(app, ["--db", db_url, "ingest", "-"], env=ENV, input=event)
    assert ingested.exit_code == 0 and "not kept as a memory" in ingested.stdout
    result = cli(db_url, "recall", "payments", "-w", "scratch")
    flat = " ".join(result.stderr.split())
    assert result.exit_code == 0 and "no memories recalled" in result.stdout
    assert "workspace 'scratch' holds no memories, only 1 journal event" in flat, flat
    assert "`episodic journal WORDS -w scratch` searches them" in flat
    journal = cli(db_url, "journal", "payments", "-w", "scratch")
    assert "payments deployed" in journal.stdout


def test_a_request_no_route_takes_says_where_the_routes_are(db_url: str) -> None:
    with Episodic.open(db_url, settings=Settings(embedder="none")) as mem:
        client = TestClient(asgi(mem))
        root = client.get("/")
        assert root.status_code == 404
        message = root.json()["error"]["message"]
        assert message.startswith("no route answers GET /: the API is under /v1"), message
        assert "/openapi.json" in message and "/ui" in message and "/healthz" in message
        wrong = client.get("/v1/recall")  # a first curl without -d
        assert wrong.status_code == 405 and wrong.headers["allow"] == "POST"
        assert wrong.json()["error"]["message"] == "/v1/recall does not take GET: send POST"
        # A memory that is not there is still the service's own answer.
        key = mem.create_key("acme", role="admin")[1]
        missing = client.get("/v1/memories/nope", headers={"Authorization": f"Bearer {key}"})
        assert missing.status_code == 404 and "nope" in missing.json()["error"]["message"]


def test_a_command_sent_to_a_server_without_a_key_names_the_variable(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EPISODIC_KEY", raising=False)
    with Episodic.open(db_url, settings=Settings(embedder="none")) as mem:
        secret = mem.create_key("acme", role="admin")[1]
        with serve(asgi(mem)) as base:
            sent = {**ENV, "EPISODIC_URL": base}
            bare = CliRunner().invoke(app, ["recall", "checkout", "-w", "acme"], env=sent)
            flat = " ".join(bare.stderr.split())
            assert bare.exit_code == 2
            assert "an API key is required" in flat
            assert "set EPISODIC_KEY to it, and the command sends it to the server" in flat
            keyed = CliRunner().invoke(
                app, ["render", "checkout", "-w", "acme"], env={**sent, "EPISODIC_KEY": secret}
            )
            assert keyed.exit_code == 0, keyed.stderr
            wrong = CliRunner().invoke(
                app, ["recall", "checkout", "-w", "acme"], env={**sent, "EPISODIC_KEY": "nope"}
            )
            assert wrong.exit_code == 2 and "set EPISODIC_KEY" not in wrong.stderr


def test_mcp_without_a_workspace_names_the_ones_there_are(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EPISODIC_MCP_WORKSPACE", raising=False)
    assert cli(db_url, "memory", "remember", OLD, "-w", "acme").exit_code == 0
    result = cli(db_url, "mcp", "--agent", "deployer")
    flat = " ".join(result.stderr.split())
    assert result.exit_code == 2
    assert "--workspace: name the workspace to serve" in flat
    assert "The workspaces in this database: acme (1 memory, 1 event)." in flat, flat


def test_ingest_of_json_of_another_shape_says_how_to_send_it(db_url: str) -> None:
    event = {"workspace": "acme", "type": "peer.escalation", "summary": "checkout OOM"}
    array = CliRunner().invoke(
        app, ["--db", db_url, "ingest", "-"], env=ENV, input=json.dumps([event])
    )
    said = " ".join(array.stderr.split())
    assert array.exit_code == 1 and "expected a JSON object, got list" in said
    assert "not an array: `jq -c '.[]' FILE | episodic ingest -`" in said, said
    pretty = CliRunner().invoke(
        app, ["--db", db_url, "ingest", "-"], env=ENV, input=json.dumps(event, indent=2)
    )
    said = " ".join(pretty.stderr.split())
    assert pretty.exit_code == 1 and "`jq -c . FILE | episodic ingest -`" in said, said
    # One bad line among good ones is only reported.
    mixed = CliRunner().invoke(
        app, ["--db", db_url, "ingest", "-"], env=ENV, input=json.dumps(event) + "\nnot json\n"
    )
    assert mixed.exit_code == 1 and "jq" not in mixed.stderr


def test_a_recall_that_finds_nothing_says_where_to_look(db_url: str) -> None:
    assert cli(db_url, "memory", "remember", OLD, "-w", "acme").exit_code == 0
    plain = cli(db_url, "recall", "zebra", "-w", "acme")
    assert plain.exit_code == 0
    assert "no memories recalled (--explain shows what each stage kept)" in plain.stdout
    explained = cli(db_url, "recall", "zebra", "-w", "acme", "--explain")
    assert "no memories recalled\n" in explained.stdout and "trace policy" in explained.stdout


def test_an_episodic_printed_shows_its_database_and_embedder(db_url: str) -> None:
    with Episodic.open(db_url, settings=Settings(embedder="none")) as mem:
        shown = repr(mem)
    assert shown.startswith("Episodic(") and shown.endswith(", embedder=None)"), shown
    assert ("postgresql://" if "postgres" in db_url else "sqlite:///") in shown, shown
