"""One name per concept on every interface: where a record belongs is ``workspace``,
``agent``, ``crew``, ``resource``, ``conversation``, and a memory's or message's text is
``content`` — in Python records, HTTP JSON, CLI ``--json``, MCP and the export. The old
event field names (``workspace_id`` ...) and a message's ``text`` are still read, with a
deprecation notice, and an object that gives both names with different values is refused
naming the old one."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from story import cli, http_client, mcp_call

from episodic import Episodic, InvalidInput, ScopeFilter

W = "acme"
ID_NAMES = {"workspace", "crew", "agent", "resource", "conversation"}
OLD_NAMES = {f"{n}_id" for n in ID_NAMES}
NEW_EVENT = {
    "id": "e-new",
    "workspace": W,
    "agent": "deployer",
    "crew": "ops",
    "resource": "svc:checkout",
    "type": "peer.escalation",
    "summary": "checkout OOM after the cache TTL change",
}
OLD_EVENT = {
    "id": "e-old",
    "workspace_id": W,
    "agent_id": "deployer",
    "crew_id": "ops",
    "resource_id": "svc:checkout",
    "type": "peer.escalation",
    "summary": "payment retries doubled after the gateway timeout change",
}


@pytest.fixture
def mem(memory: Episodic) -> Episodic:
    """The service at its defaults (the real model), on both backends."""
    return memory


def test_python_reads_old_event_names_with_a_warning_and_files_them_the_same(
    mem: Episodic,
) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        new = mem.ingest([NEW_EVENT])
        old = mem.ingest([OLD_EVENT])
    assert new.deprecated_fields == [] and new.stored == 1
    assert old.deprecated_fields == sorted(OLD_NAMES - {"conversation_id"}) and old.stored == 1
    notes = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
    assert len(notes) == 1 and "workspace_id -> workspace" in notes[0]
    mem.index_once()
    hits = mem.recall("payment retries gateway", workspace=W, k=5).hits
    found = next(h.memory for h in hits if h.id == "e-old")
    assert (found.workspace, found.agent, found.crew, found.resource) == (
        W,
        "deployer",
        "ops",
        "svc:checkout",
    )


def test_both_names_with_different_values_are_refused_naming_the_old_one(
    mem: Episodic,
) -> None:
    report = mem.ingest([{**NEW_EVENT, "agent_id": "someone-else"}])
    assert report.stored == 0 and [(e.field, e.line) for e in report.errors] == [("agent_id", 1)]
    # The same value under both names is one value, not a conflict.
    assert mem.ingest([{**NEW_EVENT, "agent_id": "deployer"}]).stored == 1


def test_every_interface_says_content_and_the_short_names(mem: Episodic, db_url: str) -> None:
    mem.ingest([NEW_EVENT])
    mem.add_message(
        "the refund failed because card B was expired",
        workspace=W,
        conversation="chat-1",
        agent="deployer",
    )
    mem.index_once()
    mem.segment(flush=True)
    mem.index_once()

    python = mem.recall("checkout OOM cache", workspace=W, k=5).hits[0].to_json()
    with http_client(mem, W) as c:
        http = c.post("/v1/recall", json={"query": "checkout OOM cache", "k": 5}).json()
        listed = c.get("/v1/memories").json()["items"]
        one = c.get(f"/v1/memories/{NEW_EVENT['id']}").json()
        whoami = c.get("/v1/whoami").json()
        episodes = c.post(
            "/v1/recall",
            json={"query": "refund card expired", "types": ["episode"], "detail": "full"},
        ).json()["hits"]
    tool = mcp_call(mem, "recall_memory", {"query": "checkout OOM cache"}, workspace=W)
    out = cli(db_url, "recall", "checkout OOM cache", "--workspace", W, "--json", "--no-mark")
    cli_hits = json.loads(out.stdout)

    for record in [python, http["hits"][0], cli_hits[0], *listed, one]:
        assert record["content"], record
        assert {"workspace", "agent", "crew", "resource", "conversation"} <= set(record)
        assert not (OLD_NAMES | {"summary", "text"}) & set(record), sorted(record)
    assert python["content"] == http["hits"][0]["content"] == cli_hits[0]["content"]
    assert tool["memories"][0]["content"] == python["content"]
    assert {"workspace", "agent", "crew"} <= set(whoami) and not OLD_NAMES & set(whoami)
    details = [d for h in episodes for d in h["details"]]
    assert details and all("content" in d and "text" not in d for d in details)


def test_http_events_and_messages_take_old_names_with_a_notice(mem: Episodic) -> None:
    with http_client(mem, W) as c:
        new = c.post("/v1/events", json={"events": [NEW_EVENT]})
        old = c.post("/v1/events", json={"events": [OLD_EVENT]})
        assert new.status_code == old.status_code == 200, (new.text, old.text)
        assert new.json()["deprecated_fields"] == []
        assert "workspace_id" in old.json()["deprecated_fields"]

        body = {"conversation": "chat-9", "role": "user"}
        fresh = c.post("/v1/messages", json={**body, "content": "my card B expired"})
        legacy = c.post("/v1/messages", json={**body, "text": "use card C from now on"})
        assert fresh.status_code == legacy.status_code == 201, (fresh.text, legacy.text)
        assert "deprecation" not in fresh.headers and legacy.headers["deprecation"] == "true"
        assert {"workspace", "conversation"} <= set(fresh.json())

        clash = c.post("/v1/messages", json={**body, "content": "a", "text": "b"})
        empty = c.post("/v1/messages", json=body)
    assert clash.status_code == empty.status_code == 422
    assert "text" in clash.text and "content" in empty.text
    texts = {m.content for m in mem.list_memories(ScopeFilter(W, types=("message",))).items}
    assert {"my card B expired", "use card C from now on"} <= texts


def test_an_agent_key_cannot_file_under_another_agent_by_the_old_name(mem: Episodic) -> None:
    key = mem.create_key(W, role="agent", agent="deployer")[1]
    with http_client(mem, W) as admin:
        r = admin.post(
            "/v1/events",
            json={"events": [{**OLD_EVENT, "agent_id": "intruder"}]},
            headers={"authorization": f"Bearer {key}"},
        )
    # Refused as a bad item of the batch, by the field's name.
    assert r.status_code == 200, r.text
    assert [(e["index"], e["field"]) for e in r.json()["errors"]] == [(0, "agent")]
    assert mem.list_memories(ScopeFilter(W)).items == []


def test_the_server_reads_a_message_without_warning_itself(mem: Episodic) -> None:
    """The deprecation is the caller's to hear (a header); the server's own read of the
    body must not raise a DeprecationWarning on every message."""
    from episodic.http.routers.messages import MessageIn

    body = MessageIn(conversation="c1", content="hello")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert body.text is None and body.content == "hello"
    schema = MessageIn.model_json_schema()["properties"]["text"]
    assert schema.get("deprecated") is True


def test_add_message_text_is_the_old_name_of_content(mem: Episodic) -> None:
    with pytest.warns(DeprecationWarning):
        event = mem.add_message(text="hello there", workspace=W, conversation="c1")
    assert event.summary == "hello there" and event.conversation == "c1"
    with pytest.raises(InvalidInput) as info:
        mem.add_message(workspace=W, conversation="c1")
    assert info.value.field == "content"


def test_an_export_with_the_old_journal_names_imports(mem: Episodic, tmp_path: Path) -> None:
    mem.ingest([NEW_EVENT])
    mem.export_markdown(tmp_path / "out")
    journals = list((tmp_path / "out").rglob("*.jsonl"))
    assert journals
    for path in journals:
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        assert lines and all("workspace" in obj and "workspace_id" not in obj for obj in lines)
        # As an export written before the rename had it.
        old = [{(k + "_id" if k in ID_NAMES else k): v for k, v in obj.items()} for obj in lines]
        path.write_text("".join(json.dumps(obj) + "\n" for obj in old))
    mem.forget(workspace=W, all=True)
    mem.import_markdown(tmp_path / "out")
    [back] = mem.list_memories(ScopeFilter(W)).items
    assert (back.id, back.agent, back.crew, back.resource) == (
        "e-new",
        "deployer",
        "ops",
        "svc:checkout",
    )
