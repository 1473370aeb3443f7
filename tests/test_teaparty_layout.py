"""Seed 001's memory tree on the default path: a TeaParty tree (tests/fixtures/teaparty:
global, project and team MEMORY.md files with several entries each, institutional.md at
project and job level, a second job, files that are not memories) imports as it is,
recalls with seed 001's level multipliers, renders its institutional entries, takes
reinforcement and stage retirement, and exports back byte for byte."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath

import pytest
from typer.testing import CliRunner

from episodic import Episodic, Settings
from episodic.cli import app
from episodic.embed.fake import FakeEmbedder
from episodic.errors import InvalidInput
from episodic.model import Memory, MemoryStatus
from episodic.portable.teaparty import (
    PROJECT_CREW,
    Place,
    memory_files,
    path_of_place,
    place_of_path,
)
from episodic.store import open_store

TREE = Path(__file__).parent / "fixtures" / "teaparty"
NOW = datetime(2026, 3, 20, 9, 0, tzinfo=UTC)
JOB = "job-20260309-064427"
TEAM_FILE = f"payments/.teaparty/jobs/{JOB}/tasks/task-api/worktree/MEMORY.md"
LATER_JOB = "job-20260312-101500"
GLOBAL_FLAKY = "0b6f3c2e-8d1a-4c5e-9f7a-2e4d6b8a1c02"
PROJECT_FLAKY = "1c7a4d3f-9e2b-4d6f-8a1b-3f5e7c9b2d02"
TEAM_FLAKY = "4fad7a6c-c15e-4a9c-9d4e-6c8badce5a01"
TEAM_HEADER = "4fad7a6c-c15e-4a9c-9d4e-6c8badce5a02"
ROUNDING = "1c7a4d3f-9e2b-4d6f-8a1b-3f5e7c9b2d03"
PCI = "2d8b5e4a-af3c-4e7a-9b2c-4a6f8dac3e02"
JOB_FLAG = "3e9c6f5b-b04d-4f8b-8c3d-5b7a9ebd4f01"
LATER_TASK = "6bcf9c8e-e37a-4cbe-9f6a-8eadcfea7c01"


def open_mem(url: str) -> Episodic:
    return Episodic.open(url, settings=Settings(embedder="none"), clock=lambda: NOW)


@pytest.fixture
def mem(db_url: str) -> Iterator[Episodic]:
    with open_mem(db_url) as m:
        report = m.import_teaparty(TREE, workspace="acme")
        assert report.errors == []
        yield m


def tree_files(root: Path) -> dict[str, bytes]:
    return {str(rel): path.read_bytes() for rel, _, path in memory_files(root)}


def test_the_tree_imports_with_each_files_level_from_its_place(db_url: str) -> None:
    with open_mem(db_url) as mem:
        report = mem.import_teaparty(TREE, workspace="acme")
        assert (report.files, report.inserted, report.errors) == (7, 14, [])
        assert report.ok
        again = mem.import_teaparty(TREE, workspace="acme")
        # Seed 001's file_meta: the files did not change, so none is read again.
        assert (again.inserted, again.updated, again.unchanged) == (0, 0, 0)
        assert (again.skipped_unchanged, again.read, again.removed) == (7, 0, 0)

        def get(memory_id: str) -> Memory:
            return mem.store.get_memory("acme", memory_id)

        ids = lambda m: (m.type, m.resource, m.crew, m.conversation)  # noqa: E731
        assert ids(get(GLOBAL_FLAKY)) == ("learning", None, None, None)
        assert ids(get(PROJECT_FLAKY)) == ("learning", "payments", PROJECT_CREW, None)
        assert ids(get(PCI)) == ("institutional", "payments", PROJECT_CREW, None)
        assert ids(get(JOB_FLAG)) == ("institutional", "payments", PROJECT_CREW, JOB)
        assert ids(get(TEAM_FLAKY)) == ("learning", "payments", "task-api", JOB)
        assert ids(get(LATER_TASK)) == ("learning", "payments", "task-api", LATER_JOB)

        header = get(TEAM_HEADER)
        assert header.payload == {
            "learning_type": "corrective",
            "domain": "task",
            "phase": "implementation",
            "reinforcement_count": 1,
            "last_reinforced": "2026-03-10",
            # What export writes back, and the file the entry came from.
            "frontmatter_fields": [
                "id", "type", "domain", "importance", "phase", "status",
                "reinforcement_count", "last_reinforced", "created_at",
            ],
            "markdown_file": str(TREE.resolve() / TEAM_FILE),
        }  # fmt: skip
        assert (header.base_importance, header.status) == (0.8, MemoryStatus.ACTIVE)
        assert header.ts == datetime(2026, 3, 9, tzinfo=UTC)  # created_at
        assert get("4fad7a6c-c15e-4a9c-9d4e-6c8badce5a03").status is MemoryStatus.RETIRED
        rounding = get(ROUNDING)
        assert rounding.content.startswith("Not the ledger service but the gateway")
        assert rounding.payload["session_id"] == "session-20260225-093000"
        assert rounding.payload["promoted_at"] == "2026-02-26"
        assert get(PCI).payload["frontmatter"] == {"confidence": "high"}  # kept, not known
        flag = get(JOB_FLAG).payload["session_task"]
        assert flag == "Add idempotency keys to POST /refunds: reuse the capture key format"


def test_export_writes_the_tree_back_byte_for_byte(
    mem: Episodic, tmp_path: Path, new_db_url: Callable[[], str]
) -> None:
    report = mem.export_teaparty(tmp_path / "out", workspace="acme")
    assert (report.files, report.entries, report.skipped) == (7, 14, [])
    exported = tree_files(tmp_path / "out")
    assert exported == tree_files(TREE)
    assert len(exported) == 7
    # Only memory files are written: the worktree's README and the project docs are not.
    assert sorted(p.name for p in (tmp_path / "out").rglob("*") if p.is_file()) == sorted(
        PurePosixPath(rel).name for rel in exported
    )
    with open_mem(new_db_url()) as fresh:
        assert fresh.import_teaparty(tmp_path / "out", workspace="acme").inserted == 14
        fresh.export_teaparty(tmp_path / "again", workspace="acme")
    assert tree_files(tmp_path / "again") == exported
    again = mem.export_teaparty(tmp_path / "out", workspace="acme")
    assert (again.written, again.unchanged) == (0, 7)


def test_recall_weighs_the_askers_team_over_its_project_over_global(mem: Episodic) -> None:
    ask = {"workspace": "acme", "policy": "teaparty", "k": 3, "mark": False}
    query = "flaky integration tests rerun"
    # Same words at three levels: team x 1.5, project x 1.2, global x 1.0.
    hits = mem.recall(query, crew="task-api", **ask).hits
    assert [h.id for h in hits] == [TEAM_FLAKY, PROJECT_FLAKY, GLOBAL_FLAKY]
    # Asked by another task, task-api's entry is just more of the project.
    other = mem.recall(query, crew="task-ui", **ask).hits
    assert other[-1].id == GLOBAL_FLAKY and {h.id for h in other[:2]} == {
        TEAM_FLAKY,
        PROJECT_FLAKY,
    }
    # An explicit scope still filters: the crew's view holds only the team's entries.
    narrowed = mem.recall(query, crew="task-api", scope="crew_shared", **ask).hits
    assert narrowed[0].id == TEAM_FLAKY and {h.memory.crew for h in narrowed} == {"task-api"}


def test_render_always_shows_the_institutional_entries(mem: Episodic) -> None:
    block = mem.render("idempotency header", workspace="acme", crew="task-api", policy="teaparty")
    assert "Idempotency-Key header" in block  # recalled
    for standing in ("second reviewer", "only the vault service", "refunds_v2 flag"):
        assert standing in block  # project and job institutional.md, never ranked


def test_reinforcement_and_stage_retirement_reach_the_tree(mem: Episodic, tmp_path: Path) -> None:
    for _ in range(3):  # three retrievals in one session of the job
        hits = mem.recall("idempotency header", workspace="acme",
                          crew="task-api", policy="teaparty", k=1,
                          review_conversation=JOB).hits  # fmt: skip
        assert [h.id for h in hits] == [TEAM_HEADER]
    mem.add_message("ship it", workspace="acme", conversation=JOB, crew="task-api",
                    ts=NOW - timedelta(minutes=5))  # fmt: skip
    mem.segment(flush=True, conversation=JOB)  # the session ends
    retired = mem.retire_phase("acme", "implementation")
    assert set(retired) == {
        TEAM_FLAKY,
        TEAM_HEADER,
        JOB_FLAG,
        "5abe8b7d-d26f-4bad-8e5f-7d9cbedf6b01",  # task-ui's: domain task
    }  # not task-ui's team-domain entry, not the other phases'
    mem.export_teaparty(tmp_path, workspace="acme")
    team = tmp_path / f"payments/.teaparty/jobs/{JOB}/tasks/task-api/worktree/MEMORY.md"
    header = team.read_text(encoding="utf-8").split("\n---\nid: ")[1]
    assert "status: retired\nreinforcement_count: 2\nlast_reinforced: '2026-03-20'\n" in header
    original = (TREE / team.relative_to(tmp_path)).read_text(encoding="utf-8")
    assert "status: active\nreinforcement_count: 1\nlast_reinforced: '2026-03-10'\n" in original


def test_memories_the_tree_cannot_hold_are_reported_not_written(
    mem: Episodic, tmp_path: Path
) -> None:
    mem.store.append(
        [],
        [
            Memory(id="lrn_solo", workspace="acme", ts=NOW, type="learning",
                   content="an agent's learning outside any crew", agent="builder",
                   conversation="run-1", payload={"learning_type": "directive"}),
            Memory(id="lrn_rule", workspace="acme", ts=NOW, type="learning",
                   content="a rule\n---\nwith a separator line", crew="task-api",
                   conversation="run-1", resource="payments"),
            Memory(id="lrn_agent", workspace="acme", ts=NOW, type="learning",
                   content="a crew's learning from a session", crew="task-api",
                   conversation="run-2", agent="builder", resource="payments"),
        ],
    )  # fmt: skip
    report = mem.export_teaparty(tmp_path, workspace="acme")
    assert {s.memory_id for s in report.skipped} == {"lrn_solo", "lrn_rule"}
    assert report.entries == 15
    written = tmp_path / "payments/.teaparty/jobs/run-2/tasks/task-api/worktree/MEMORY.md"
    assert "agent: builder\n" in written.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("path", "place"),
    [
        ("MEMORY.md", Place(None, None, None, False)),
        ("institutional.md", Place(None, None, None, True)),
        ("git/payments/MEMORY.md", Place("git/payments", PROJECT_CREW, None, False)),
        (".teaparty/jobs/j1/tasks/t1/worktree/MEMORY.md", Place(None, "t1", "j1", False)),
        ("p/.teaparty/jobs/j1/institutional.md", Place("p", PROJECT_CREW, "j1", True)),
        # The legacy layout: a session folder is its project's team level.
        ("projects/p/.sessions/20260101-0900/MEMORY.md",
         Place("p", ".sessions/20260101-0900", "20260101-0900", False)),
    ],
)  # fmt: skip
def test_places_and_paths_name_each_other(path: str, place: Place) -> None:
    assert place_of_path(PurePosixPath(path)) == place
    assert path_of_place(place) == PurePosixPath(path)


@pytest.mark.parametrize(
    "path",
    [
        "p/README.md",
        "p/.teaparty/jobs/j1/MEMORY.md",
        "p/.teaparty/jobs/j1/tasks/t1/worktree/docs/MEMORY.md",
        "p/.teaparty/jobs/j1/tasks/t1/worktree/institutional.md",
        "projects/p/.sessions/20260101-0900/notes/MEMORY.md",
    ],
)
def test_other_files_are_not_memory_files(path: str) -> None:
    assert place_of_path(PurePosixPath(path)) is None


@pytest.mark.parametrize(
    "place",
    [
        Place("p", None, None, False),  # a project's entry needs the project crew
        Place(None, PROJECT_CREW, None, False),  # ... and a project
        Place("p", "t1", None, False),  # a task's entry needs a job
        Place("p", PROJECT_CREW, "j1", False),  # a job's learning needs a task
        Place("p", "a/b", "j1", False),  # a task is one folder
        Place("p/.teaparty", PROJECT_CREW, None, False),  # would read back elsewhere
        Place("p", "..", "j1", False),
    ],
)
def test_ids_that_name_no_file(place: Place) -> None:
    assert path_of_place(place) is None


BAD_TREE = {
    "MEMORY.md": """\
stray text before any entry
---
id: aaaaaaaa-0000-4000-8000-000000000001
type: procedural
domain: task
importance: 0.5
---
A good global entry survives its neighbours.

---
id: aaaaaaaa-0000-4000-8000-000000000002
type: opinion
---
An unknown type.

---
id: aaaaaaaa-0000-4000-8000-000000000003
importance: 1.5
---
Too important.

---
type: directive
---
No id.

---
id: aaaaaaaa-0000-4000-8000-000000000004
reinforcement_count: -1
---
Negative reinforcement.
""",
    "proj/MEMORY.md": """\
---
id: aaaaaaaa-0000-4000-8000-000000000005
domain: company
---
An unknown domain.

---
id: aaaaaaaa-0000-4000-8000-000000000006
last_reinforced: yesterday
---
Not a date.

---
id: aaaaaaaa-0000-4000-8000-000000000001
---
The id of another entry.

---
id: aaaaaaaa-0000-4000-8000-000000000007
status: archived
""",
    "proj/institutional.md": """\
---
id: aaaaaaaa-0000-4000-8000-000000000008
---
A good institutional entry.
""",
    f"proj/.teaparty/jobs/j1/tasks/{PROJECT_CREW}/worktree/MEMORY.md": """\
---
id: aaaaaaaa-0000-4000-8000-000000000009
---
A task folder named like the project's own crew.
""",
}


def test_bad_entries_are_reported_by_file_line_and_field_and_the_rest_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "tree"
    for rel, text in BAD_TREE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    monkeypatch.setenv("EPISODIC_EMBEDDER", "none")
    env = {"EPISODIC_DB": f"sqlite:///{tmp_path}/m.db"}
    run = CliRunner().invoke
    assert run(app, ["init"], env=env).exit_code == 0
    result = run(app, ["import", str(root), "-w", "acme", "--layout", "teaparty", "--json"],
                 env=env)  # fmt: skip
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["inserted"] == 2
    problems = {(e["path"], e["field"]) for e in report["errors"]}
    assert problems == {
        ("MEMORY.md:1", "frontmatter"),  # stray text
        ("MEMORY.md:10", "type"),
        ("MEMORY.md:16", "importance"),
        ("MEMORY.md:22", "id"),
        ("MEMORY.md:27", "reinforcement_count"),
        ("proj/MEMORY.md:1", "domain"),
        ("proj/MEMORY.md:7", "last_reinforced"),
        ("proj/MEMORY.md:13", "id"),  # a duplicate, named with the first one's place
        ("proj/MEMORY.md:18", "frontmatter"),  # never closed
        (f"proj/.teaparty/jobs/j1/tasks/{PROJECT_CREW}/worktree/MEMORY.md", "path"),
    }
    duplicate = next(e for e in report["errors"] if e["path"] == "proj/MEMORY.md:13")
    assert "MEMORY.md:2" in duplicate["message"]
    plain = run(app, ["import", str(root), "-w", "acme", "--layout", "teaparty"], env=env)
    assert "skipped MEMORY.md:10: type: use one of declarative|procedural|directive|corrective" in (
        plain.stderr
    )
    shown = run(app, ["recall", "good entry", "-w", "acme", "--json"], env=env)
    assert {h["type"] for h in json.loads(shown.stdout)} == {"learning", "institutional"}


def test_the_cli_round_trip_and_its_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EPISODIC_EMBEDDER", "none")
    env = {"EPISODIC_DB": f"sqlite:///{tmp_path}/m.db"}
    run = CliRunner().invoke
    assert run(app, ["init"], env=env).exit_code == 0
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    imported = run(app, ["import", str(tree), "-w", "acme", "--layout", "teaparty"], env=env)
    assert imported.exit_code == 0, imported.output
    assert "7 files: 14 new, 0 updated, 0 unchanged entries" in imported.stdout
    out = tmp_path / "out"
    exported = run(app, ["export", str(out), "-w", "acme", "--layout", "teaparty"], env=env)
    assert exported.exit_code == 0, exported.output
    assert "exported 14 entries of acme to 7 files" in exported.stdout
    assert tree_files(out) == tree_files(TREE)
    missing = run(app, ["export", str(out), "--layout", "teaparty"], env=env)
    assert missing.exit_code != 0 and "workspace" in missing.stderr
    wrong = run(app, ["import", str(tree), "-w", "acme", "--layout", "obsidian"], env=env)
    assert wrong.exit_code != 0 and "layout" in wrong.stderr
    # The plain layout is what it was: one file per memory, every field.
    plain = run(app, ["export", str(tmp_path / "plain"), "-w", "acme"], env=env)
    assert plain.exit_code == 0 and len(list((tmp_path / "plain").rglob("*.md"))) == 14


def test_nothing_is_removed_while_a_file_of_the_tree_cannot_be_read(
    db_url: str, tmp_path: Path
) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    with open_mem(db_url) as mem:
        assert mem.import_teaparty(tree, workspace="acme").inserted == 14
        # One entry deleted by hand, and another file broken: the entry might be there.
        team = tree / TEAM_FILE
        team.write_text(
            team.read_text("utf-8").split("\n---\nid: 4fad7a6c-c15e-4a9c-9d4e-6c8badce5a02")[0]
            + "\n",
            "utf-8",
        )
        (tree / "MEMORY.md").write_bytes(b"\xff not text")
        held = mem.import_teaparty(tree, workspace="acme")
        assert (held.removed, [e.path for e in held.errors]) == (0, ["MEMORY.md"])
        assert held.warnings and "could not be read" in held.warnings[0]
        assert mem.store.get_memory("acme", TEAM_HEADER).status is MemoryStatus.ACTIVE
        # Fixed (the file as imported before: not read again), the deletion counts.
        shutil.copy(TREE / "MEMORY.md", tree / "MEMORY.md")
        fixed = mem.import_teaparty(tree, workspace="acme", prune="keep")
        assert (fixed.removed, fixed.read) == (0, 1), fixed
        assert "were kept: prune: keep" in fixed.warnings[0]
        # Kept once, still seen as deleted: the file is read again until it is settled.
        done = mem.import_teaparty(tree, workspace="acme")
        assert (done.removed, done.read, done.errors) == (2, 1, [])
        assert mem.import_teaparty(tree, workspace="acme").read == 0
        header = mem.store.get_memory("acme", TEAM_HEADER)
        assert header.status is MemoryStatus.RETIRED
        assert header.payload["retired_reason"] == "removed from markdown"
        # Put back, it is read as the file says: active again, the reason gone.
        shutil.copy(TREE / TEAM_FILE, team)
        back = mem.import_teaparty(tree, workspace="acme")
        assert (back.updated, back.removed) == (2, 0)
        header = mem.store.get_memory("acme", TEAM_HEADER)
        assert header.status is MemoryStatus.ACTIVE and "retired_reason" not in header.payload
        with pytest.raises(InvalidInput, match="prune"):
            mem.import_teaparty(tree, workspace="acme", prune="delete")


def test_a_learning_type_edited_in_its_file_reaches_the_filter(db_url: str, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(TREE, tree)
    team = tree / TEAM_FILE
    with Episodic(
        store=open_store(db_url), embedder=FakeEmbedder(dim=64), clock=lambda: NOW
    ) as mem:
        mem.import_teaparty(tree, workspace="acme")
        ask = {"workspace": "acme", "mark": False, "k": 10}

        def found(kind: str) -> set[str]:
            return {
                h.id for h in mem.recall("idempotency key header", learning_type=kind, **ask).hits
            }

        assert TEAM_HEADER in found("corrective") and TEAM_HEADER not in found("directive")
        text = team.read_text("utf-8").replace("type: corrective", "type: directive")
        team.write_text(text, "utf-8")
        assert mem.import_teaparty(tree, workspace="acme").updated == 1
        # The vector stays (same text); the in-process index reads the new type.
        assert TEAM_HEADER in found("directive") and TEAM_HEADER not in found("corrective")
