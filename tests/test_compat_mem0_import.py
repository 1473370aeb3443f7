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
