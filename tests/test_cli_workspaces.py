"""Which database and workspace a command reads, told rather than guessed: the default
database is the same wherever a command runs (``EPISODIC_DB``, else the nearest
``.episodic/`` up the tree, else the user's data folder) and ``doctor`` says which and
why; ``episodic demo`` keeps to a file of its own; ``episodic workspaces`` lists what a
database holds; a recall, render, list or forget naming a workspace that holds nothing
warns and names the ones there are; a forget that matches nothing exits 1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from episodic import Episodic, Settings
from episodic.cli import app
from episodic.config import default_database

runner = CliRunner()


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of the test's own, so the user's data folder is under tmp_path."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.delenv("EPISODIC_DB", raising=False)
    monkeypatch.setenv("EPISODIC_EMBEDDER", "none")
    return home


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path}/m.db"
    with Episodic.open(url, settings=Settings(embedder="none")) as mem:
        mem.remember("checkout OOM after the cache change", workspace="northwind")
        mem.remember("deploys go canary first", workspace="northwind")
        mem.ingest([{"workspace": "acme", "type": "exec.output_chunk", "summary": "ls"}])
    return url


def test_workspaces_lists_each_with_its_memories_and_events(db: str) -> None:
    code, out, _ = run("--db", db, "workspaces")
    assert code == 0
    assert out.splitlines() == ["acme (0 memories, 1 event)", "northwind (2 memories, 2 events)"]
    code, out, _ = run("--db", db, "workspaces", "--json")
    assert json.loads(out) == [
        {"workspace": "acme", "memories": 0, "events": 1},
        {"workspace": "northwind", "memories": 2, "events": 2},
    ]


@pytest.mark.parametrize(
    "command",
    [
        ["recall", "checkout OOM", "-w", "nortwind"],
        ["render", "checkout OOM", "-w", "nortwind"],
        ["memory", "list", "-w", "nortwind"],
    ],
    ids=lambda c: c[0] if c[0] != "memory" else "memory list",
)
def test_a_misspelt_workspace_warns_and_names_the_ones_there_are(
    db: str, command: list[str]
) -> None:
    code, _, err = run("--db", db, *command)
    flat = " ".join(err.split())
    assert code == 0
    assert "workspace 'nortwind' holds no memories and no events" in flat, flat
    assert "northwind (2 memories, 2 events)" in flat and "acme (0 memories, 1 event)" in flat


def test_a_workspace_that_exists_but_recalls_nothing_gives_no_warning(db: str) -> None:
    code, out, err = run("--db", db, "recall", "zebra", "-w", "northwind")
    assert code == 0 and "no memories recalled" in out and "holds no memories" not in err
    # An events-only workspace exists too: not a typo, but none of its events is a memory.
    said = " ".join(run("--db", db, "recall", "zebra", "-w", "acme")[2].split())
    assert "holds no memories and no events" not in said
    assert "holds no memories, only 1 journal event" in said


def test_a_forget_that_matches_nothing_exits_1_and_says_so(db: str) -> None:
    code, _, err = run("--db", db, "forget", "-w", "nosuchws", "--agent", "x")
    assert code == 1
    assert "nothing matched" in err and "workspace 'nosuchws' holds no memories" in err
    code, _, err = run("--db", db, "forget", "-w", "northwind", "--agent", "nobody")
    assert code == 1 and "nothing matched" in err and "holds no memories" not in err
    code, out, _ = run("--db", db, "forget", "-w", "northwind", "--yes")
    assert code == 0 and "forgot 2 memories" in out


def test_the_default_database_is_found_up_the_tree_and_doctor_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    (project / ".episodic").mkdir(parents=True)
    (project / "src" / "deep").mkdir(parents=True)
    monkeypatch.chdir(project / "src")
    assert run("init")[0] == 0
    assert (project / ".episodic" / "memory.db").is_file()
    run("memory", "remember", "the build needs node 20", "-w", "acme")
    monkeypatch.chdir(project / "src" / "deep")  # the same memory from anywhere inside
    code, out, _ = run("recall", "build node", "-w", "acme")
    assert code == 0 and "node 20" in out
    code, out, _ = run("doctor")
    flat = " ".join(out.split())
    assert f"database: sqlite:///{project}/.episodic/memory.db" in flat
    assert "chosen by the nearest .episodic/ folder" in flat
    report = json.loads(run("doctor", "--json")[1])
    assert report["database"]["chosen_by"].startswith("the nearest .episodic/ folder")
    # EPISODIC_DB beats the folder; --db beats both.
    other = f"sqlite:///{tmp_path}/other.db"
    assert default_database({"EPISODIC_DB": other}).url == other
    code, out, _ = run("--db", other, "init")
    assert code == 0 and "other.db" in out


def test_outside_any_project_the_default_is_the_users_data_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _home: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    data = _home / ".local" / "share" / "episodic" / "memory.db"
    code, _, err = run("recall", "x", "-w", "acme")
    flat = " ".join(err.split())
    assert code == 2 and f"no episodic database at sqlite:///{data}" in flat
    assert "the user's data folder" in flat and "`episodic init`" in flat
    assert run("init")[0] == 0 and data.is_file()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the same database from another folder
    assert run("recall", "x", "-w", "acme")[0] == 0


def test_the_demo_writes_to_a_file_of_its_own_not_the_users_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _home: Path
) -> None:
    project = tmp_path / "project"
    (project / ".episodic").mkdir(parents=True)
    monkeypatch.chdir(project)
    mine = f"sqlite:///{project}/.episodic/memory.db"
    code, out, err = run("demo", env={"EPISODIC_DB": mine})
    assert code == 0, err
    demo = _home / ".local" / "share" / "episodic" / "demo.db"
    assert demo.is_file() and not (project / ".episodic" / "memory.db").exists()
    assert f"--db sqlite:///{demo}" in " ".join(out.split())
    # --db on the command line is obeyed.
    code, _, err = run("--db", f"sqlite:///{tmp_path}/named.db", "demo")
    assert code == 0 and (tmp_path / "named.db").is_file(), err


def _needing_a_workspace() -> list[list[str]]:
    """Every command whose ``--workspace`` is required, as a command line giving every
    other required parameter (``x``) and no workspace."""
    import typer.main

    lines: list[list[str]] = []

    def walk(command: Any, path: list[str]) -> None:
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, [*path, name])
        params = getattr(command, "params", [])
        if not any(p.name == "workspace" and p.required for p in params):
            return
        line = list(path)
        for p in params:
            if p.required and p.name != "workspace":
                line += ["x"] if p.param_type_name == "argument" else [p.opts[0], "x"]
        lines.append(line)

    walk(typer.main.get_command(app), [])
    return lines


NEEDING = _needing_a_workspace()


def test_the_commands_needing_a_workspace_are_found() -> None:
    found = {" ".join(c for c in line if c != "x" and not c.startswith("-")) for line in NEEDING}
    assert {"recall", "render", "journal", "forget", "memory why", "memory restore"} <= found


@pytest.mark.parametrize("command", NEEDING, ids=lambda c: " ".join(c))
def test_a_missing_workspace_names_the_ones_there_are(db: str, command: list[str]) -> None:
    code, _, err = run("--db", db, *command)
    flat = " ".join(err.replace("│", " ").split())
    assert code == 2
    assert "Missing option '--workspace' / '-w'" in flat, flat
    assert "The workspaces in this database: acme (0 memories, 1 event); northwind" in flat, flat


def test_a_missing_workspace_in_an_empty_database_says_how_to_make_one(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/empty.db"
    Episodic.open(url, settings=Settings(embedder="none")).close()
    code, _, err = run("--db", url, "recall", "checkout")
    flat = " ".join(err.replace("│", " ").split())
    assert code == 2
    assert "holds no workspace yet: `episodic ingest` or `episodic memory remember`" in flat


def test_a_missing_workspace_without_a_database_says_how_to_create_it(tmp_path: Path) -> None:
    code, _, err = run("--db", f"sqlite:///{tmp_path}/none.db", "render", "checkout")
    flat = " ".join(err.replace("│", " ").split())
    assert code == 2
    assert "The workspaces cannot be listed: no episodic database at" in flat, flat
    assert "episodic init --db" in flat


def test_a_missing_workspace_for_a_server_does_not_list_the_local_ones(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EPISODIC_URL", "http://127.0.0.1:9")
    code, _, err = run("--db", db, "recall", "checkout")
    flat = " ".join(err.replace("│", " ").split())
    assert code == 2
    assert "asks the server EPISODIC_URL names" in flat and "northwind" not in flat, flat
