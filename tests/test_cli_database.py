"""Which database a command uses: only ``init`` (and ``demo``) create one, every other
command refuses a database that was never created; ``--db`` before or after the command;
``--version``; ``--no-mark``; ``-k`` as the Python service takes it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import episodic
from conftest import raw_rows
from episodic import Episodic, Settings
from episodic.cli import app

runner = CliRunner()


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(autouse=True)
def _sparse(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EPISODIC_EMBEDDER", "none")
    monkeypatch.delenv("EPISODIC_DB", raising=False)


def nothing_created(url: str) -> bool:
    if url.startswith("sqlite:///"):
        return not Path(url.removeprefix("sqlite:///")).exists()
    return raw_rows(url, "SELECT to_regclass('schema_migrations')") == [(None,)]


@pytest.mark.parametrize(
    "command",
    [
        ["recall", "disk full", "--workspace", "acme"],
        ["render", "disk full", "--workspace", "acme"],
        ["ingest", "-"],
        ["journal", "disk", "--workspace", "acme"],
        ["keys", "list"],
        ["memory", "health", "--workspace", "acme"],
        ["mcp", "--workspace", "acme"],
        ["serve", "--port", "0"],
        ["keys", "create", "--workspace", "acme"],
        ["index", "--once"],
    ],
    ids=lambda c: " ".join(c[:2]),
)
def test_a_command_refuses_a_database_never_created(empty_url: str, command: list[str]) -> None:
    code, out, err = run("--db", empty_url, *command)
    assert code == 2, out + err
    assert "no episodic database at" in err and f"episodic init --db {empty_url}" in err
    assert nothing_created(empty_url)


def test_doctor_before_init_runs_its_checks_and_says_how_to_create_the_database(
    empty_url: str,
) -> None:
    code, out, err = run("--db", empty_url, "doctor")
    flat = " ".join(out.split())
    # An error the user must fix before any other command works: exit 1, as any failed check.
    assert code == 1, out + err
    assert f"ERROR store: no episodic database at {empty_url}" in flat
    assert f"fix: create it with `episodic init --db {empty_url}`" in flat
    # The checks that need no database still run and say what they found.
    assert "WARN embedder: sparse-only" in flat and "metrics:" in flat
    code, out, _ = run("--db", empty_url, "doctor", "--json")
    report = json.loads(out)
    assert code == 1 and not report["ok"] and report["stats"] is None
    assert [c["name"] for c in report["checks"]][:2] == ["store", "embedder"]
    assert nothing_created(empty_url)


def test_init_creates_it_and_then_every_command_uses_it(empty_url: str) -> None:
    assert run("--db", empty_url, "init")[0] == 0
    code, out, err = run("--db", empty_url, "recall", "disk full", "--workspace", "acme")
    assert code == 0 and "no memories recalled" in out, err


def test_the_default_database_is_not_created_either(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    code, _, err = run("recall", "disk full", "--workspace", "acme")
    assert code == 2 and "episodic/memory.db" in err and "episodic init" in err
    assert not (tmp_path / ".episodic").exists() and not (tmp_path / "home").exists()


@pytest.mark.parametrize("empty_url", ["postgres"], indirect=True)
def test_the_refusal_hides_a_password(empty_url: str) -> None:
    secret_url = empty_url.replace("postgres:@", "postgres:hunter2@", 1)
    assert secret_url != empty_url
    code, _, err = run("--db", secret_url, "recall", "disk", "-w", "acme")
    assert code == 2 and "no episodic database at" in err and "hunter2" not in err
    code, out, err = run("--db", secret_url, "doctor")
    assert code == 1 and "no episodic database at" in out and "hunter2" not in out + err


def remembered(tmp_path: Path, name: str) -> str:
    url = f"sqlite:///{tmp_path}/{name}.db"
    with Episodic.open(url, settings=Settings(embedder="none")) as mem:
        mem.remember(f"{name} cluster ran out of disk", workspace="acme")
    return url


def recalled_from(*args: str, env: dict[str, str] | None = None) -> str:
    code, out, err = run(*args, env=env)
    assert code == 0, err
    return out


def test_db_may_follow_the_command_and_wins(tmp_path: Path) -> None:
    north, south = remembered(tmp_path, "north"), remembered(tmp_path, "south")
    query = ("recall", "cluster disk", "--workspace", "acme")
    assert "north cluster" in recalled_from(*query, "--db", north)
    assert "north cluster" in recalled_from(*query, f"--db={north}")
    # The command's own --db beats the global one, which beats EPISODIC_DB.
    assert "north cluster" in recalled_from("--db", south, *query, "--db", north)
    assert "south cluster" in recalled_from("--db", south, *query, env={"EPISODIC_DB": north})
    assert "north cluster" in recalled_from(*query, "--db", north, env={"EPISODIC_DB": south})
    # The verbose flag may follow too; after `--` nothing is taken for the root.
    assert "north cluster" in recalled_from(*query, "-v", "--db", north)
    code, _, err = run("--db", north, "recall", "--workspace", "acme", "--", "--db")
    assert code == 0, err


def test_version_is_printed_as_healthz_reports_it_with_the_name_to_install() -> None:
    expected = f"episodic {episodic.__version__} (episodic-agent-memory)"
    code, out, _ = run("--version")
    assert code == 0 and out.strip() == expected
    # `episodic --version` alone answers before typer loads: the same line.
    fast = subprocess.run(
        [sys.executable, "-c", "from episodic.cli import main; main()", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert fast.stdout.strip() == expected


def reference_counts(url: str) -> list[Any]:
    return [r[0] for r in raw_rows(url, "SELECT reference_count FROM memories ORDER BY id")]


def test_no_mark_leaves_reference_counts_alone(db_url: str) -> None:
    with Episodic.open(db_url, settings=Settings(embedder="none")) as mem:
        mem.remember("checkout OOM after cache change", workspace="acme")
    for command in ("recall", "render"):
        code, _, err = run(
            "--db", db_url, command, "checkout OOM", "--workspace", "acme", "--no-mark"
        )
        assert code == 0, err
    assert reference_counts(db_url) == [0]
    assert run("--db", db_url, "recall", "checkout OOM", "--workspace", "acme")[0] == 0
    assert run("--db", db_url, "render", "checkout OOM", "--workspace", "acme")[0] == 0
    assert reference_counts(db_url) == [2]  # marking stays the default, as in Python


@pytest.mark.parametrize("k", [0, 51, -1])
def test_k_outside_1_to_50_recalls_5_with_a_warning_as_python_does(tmp_path: Path, k: int) -> None:
    url = f"sqlite:///{tmp_path}/k.db"
    with Episodic.open(url, settings=Settings(embedder="none")) as mem:
        for i in range(7):
            mem.remember(f"disk full on node {i}", workspace="acme")
        python = mem.recall("disk full", workspace="acme", k=k, mark=False)
    code, out, err = run(
        "--db", url, "recall", "disk full", "-w", "acme", "-k", str(k), "--json", "--no-mark"
    )
    assert code == 0 and len(python.hits) == 5
    assert len(json.loads(out)) == 5
    assert python.warnings and python.warnings[0] in err.replace("\n", " ")
