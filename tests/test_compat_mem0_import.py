"""``episodic import --from mem0``: Mem0's exported memories read into a workspace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from episodic import Episodic
from episodic.cli import app
from episodic.compat.mem0 import Memory
from episodic.compat.mem0_import import import_mem0
from episodic.embed.fake import FakeEmbedder
from episodic.errors import InvalidInput
from episodic.model import ScopeFilter
from episodic.store import open_store

# Records as Mem0's get_all returns them (mem0ai 1.0.x: id, memory, hash, metadata,
# created_at, updated_at, and the user_id / agent_id / run_id they were stored for).
ALICE = {
    "id": "0b6f2a4e-8f9c-4a57-9d0e-3f1f6c2b7a10",
    "memory": "Is vegetarian",
    "hash": "5c2c1b0b1fd1bdc8d6bfb7a3b9fb1d44",
    "metadata": {"category": "food"},
    "created_at": "2025-03-01T10:00:00-08:00",
    "updated_at": "2025-03-04T09:30:00-08:00",
    "user_id": "alice",
}
BOB = {
    "id": "7d1c9e0a-55aa-4b3e-8c21-0a9f4e6d2b33",
    "memory": "Prefers aisle seats",
    "hash": "0e8b1c2d3a4f5e6d7c8b9a0f1e2d3c4b",
    "metadata": None,
    "created_at": "2025-02-11T08:15:00+00:00",
    "updated_at": None,
    "user_id": "bob",
    "agent_id": "travel",
    "run_id": "trip-42",
}


# Mem0's other export shapes and its history rows, read from mem0ai 2.0.18 (github
# mem0ai/mem0 at 8d5b786, 2026-08-22):
# - the platform's GET /v1/memories/ (docs/openapi.json, "Mem0 API Docs" v1): a bare list,
#   or {"count", "next", "previous", "results"} when paged; items: id, memory, user_id,
#   agent_id, app_id, session_id (the run id), metadata, categories, created_at,
#   updated_at, expiration_date, structured_attributes, replaced_by, synthesized,
#   lifecycle_state;
# - the platform dashboard's JSON export (server/dashboard .../export/page.tsx):
#   {"memories": [{"id", "content", "user_id", "created_at"}], "total": N};
# - history(memory_id), oldest first: the library's rows (mem0/memory/storage.py
#   get_history) id, memory_id, old_memory, new_memory, event (ADD | UPDATE | DELETE),
#   created_at (the memory's), updated_at (the change's), is_deleted, actor_id, role;
#   the platform's GET /v1/memories/{id}/history/ rows id, memory_id, input, old_memory,
#   new_memory, user_id, agent_id, app_id, session_id, categories, event, metadata,
#   created_at (the entry's), updated_at.
PLATFORM = {
    "id": "3f2b8c1a-9e4d-4b6a-8c7f-1d2e3f4a5b6c",
    "memory": "Leads the API redesign, targeting a Q2 launch",
    "user_id": "carl",
    "agent_id": None,
    "app_id": "planner",
    "session_id": "standup-7",
    "metadata": {"type": "project"},
    "categories": ["work"],
    "created_at": "2026-01-05T09:00:00Z",
    "updated_at": "2026-01-05T09:00:00Z",
    "expiration_date": None,
    "structured_attributes": {"year": 2026, "month": 1},
    "replaced_by": None,
    "synthesized": False,
    "lifecycle_state": "active",
}
DASHBOARD = {
    "memories": [
        {
            "id": "mem_abc123",
            "content": "User prefers dark mode",
            "user_id": "user_1",
            "created_at": "2026-04-10T12:00:00Z",
        }
    ],
    "total": 1,
}
EDITED = {
    "id": "5e0c7a2b-1111-4c3d-9e8f-222233334444",
    "memory": "Lives in Lyon",
    "hash": "x",
    "metadata": None,
    "created_at": "2025-05-01T08:00:00+00:00",
    "updated_at": "2025-09-01T08:00:00+00:00",
    "user_id": "dana",
    "history": [
        {
            "id": "h1",
            "memory_id": "5e0c7a2b-1111-4c3d-9e8f-222233334444",
            "old_memory": None,
            "new_memory": "Lives in Paris",
            "event": "ADD",
            "created_at": "2025-05-01T08:00:00+00:00",
            "updated_at": None,
            "is_deleted": False,
            "actor_id": None,
            "role": "user",
        },
        {
            "id": "h2",
            "memory_id": "5e0c7a2b-1111-4c3d-9e8f-222233334444",
            "old_memory": "Lives in Paris",
            "new_memory": "Lives in Lille",
            "event": "UPDATE",
            "created_at": "2025-05-01T08:00:00+00:00",
            "updated_at": "2025-07-01T08:00:00+00:00",
            "is_deleted": False,
            "actor_id": "alice-app",
            "role": "user",
        },
        {
            "id": "h3",
            "memory_id": "5e0c7a2b-1111-4c3d-9e8f-222233334444",
            "old_memory": "Lives in Lille",
            "new_memory": "Lives in Lyon",
            "event": "UPDATE",
            "created_at": "2025-05-01T08:00:00+00:00",
            "updated_at": "2025-09-01T08:00:00+00:00",
            "is_deleted": False,
            "actor_id": None,
            "role": "user",
        },
    ],
}


@pytest.fixture
def mem(db_url: str) -> Any:
    ep = Episodic(store=open_store(db_url), embedder=FakeEmbedder())
    yield ep
    ep.close()


def _write(tmp_path: Path, data: object, name: str = "export.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_an_export_is_stored_with_its_ids_times_metadata_and_owners(
    mem: Episodic, tmp_path: Path
) -> None:
    report = import_mem0(mem, _write(tmp_path, {"results": [ALICE, BOB]}), workspace="acme")
    assert (report.read, report.stored, report.unchanged, report.errors) == (2, 2, 0, [])
    alice = mem.memory(ScopeFilter(workspace_id="acme"), ALICE["id"])
    assert (alice.content, alice.resource, alice.agent) == ("Is vegetarian", "user:alice", None)
    assert alice.ts.isoformat() == "2025-03-01T18:00:00+00:00"
    assert alice.payload["metadata"] == {"category": "food"}
    bob = mem.memory(ScopeFilter(workspace_id="acme"), BOB["id"])
    assert (bob.resource, bob.agent, bob.conversation) == ("user:bob", "travel", "trip-42")
    # read back through the Mem0 shell, the record is the one exported
    got = Memory(episodic=mem, workspace="acme").get(ALICE["id"])
    assert got is not None
    assert (got["memory"], got["user_id"], got["metadata"]) == (
        "Is vegetarian",
        "alice",
        {"category": "food"},
    )
    assert got["updated_at"] == ALICE["updated_at"]
    # and found by recall
    hits = mem.recall("aisle seats", workspace="acme", resource="user:bob").hits
    assert hits and hits[0].memory.id == BOB["id"]


def test_importing_again_stores_nothing(mem: Episodic, tmp_path: Path) -> None:
    no_id = {"memory": "Speaks Portuguese", "user_id": "carol"}
    path = _write(tmp_path, [ALICE, no_id])
    first = import_mem0(mem, path, workspace="acme")
    again = import_mem0(mem, path, workspace="acme")
    assert (first.stored, again.stored, again.unchanged) == (2, 0, 2)
    assert mem.stats("acme").memories == 2


def test_a_bad_record_is_reported_with_its_place_and_the_rest_kept(
    mem: Episodic, tmp_path: Path
) -> None:
    bad_time = {**BOB, "id": "x1", "created_at": "yesterday-ish"}
    records = [ALICE, {"id": "x0", "user_id": "a"}, "not a memory", bad_time, {**BOB}]
    report = import_mem0(mem, _write(tmp_path, {"results": records}), workspace="acme")
    assert [(e.place, e.field) for e in report.errors] == [
        ("results[1]", "memory"),
        ("results[2]", "memory"),
        ("results[3]", "created_at"),
    ]
    assert report.stored == 2
    assert mem.stats("acme").memories == 2


def test_a_file_that_is_no_export_is_refused_by_name(mem: Episodic, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="file"):
        import_mem0(mem, _write(tmp_path, {"memory": "one"}), workspace="acme")
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(InvalidInput, match="not JSON"):
        import_mem0(mem, tmp_path / "broken.json", workspace="acme")
    with pytest.raises(InvalidInput, match="workspace"):
        import_mem0(mem, _write(tmp_path, [ALICE]), workspace="")


def test_the_cli_imports_and_exits_1_on_a_bad_record(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/cli.db"
    env = {"EPISODIC_DB": db, "EPISODIC_EMBEDDER": "none"}
    runner = CliRunner()
    assert runner.invoke(app, ["init"], env=env).exit_code == 0
    good = _write(tmp_path, {"results": [ALICE, BOB]})
    result = runner.invoke(app, ["import", str(good), "--from", "mem0", "-w", "acme"], env=env)
    assert result.exit_code == 0, result.output
    assert "2 stored" in result.stdout
    again = runner.invoke(
        app, ["import", str(good), "--from", "mem0", "-w", "acme", "--json"], env=env
    )
    assert again.exit_code == 0 and json.loads(again.stdout)["unchanged"] == 2
    bad = _write(tmp_path, [{"memory": ""}], "bad.json")
    failed = runner.invoke(app, ["import", str(bad), "--from", "mem0", "-w", "acme"], env=env)
    assert failed.exit_code == 1 and "[0]: memory" in failed.stderr
    other = runner.invoke(app, ["import", str(good), "--from", "zep", "-w", "acme"], env=env)
    assert other.exit_code == 2 and "from" in other.stderr


def test_the_platforms_list_and_page_and_the_dashboards_export_are_read(
    mem: Episodic, tmp_path: Path
) -> None:
    paged = {"count": 1, "next": None, "previous": None, "results": [PLATFORM]}
    assert import_mem0(mem, _write(tmp_path, paged), workspace="acme").stored == 1
    carl = mem.memory(ScopeFilter(workspace_id="acme"), PLATFORM["id"])
    # the platform's session_id is the run: the conversation
    assert (carl.resource, carl.conversation) == ("user:carl", "standup-7")
    assert carl.payload["mem0"]["app_id"] == "planner"
    assert carl.payload["mem0"]["categories"] == ["work"]
    bare = import_mem0(mem, _write(tmp_path, [PLATFORM], "bare.json"), workspace="acme")
    assert (bare.stored, bare.unchanged) == (0, 1)
    report = import_mem0(mem, _write(tmp_path, DASHBOARD, "dash.json"), workspace="acme")
    assert (report.stored, report.errors) == (1, [])
    got = Memory(episodic=mem, workspace="acme").get("mem_abc123")
    assert got is not None and (got["memory"], got["user_id"]) == (
        "User prefers dark mode",
        "user_1",
    )
    assert got["created_at"] == "2026-04-10T12:00:00+00:00"


def test_a_memorys_history_is_kept_as_its_versions(mem: Episodic, tmp_path: Path) -> None:
    path = _write(tmp_path, {"results": [EDITED]})
    report = import_mem0(mem, path, workspace="acme")
    assert (report.stored, report.edits, report.errors) == (1, 2, [])
    versions = mem.history(EDITED["id"], workspace="acme")
    assert [v.content for v in versions] == ["Lives in Lyon", "Lives in Lille", "Lives in Paris"]
    assert [v.written_at.isoformat() for v in versions if v.written_at] == [
        "2025-09-01T08:00:00+00:00",
        "2025-07-01T08:00:00+00:00",
        "2025-05-01T08:00:00+00:00",
    ]
    assert [v.written_by for v in versions] == ["mem0-import", "alice-app", None]
    rows = Memory(episodic=mem, workspace="acme").history(EDITED["id"])
    assert [(r["event"], r["old_memory"], r["new_memory"]) for r in rows] == [
        ("ADD", None, "Lives in Paris"),
        ("UPDATE", "Lives in Paris", "Lives in Lille"),
        ("UPDATE", "Lives in Lille", "Lives in Lyon"),
    ]
    # the current text is found, the older ones are history only
    hits = mem.recall("Lyon", workspace="acme", resource="user:dana").hits
    assert [h.memory.content for h in hits] == ["Lives in Lyon"]
    again = import_mem0(mem, path, workspace="acme")
    assert (again.stored, again.unchanged, again.edits) == (0, 1, 0)
    assert len(mem.history(EDITED["id"], workspace="acme")) == 3


def test_a_history_ending_before_the_current_text_gets_it_as_the_last_edit(
    mem: Episodic, tmp_path: Path
) -> None:
    """The platform's rows (with ``input``, ``session_id`` ...) and a history cut short:
    the record's own text is the current one."""
    rows = [
        {
            "id": "p1",
            "memory_id": "m-1",
            "input": [{"role": "user", "content": "I moved to Lille"}],
            "old_memory": None,
            "new_memory": "Lives in Lille",
            "user_id": "erin",
            "session_id": None,
            "categories": ["home"],
            "event": "ADD",
            "metadata": None,
            "created_at": "2025-06-01T08:00:00Z",
            "updated_at": "2025-06-01T08:00:00Z",
        }
    ]
    record = {"id": "m-1", "memory": "Lives in Nantes", "user_id": "erin", "history": rows}
    record |= {"created_at": "2025-06-01T08:00:00Z", "updated_at": "2025-10-01T08:00:00Z"}
    assert import_mem0(mem, _write(tmp_path, [record]), workspace="acme").edits == 1
    versions = mem.history("m-1", workspace="acme")
    assert [(v.content, v.written_by) for v in versions] == [
        ("Lives in Nantes", "mem0-import"),
        ("Lives in Lille", None),
    ]
    assert versions[0].written_at is not None
    assert versions[0].written_at.isoformat() == "2025-10-01T08:00:00+00:00"


def test_a_bad_history_entry_skips_its_memory_by_place(mem: Episodic, tmp_path: Path) -> None:
    broken = {**EDITED, "history": [EDITED["history"][0], {"event": "UPDATE"}]}
    odd = {**BOB, "history": [{"event": "MERGE", "new_memory": "x"}]}
    # a history starting with an edit must say what it edited
    headless = {"id": "m-2", "memory": "b", "history": [{"event": "UPDATE", "new_memory": "b"}]}
    when = {"id": "m-3", "memory": "b", "history": [{**EDITED["history"][0], "created_at": "soon"}]}
    not_a_list = {"id": "m-4", "memory": "c", "history": "ADD c"}
    files = [ALICE, broken, odd, headless, when, not_a_list]
    report = import_mem0(mem, _write(tmp_path, files), workspace="acme")
    assert [(e.place, e.field) for e in report.errors] == [
        ("[1]", "history[1].new_memory"),
        ("[2]", "history[0].event"),
        ("[3]", "history[0].old_memory"),
        ("[4]", "history[0].created_at"),
        ("[5]", "history"),
    ]
    assert report.stored == 1
    assert mem.stats("acme").memories == 1


def test_a_memory_mem0_replaced_is_superseded_by_its_replacement(
    mem: Episodic, tmp_path: Path
) -> None:
    """The platform lists a replaced memory with ``replaced_by``: imported as active it
    would be recalled as current. It is superseded here by the memory named, recorded as
    the import's decision; a replacement that is not there leaves it active, said."""
    new = {**PLATFORM, "id": "m-new", "memory": "Leads the API redesign, now for Q3"}
    new |= {"created_at": "2026-02-01T09:00:00Z"}
    old = {**PLATFORM, "id": "m-old", "replaced_by": "m-new", "lifecycle_state": "replaced"}
    lost = {**PLATFORM, "id": "m-lost", "memory": "Owns the billing roadmap"}
    lost |= {"replaced_by": "m-nowhere"}
    path = _write(tmp_path, [old, new, lost])
    report = import_mem0(mem, path, workspace="acme")
    assert (report.stored, report.replaced, report.errors) == (3, 1, [])
    assert [(n.place, n.field) for n in report.notes] == [("[2]", "replaced_by")]
    assert "m-nowhere" in report.notes[0].message
    m = Memory(episodic=mem, workspace="acme")
    assert {i["id"] for i in m.get_all(user_id="carl")["results"]} == {"m-new", "m-lost"}
    [link] = mem.supersessions("m-old", workspace="acme")
    assert (link.old_id, link.new_id, link.decided_by) == ("m-old", "m-new", "mem0-import")
    again = import_mem0(mem, path, workspace="acme")
    assert (again.stored, again.replaced, again.notes) == (0, 0, [])
