"""Markdown as the source of truth: export -> import loses nothing, re-runs touch only what
changed, hand edits update memories, malformed files are reported by path and skipped."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import fields
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import raw_execute
from episodic import Episodic, Settings
from episodic.cli import app
from episodic.embed.fake import FakeEmbedder
from episodic.errors import InvalidInput
from episodic.model import Event, Memory, MemoryStatus, ScopeFilter
from episodic.portable import JOURNAL_FILE, parse_file, relative_path, render_file
from episodic.store import open_store

T0 = datetime(2026, 3, 1, 9, 30, 15, 123456, tzinfo=UTC)


def memories() -> tuple[list[Event], list[Memory]]:
    """Memories that use every field, with awkward values."""
    events = [
        Event(
            id="src-1",
            workspace="acme",
            ts=T0,
            type="message",
            summary="I said: use card A",
            payload={"role": "user", "name": "Dana"},
            agent="helper",
            conversation="c/1",
        ),
        Event(id="src-2", workspace="acme", ts=T0, type="peer.escalation", summary="x"),
    ]
    full = Memory(
        id="ent/with slash & ünïcode",
        workspace="acme",
        ts=T0 + timedelta(minutes=3),
        type="entry",
        content="Line one\n---\nnot frontmatter: yes\n\n  indented, trailing spaces  \n✓ done",
        severity="warn",
        payload={
            "source": "user_assertion",
            "evidence": "use card A",
            "nested": {"a": [1, 2.5, None]},
            "flag": True,
        },
        crew="ops",
        agent="helper",
        resource="order-7",
        conversation="c/1",
        base_importance=0.55,
        importance=0.8123456789,
        reference_count=4,
        last_referenced_at=T0 + timedelta(days=2),
        status=MemoryStatus.RETIRED,
        source_event_ids=("src-1", "src-2"),
        created_at=T0 + timedelta(seconds=1),
        keys="Dana user 1 March 2026",
        content_hash="ab" * 32,
        stability=3.25,
        difficulty=6.5,
        last_reviewed_at=T0 + timedelta(days=1),
        consolidated_at=T0 + timedelta(days=3),
    )
    plain = Memory(
        id="n1", workspace="acme", ts=T0, type="note", content="plain note", created_at=T0
    )
    crew_only = Memory(
        id=".hidden",
        workspace="acme",
        ts=T0,
        type="note",
        content="crew note",
        crew="ops",
        created_at=T0,
        payload={"source": {"not": "a string"}},
    )
    other = Memory(
        id="o1",
        workspace="orbit",
        ts=T0,
        type="note",
        content="orbit note",
        agent="a",
        created_at=T0,
    )
    return events, [full, plain, crew_only, other]


@pytest.fixture
def fake() -> FakeEmbedder:
    return FakeEmbedder(dim=64)


def new_mem(url: str, fake: FakeEmbedder) -> Episodic:
    return Episodic(store=open_store(url), embedder=fake, settings=Settings())


@pytest.fixture
def source(db_url: str, fake: FakeEmbedder) -> Iterator[Episodic]:
    mem = new_mem(db_url, fake)
    events, ms = memories()
    mem.store.append(events, ms)
    # src-1 was taken by an episode: the journal must keep that, or it would be segmented again.
    raw_execute(db_url, "UPDATE events SET episode_id = 'ep-1' WHERE id = 'src-1'")
    mem.index_once()
    yield mem
    mem.close()


def test_export_import_round_trips_every_field(
    source: Episodic, tmp_path: Path, fake: FakeEmbedder, new_db_url: Callable[[], str]
) -> None:
    out = tmp_path / "export"
    report = source.export_markdown(out)
    assert (report.workspaces, report.written, report.events) == (2, 4, 2)
    _, ms = memories()
    for m in ms:
        assert (out / relative_path(m)).is_file()
    assert (out / "acme" / "crews" / "ops" / "agents" / "helper").is_dir()
    assert (out / "acme" / "crews" / "ops" / "%2Ehidden.md").is_file()

    target = new_mem(new_db_url(), fake)
    result = target.import_markdown(out)
    assert result.errors == [] and (result.inserted, result.events_inserted) == (4, 2)
    for m in ms:
        back = target.store.get_memory(m.workspace, m.id)
        for f in fields(Memory):
            assert getattr(back, f.name) == getattr(m, f.name), f.name
        assert back == source.store.get_memory(m.workspace, m.id)
    # The cited events come back with the episode that took them: not pending again.
    (ev, episode), _ = target.store.events_with_episodes("acme", ["src-1", "src-2"])
    assert ev.summary == "I said: use card A" and episode == "ep-1"
    assert target.store.pending_conversations(10) == []
    # And a second export of the rebuilt database is byte for byte the first.
    again = tmp_path / "again"
    target.export_markdown(again)
    first = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    second = {p.relative_to(again): p.read_bytes() for p in again.rglob("*") if p.is_file()}
    assert first == second
    target.close()


def test_reruns_touch_only_what_changed_and_hand_edits_update(
    source: Episodic, tmp_path: Path, fake: FakeEmbedder
) -> None:
    out = tmp_path / "export"
    source.export_markdown(out)
    first = source.import_markdown(out)  # same database: everything is already there
    assert (first.read, first.unchanged, first.inserted, first.updated) == (4, 4, 0, 0)
    second = source.import_markdown(out)
    assert (second.read, second.skipped_unchanged) == (0, 4)

    path = out / "acme" / "n1.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(
        text.replace("plain note", "plain note, edited by hand").replace(
            "importance: 0.5", "importance: 0.9"
        ),
        encoding="utf-8",
    )
    embedded_before = fake.texts_embedded
    third = source.import_markdown(out)
    assert (third.read, third.updated, third.skipped_unchanged, third.embedded) == (1, 1, 3, 1)
    assert fake.texts_embedded == embedded_before + 1  # only the new text
    edited = source.store.get_memory("acme", "n1")
    assert edited.content == "plain note, edited by hand" and edited.importance == 0.9
    hits = source.recall("edited by hand", workspace="acme", policy="dense").hits
    assert hits[0].id == "n1"
    # Touched but not changed: read, hashed, nothing written.
    os.utime(path, ns=(1, 1))
    fourth = source.import_markdown(out)
    assert (fourth.read, fourth.updated, fourth.skipped_unchanged) == (0, 0, 4)


def test_reindex_from_a_folder_mirrors_it_reusing_cached_embeddings(
    source: Episodic, tmp_path: Path, fake: FakeEmbedder, new_db_url: Callable[[], str]
) -> None:
    out = tmp_path / "export"
    source.export_markdown(out)
    (out / "acme" / "n1.md").unlink()
    calls = fake.texts_embedded
    report = source.import_markdown(out, mirror=True)
    assert report.removed == 1 and report.embedded == 0 and fake.texts_embedded == calls
    assert source.store.get_memories("acme", ["n1"]) == []
    # A fresh database fed from the folder embeds each text once; the old one's cache
    # would have answered (same hashes): here the cache is the new database's own.
    runner = CliRunner()
    env = {"EPISODIC_EMBEDDER": "none"}
    db = new_db_url()
    assert runner.invoke(app, ["--db", db, "init"], env=env).exit_code == 0
    result = runner.invoke(app, ["--db", db, "reindex", "--from", str(out), "--json"], env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["inserted"] == 3


def test_malformed_files_are_reported_by_path_and_the_rest_import(
    tmp_path: Path, fake: FakeEmbedder, db_url: str
) -> None:
    folder = tmp_path / "hand"
    (folder / "acme").mkdir(parents=True)
    good = "---\nid: g1\nworkspace: acme\ntype: note\n---\nA good hand-written note.\n"
    cases = {
        "good.md": good,
        "no-frontmatter.md": "just text\n",
        "unclosed.md": "---\nid: u1\nworkspace: acme\nno end\n",
        "bad-yaml.md": "---\nid: [unclosed\n---\nbody\n",
        "importance.md": "---\nid: i1\nworkspace: acme\nimportance: high\n---\nbody\n",
        "unknown.md": "---\nid: k1\nworkspace: acme\ncolour: red\n---\nbody\n",
        "empty-body.md": "---\nid: e1\nworkspace: acme\n---\n\n",
        "no-id.md": "---\nworkspace: acme\n---\nbody\n",
        "bad-ts.md": "---\nid: t1\nworkspace: acme\nts: last tuesday\n---\nbody\n",
        "list.md": "---\n- a\n- b\n---\nbody\n",
        "zz-dup.md": good.replace("A good", "Another"),
    }
    for name, text in cases.items():
        (folder / "acme" / name).write_text(text, encoding="utf-8")
    (folder / "acme" / "latin1.md").write_bytes("---\nid: l1\n---\ncaf\xe9".encode("latin-1"))
    mem = new_mem(db_url, fake)
    report = mem.import_markdown(folder)
    errors = {e.path: e.field for e in report.errors}
    assert errors == {
        "acme/bad-ts.md": "ts",
        "acme/bad-yaml.md": "frontmatter",
        "acme/zz-dup.md": "id",
        "acme/empty-body.md": "content",
        "acme/importance.md": "importance",
        "acme/latin1.md": "file",
        "acme/list.md": "frontmatter",
        "acme/no-frontmatter.md": "frontmatter",
        "acme/no-id.md": "id",
        "acme/unclosed.md": "frontmatter",
        "acme/unknown.md": "colour",
    }
    assert report.inserted == 1
    assert mem.store.get_memory("acme", "g1").content == "A good hand-written note."
    # A failed file is read again next time (it may have been fixed).
    (folder / "acme" / "importance.md").write_text(
        cases["importance.md"].replace("high", "0.7"), encoding="utf-8"
    )
    again = mem.import_markdown(folder)
    assert again.inserted == 1 and "acme/importance.md" not in {e.path for e in again.errors}
    # mirror removes nothing while files fail: one of them may hold any memory.
    assert mem.import_markdown(folder, mirror=True).removed == 0
    mem.close()


def test_cli_export_then_import(tmp_path: Path, source: Episodic) -> None:
    runner = CliRunner()
    env = {"EPISODIC_EMBEDDER": "none"}
    db = source.store.url
    out = tmp_path / "cli-export"
    result = runner.invoke(app, ["--db", db, "export", str(out), "--workspace", "acme"], env=env)
    assert result.exit_code == 0 and "exported 3 memories of 1 workspace " in result.stdout
    assert not (out / "orbit").exists() and (out / "acme" / JOURNAL_FILE).is_file()
    (out / "acme" / "broken.md").write_text("nope", encoding="utf-8")
    result = runner.invoke(app, ["--db", db, "import", str(out)], env=env)
    assert result.exit_code == 1
    assert "skipped acme/broken.md: frontmatter: the file must start with a '---' line" in (
        result.stderr
    )
    assert source.store.get_memories("acme", ["n1"])[0].content == "plain note"
    listed = source.list_memories(ScopeFilter("acme"), limit=10).items
    assert len(listed) == 3


@pytest.mark.parametrize(
    "crew",
    ['crew: ""', "crew: ''", "crew: >-\n", "crew: |-\n", "crew:"],
)
def test_an_empty_scope_id_is_none_and_round_trips(crew: str) -> None:
    # Found by the markdown fuzzer: a folded scalar with nothing in it read as crew ""
    # (a scope no file path can hold), and came back from its own export as no crew.
    text = f"---\nid: m2\ntype: learning\nworkspace: acme\n{crew}\n---\nthe body\n"
    memory = parse_file(text)
    assert memory.crew is None
    assert parse_file(render_file(memory)) == memory


@pytest.mark.parametrize("key", ["'': x", "? \n", "' ': 1"])
def test_a_field_with_an_empty_name_is_refused_naming_the_frontmatter(key: str) -> None:
    # Found by the markdown fuzzer: the error named the field "" (nothing to point at).
    text = f"---\nid: m1\ntype: note\nworkspace: acme\n{key}\n---\nthe body\n"
    with pytest.raises(InvalidInput) as caught:
        parse_file(text)
    assert caught.value.field == "frontmatter"
    assert "empty name" in caught.value.message
