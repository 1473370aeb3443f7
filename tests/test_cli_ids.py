"""Shortened ids on the command line, on both backends: every command that takes a
memory's id (memory show, update, history, why, restore, supersede, supersessions, remember
--replaces, forget --memory, index --id) and ``keys revoke`` also take the start of one
when it names one id alone; a start shared by several is refused listing them (exit 2);
one naming nothing says so with the workspace searched; a start too short to be safe
(fewer than 4 characters after the type prefix) is never read as one; a whole id always
names itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import episodic.service.operations as operations
from episodic import Episodic, Settings
from episodic.cli import app
from episodic.model import MemoryStatus

runner = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(autouse=True)
def _sparse(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EPISODIC_EMBEDDER", "none")
    monkeypatch.delenv("EPISODIC_DB", raising=False)


@pytest.fixture
def db(db_url: str) -> str:
    """acme: two memories sharing the start evt_aaaa, one alone under evt_bbbb, and a
    whole id (evt_dddd) that is also the start of another; orbit: evt_cccc4444."""
    with Episodic.open(db_url, settings=Settings(db_url=db_url, embedder="none")) as mem:
        for memory_id, text in (
            ("evt_aaaa1111", "deploys go canary first"),
            ("evt_aaaa2222", "the cache holds sessions for an hour"),
            ("evt_bbbb3333", "checkout runs on four pods"),
            ("evt_dddd", "the staging database is small"),
            ("evt_dddd5555", "staging is rebuilt nightly"),
        ):
            mem.remember(text, workspace="acme", id=memory_id)
        mem.remember("orbit's own secret", workspace="orbit", id="evt_cccc4444")
    return db_url


def status_of(url: str, memory_id: str, workspace: str = "acme") -> MemoryStatus:
    with Episodic.open(url, settings=Settings(db_url=url, embedder="none")) as mem:
        return mem.store.get_memory(workspace, memory_id).status


def test_a_unique_start_names_the_memory_in_every_command(db: str) -> None:
    code, out, err = run("--db", db, "memory", "update", "evt_bbbb", "-w", "acme",
                         "--content", "checkout runs on six pods")  # fmt: skip
    assert code == 0, err
    assert out.startswith("evt_bbbb3333: checkout runs on six pods")
    code, out, err = run("--db", db, "memory", "show", "evt_bbbb", "-w", "acme")
    assert code == 0, err
    assert out.startswith("evt_bbbb3333  ")
    assert out.splitlines()[1] == "checkout runs on six pods"
    code, out, err = run("--db", db, "memory", "show", "evt_bbbb333", "-w", "acme", "--json")
    assert code == 0, err
    assert json.loads(out)["content"] == "checkout runs on six pods"
    code, out, err = run("--db", db, "memory", "history", "evt_bbbb33", "-w", "acme", "--json")
    assert code == 0, err
    assert [v["content"] for v in json.loads(out)["versions"]] == [
        "checkout runs on six pods",
        "checkout runs on four pods",
    ]
    code, out, err = run("--db", db, "memory", "supersede", "evt_bbbb", "checkout left k8s",
                         "-w", "acme")  # fmt: skip
    assert code == 0, err
    assert out.startswith("evt_bbbb3333 superseded by ")
    assert status_of(db, "evt_bbbb3333") is MemoryStatus.SUPERSEDED
    code, out, err = run("--db", db, "memory", "supersessions", "evt_bbbb", "-w", "acme")
    assert code == 0, err
    assert out.startswith("evt_bbbb3333 superseded by ")
    code, out, err = run("--db", db, "memory", "why", "evt_bbbb", "-w", "acme", "--json")
    assert code == 0, err
    assert json.loads(out)["memory"] == "evt_bbbb3333"
    assert any(d["kind"] == "superseded" for d in json.loads(out)["decisions"])
    code, out, err = run("--db", db, "memory", "restore", "evt_bbbb", "-w", "acme")
    assert code == 0, err
    assert out.startswith("evt_bbbb3333 restored (active)")
    code, out, err = run("--db", db, "memory", "remember", "checkout is serverless now",
                         "-w", "acme", "--replaces", "evt_bbbb")  # fmt: skip
    assert code == 0, err
    assert "(replaces evt_bbbb3333)" in out
    assert status_of(db, "evt_bbbb3333") is MemoryStatus.SUPERSEDED
    code, out, err = run("--db", db, "index", "--id", "evt_aaaa1", "-w", "acme")
    assert code == 1  # sparse-only: not embedded, and the whole id says which
    assert "evt_aaaa1111 not embedded: sparse-only" in err
    code, out, err = run("--db", db, "forget", "-w", "acme", "--memory", "evt_bbbb")
    assert code == 0, err
    assert out.startswith("forgot 1 memory")
    assert run("--db", db, "memory", "why", "evt_bbbb3333", "-w", "acme")[0] == 2


def test_a_start_the_replacing_memory_has_is_that_memory(db: str) -> None:
    code, out, err = run("--db", db, "memory", "supersede", "evt_aaaa1", "evt_dddd5",
                         "-w", "acme", "--json")  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["id"] == "evt_dddd5555"
    assert status_of(db, "evt_aaaa1111") is MemoryStatus.SUPERSEDED


@pytest.mark.parametrize(
    "command",
    [
        ["memory", "update", "evt_aaaa", "--content", "x"],
        ["memory", "history", "evt_aaaa"],
        ["memory", "why", "evt_aaaa"],
        ["memory", "show", "evt_aaaa"],
        ["memory", "restore", "evt_aaaa"],
        ["memory", "supersessions", "evt_aaaa"],
        ["memory", "supersede", "evt_aaaa", "new text"],
        ["memory", "supersede", "evt_bbbb", "evt_aaaa"],
        ["memory", "remember", "new text", "--replaces", "evt_aaaa"],
        ["forget", "--memory", "evt_aaaa"],
        ["index", "--id", "evt_aaaa"],
    ],
    ids=lambda c: " ".join(c[:2]),
)
def test_a_shared_start_is_refused_listing_the_candidates(db: str, command: list[str]) -> None:
    code, out, err = run("--db", db, *command, "-w", "acme")
    assert code == 2, out + err
    assert "'evt_aaaa' is the start of 2 memory ids in workspace 'acme': " in err
    assert "evt_aaaa1111, evt_aaaa2222; give more of the id" in err
    assert status_of(db, "evt_aaaa1111") is MemoryStatus.ACTIVE
    assert status_of(db, "evt_aaaa2222") is MemoryStatus.ACTIVE
    assert status_of(db, "evt_bbbb3333") is MemoryStatus.ACTIVE


def test_a_start_naming_nothing_says_so_with_the_workspace(db: str) -> None:
    # evt_cccc4444 is orbit's: acme's commands never see it.
    code, out, err = run("--db", db, "memory", "history", "evt_cccc", "-w", "acme")
    assert code == 2, out
    assert "id: no memory in workspace 'acme' has the id 'evt_cccc' or an id starting" in err
    code, out, err = run("--db", db, "memory", "why", "evt_cccc", "-w", "acme")
    assert code == 2
    assert "no memory in workspace 'acme'" in err
    # A mistyped workspace is named, with the ones there are.
    code, out, err = run("--db", db, "memory", "why", "evt_bbbb", "-w", "acmee")
    assert code == 2
    assert "workspace 'acmee' holds no memories" in err
    assert "acme (5 memories" in err
    # forget keeps its own answer: nothing matched, exit 1.
    code, out, err = run("--db", db, "forget", "-w", "acme", "--memory", "evt_cccc")
    assert code == 1
    assert "nothing matched" in err
    assert status_of(db, "evt_cccc4444", "orbit") is MemoryStatus.ACTIVE


@pytest.mark.parametrize("given", ["evt_bbb", "evt_b", "bbb", "e"])
def test_a_start_too_short_is_not_read_as_one(db: str, given: str) -> None:
    code, out, err = run("--db", db, "memory", "history", given, "-w", "acme")
    assert code == 2, out
    after = " after 'evt_'" if given.startswith("evt_") else ""
    assert f"has the id {given!r} (an id's start needs 4 characters{after})" in err
    code, _, err = run("--db", db, "forget", "-w", "acme", "--memory", given)
    assert code == 1
    assert status_of(db, "evt_bbbb3333") is MemoryStatus.ACTIVE


def test_a_whole_id_names_itself_though_it_starts_another(db: str) -> None:
    code, out, err = run("--db", db, "memory", "history", "evt_dddd", "-w", "acme", "--json")
    assert code == 0, err
    assert [v["content"] for v in json.loads(out)["versions"]] == ["the staging database is small"]
    # A memory given whole as the replacing one is that memory, not new text.
    code, out, err = run("--db", db, "memory", "supersede", "evt_aaaa2", "evt_dddd5555",
                         "-w", "acme", "--json")  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["id"] == "evt_dddd5555"


def test_text_with_spaces_is_never_read_as_a_start(db: str) -> None:
    # "evt_dddd is stale" starts with a whole id but is a new text.
    code, out, err = run("--db", db, "memory", "supersede", "evt_bbbb", "evt_dddd5 is stale",
                         "-w", "acme", "--json")  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["content"] == "evt_dddd5 is stale"


@pytest.fixture
def keys(db: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Three keys: two whose ids share the start k_abcd, one alone under k_ef01."""
    made = iter(["k_abcd1111", "k_abcd2222", "k_ef012345"])
    monkeypatch.setattr(operations, "new_secret", lambda: (k := next(made), f"ep_{k}_s3cret"))
    with Episodic.open(db, settings=Settings(db_url=db, embedder="none")) as mem:
        ids = [mem.create_key("acme", role="admin")[0].id for _ in range(3)]
    yield ids


def revoked(url: str) -> set[str]:
    with Episodic.open(url, settings=Settings(db_url=url, embedder="none")) as mem:
        return {k.id for k in mem.list_keys(None) if k.revoked_at is not None}


def test_keys_revoke_takes_a_unique_start_and_refuses_a_shared_one(
    db: str, keys: list[str]
) -> None:
    code, out, err = run("--db", db, "keys", "revoke", "k_abcd")
    assert code == 2, out
    assert "key: 'k_abcd' is the start of 2 key ids: k_abcd1111, k_abcd2222" in err
    code, out, err = run("--db", db, "keys", "revoke", "k_ef")
    assert code == 2
    assert "no API key has the id 'k_ef' (an id's start needs 4 characters after 'k_')" in err
    code, out, err = run("--db", db, "keys", "revoke", "k_nope")
    assert code == 2
    assert "no API key has the id 'k_nope' or an id starting with it" in err
    assert revoked(db) == set()
    code, out, err = run("--db", db, "keys", "revoke", "k_ef01")
    assert code == 0, err
    assert out.startswith("revoked k_ef012345 (acme, admin)")
    code, out, err = run("--db", db, "keys", "revoke", "k_abcd2222")
    assert code == 0, err
    assert revoked(db) == {"k_ef012345", "k_abcd2222"}


def test_the_installed_command_reads_a_start(db: str, tmp_path: Path) -> None:
    """Through ``episodic``'s own entry point, as a user runs it (not only typer's runner)."""
    env = {**os.environ, "EPISODIC_EMBEDDER": "none", "EPISODIC_DB": db}
    done = subprocess.run(
        [sys.executable, "-m", "episodic.cli", "memory", "why", "evt_bbbb", "-w", "acme"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("admitted ")
    done = subprocess.run(
        [sys.executable, "-m", "episodic.cli", "memory", "why", "evt_aaaa", "-w", "acme"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 2
    assert "evt_aaaa1111, evt_aaaa2222" in done.stderr
