"""Keyword search of the journal through the public interfaces, on both backends:
``Episodic.search_journal``, ``episodic journal`` and ``GET /v1/journal``.

The events are what a crew's journal holds: an output chunk and an info-level keeper
decision (both refused by admission: in the journal, never memories), an escalation
(admitted), a year-old chunk compaction moves to the archive, and another workspace's
event with the same words. Also: forget takes the text out of the search index, a
database made before migration 6 is searchable once opened, and ``doctor --deep``
notices the journal's index out of step.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from conftest import raw_execute, raw_rows
from crash_support import doctor_deep
from episodic import Episodic, Settings
from episodic.cli import app
from episodic.embed.fake import FakeEmbedder
from episodic.errors import InvalidInput
from episodic.http import asgi
from episodic.store import open_store
from servers import serve

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
WORD = "frobnicate"  # every acme event (and orbit's) holds it
runner = CliRunner()


def journal_events() -> list[dict[str, Any]]:
    def at(delta: timedelta) -> str:
        return (NOW - delta).isoformat()

    return [
        {
            "id": "chunk-1",
            "workspace": "acme",
            "agent": "builder",
            "crew": "ops",
            "type": "exec.output_chunk",
            "summary": f"cargo build output part 7 for {WORD}",
            "payload": {"text": "error[E0599]: no method named quuxify found"},
            "ts": at(timedelta(hours=2)),
        },
        {
            "id": "decision-1",
            "workspace": "acme",
            "agent": "keeper",
            "crew": "ops",
            "type": "keeper.decision",
            "severity": "info",
            "summary": f"allowed the {WORD} migration on staging",
            "ts": at(timedelta(hours=1)),
        },
        {
            "id": "escalation-1",
            "workspace": "acme",
            "agent": "deployer",
            "crew": "sec",
            "type": "peer.escalation",
            "severity": "warn",
            "summary": f"{WORD} rollout blocked by the security review",
            "ts": at(timedelta(minutes=30)),
        },
        {
            "id": "old-chunk",
            "workspace": "acme",
            "agent": "builder",
            "crew": "ops",
            "type": "exec.output_chunk",
            "summary": f"{WORD} build log from last year, linker gave up",
            "ts": at(timedelta(days=400)),
        },
        {
            "id": "orbit-1",
            "workspace": "orbit",
            "agent": "builder",
            "crew": "ops",
            "type": "exec.output_chunk",
            "summary": f"orbit's own {WORD} secret, quuxify E0599 too",
            "ts": at(timedelta(hours=3)),
        },
    ]


@pytest.fixture
def mem(db_url: str) -> Iterator[Episodic]:
    m = Episodic(
        store=open_store(db_url),
        embedder=FakeEmbedder(dim=64),
        settings=Settings(),
        clock=lambda: NOW,
    )
    report = m.ingest(journal_events())
    assert report.ok and report.stored == 5
    assert m.store.get_memories("acme", ["chunk-1", "decision-1"]) == []  # not admitted
    [job] = m.compact(workspace="acme")
    assert job.ok and job.detail["archived_events"] == 1  # old-chunk
    yield m
    m.close()


def ids(hits: list[Any]) -> list[str]:
    return [h.id for h in hits]


# -- the Python API ---------------------------------------------------------------------------
def test_what_admission_refused_is_found_by_its_summary_and_its_payload(mem: Episodic) -> None:
    [by_payload] = mem.search_journal("E0599 quuxify", workspace="acme")
    assert (by_payload.id, by_payload.type, by_payload.archived) == (
        "chunk-1",
        "exec.output_chunk",
        False,
    )
    assert by_payload.agent_id == "builder" and by_payload.severity == "info"
    assert ids(mem.search_journal("cargo build", workspace="acme"))[0] == "chunk-1"
    assert ids(mem.search_journal("staging migration", workspace="acme")) == ["decision-1"]
    # Recall knows memories only: neither event is one.
    recalled = mem.recall("E0599 quuxify staging migration", workspace="acme", mark=False)
    assert not {h.id for h in recalled.hits} & {"chunk-1", "decision-1"}


def test_every_match_is_found_best_first_archived_ones_marked(mem: Episodic) -> None:
    hits = mem.search_journal(WORD, workspace="acme")
    assert set(ids(hits)) == {"chunk-1", "decision-1", "escalation-1", "old-chunk"}
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    archived = {h.id for h in hits if h.archived}
    assert archived == {"old-chunk"}
    assert mem.archived_events("acme", ["old-chunk"])  # it really is in the archive
    [old] = mem.search_journal("linker gave up", workspace="acme")
    assert old.id == "old-chunk" and old.archived and old.ts == NOW - timedelta(days=400)
    assert [h["archived"] for h in (old.to_json(),)] == [True]


def test_type_since_and_k(mem: Episodic) -> None:
    chunks = mem.search_journal(WORD, workspace="acme", types="exec.output_chunk")
    assert set(ids(chunks)) == {"chunk-1", "old-chunk"}
    both = mem.search_journal(
        WORD, workspace="acme", types=["exec.output_chunk", "keeper.decision"]
    )
    assert set(ids(both)) == {"chunk-1", "old-chunk", "decision-1"}
    since = (NOW - timedelta(minutes=90)).isoformat()
    assert set(ids(mem.search_journal(WORD, workspace="acme", since=since))) == {
        "decision-1",
        "escalation-1",
    }
    recent = mem.search_journal(WORD, workspace="acme", since=NOW - timedelta(hours=3))
    assert "old-chunk" not in ids(recent) and len(recent) == 3
    assert len(mem.search_journal(WORD, workspace="acme", k=2)) == 2


def test_another_workspace_is_never_found(mem: Episodic) -> None:
    for query in (WORD, "E0599 quuxify", "orbit secret"):
        for hit in mem.search_journal(query, workspace="acme", k=100):
            assert hit.workspace_id == "acme" and hit.id != "orbit-1"
    assert ids(mem.search_journal("orbit secret", workspace="orbit")) == ["orbit-1"]


def test_scopes(mem: Episodic) -> None:
    def seen(**kwargs: Any) -> set[str]:
        return set(ids(mem.search_journal(WORD, workspace="acme", **kwargs)))

    assert seen(agent="builder") == {"chunk-1", "old-chunk"}
    assert seen(agent="builder", scope="own") == {"chunk-1", "old-chunk"}
    assert seen(crew="sec") == {"escalation-1"}
    assert seen(agent="deployer", crew="ops", scope="crew_shared") == {
        "escalation-1",
        "chunk-1",
        "decision-1",
        "old-chunk",
    }


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({"workspace": ""}, "workspace"),
        ({"k": 0}, "k"),
        ({"k": 101}, "k"),
        ({"k": True}, "k"),
        ({"since": "last tuesday"}, "since"),
        ({"since": 17}, "since"),
        ({"types": [""]}, "type"),
        ({"types": []}, "type"),
        ({"agent": " "}, "agent"),
        ({"scope": "own"}, "agent"),
        ({"scope": "crew_shared", "agent": "a"}, "crew"),
        ({"scope": "everyone"}, "scope"),
    ],
)
def test_bad_input_names_the_field(mem: Episodic, kwargs: dict[str, Any], field: str) -> None:
    args: dict[str, Any] = {"query": WORD, "workspace": "acme", **kwargs}
    query = args.pop("query")
    with pytest.raises(InvalidInput) as info:
        mem.search_journal(query, **args)
    assert info.value.field == field


def test_text_without_a_searchable_word_finds_nothing(mem: Episodic) -> None:
    assert mem.search_journal('"* ( NEAR - :', workspace="acme") == []


# -- forget -------------------------------------------------------------------------------------
def journal_terms(url: str) -> set[str]:
    """The journal index's vocabulary: FTS5's terms, or every lexeme of both tsv columns."""
    if url.startswith("sqlite:///"):
        import sqlite3

        con = sqlite3.connect(url.removeprefix("sqlite:///"))
        con.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, journal_fts, 'row')")
        terms = {str(r[0]) for r in con.execute("SELECT term FROM temp.v")}
        con.close()
        return terms
    both = "SELECT tsv FROM events UNION ALL SELECT tsv FROM events_archive"
    sql = f"SELECT word FROM ts_stat('{both}')"
    return {str(r[0]) for r in raw_rows(url, sql)}


def test_forget_leaves_no_forgotten_text_findable(mem: Episodic) -> None:
    url = mem.store.url
    # Words only the builder's events hold (orbit's event shares E0599 and quuxify).
    only_builders = ("cargo", "linker")
    assert {t for t in journal_terms(url) if t.startswith(only_builders)}
    counts = mem.forget(workspace="acme", agent="builder")
    assert counts.events == 1 and counts.archived == 1  # chunk-1, and old-chunk archived
    for query in ("E0599 quuxify", "cargo build", "linker gave up", WORD):
        found = ids(mem.search_journal(query, workspace="acme"))
        assert not {"chunk-1", "old-chunk"} & set(found), query
    assert set(ids(mem.search_journal(WORD, workspace="acme"))) == {"decision-1", "escalation-1"}
    terms = journal_terms(url)
    assert not {t for t in terms if t.startswith(only_builders)}
    # Orbit's event with the same words stays.
    assert ids(mem.search_journal("E0599 quuxify", workspace="orbit")) == ["orbit-1"]


# -- the CLI ------------------------------------------------------------------------------------
def cli(url: str, *args: str) -> Any:
    # Wide enough that the table does not fold its cells.
    env = {"EPISODIC_EMBEDDER": "none", "COLUMNS": "200"}
    return runner.invoke(app, ["--db", url, "journal", *args], env=env)


def test_cli_lists_events_as_a_table_and_as_json(mem: Episodic) -> None:
    url = mem.store.url
    result = cli(url, WORD, "--workspace", "acme", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert {r["id"] for r in rows} == {"chunk-1", "decision-1", "escalation-1", "old-chunk"}
    for row in rows:
        assert {"id", "ts", "type", "severity", "agent", "summary", "archived"} <= set(row)
    assert {r["id"]: r["archived"] for r in rows}["old-chunk"] is True
    narrowed = cli(
        url,
        WORD,
        "-w",
        "acme",
        "--type",
        "exec.output_chunk",
        "--type",
        "keeper.decision",
        "--since",
        (NOW - timedelta(hours=3)).isoformat(),
        "-k",
        "5",
        "--json",
    )
    assert narrowed.exit_code == 0, narrowed.output
    assert [r["id"] for r in json.loads(narrowed.stdout)] in (
        ["decision-1", "chunk-1"],
        ["chunk-1", "decision-1"],
    )
    table = cli(url, "E0599", "--workspace", "acme")
    assert table.exit_code == 0, table.output
    assert "1 journal event" in table.stdout and "chunk-1" in table.stdout
    assert "exec.output_chunk" in table.stdout and "builder" in table.stdout
    archived = cli(url, "linker", "--workspace", "acme")
    assert "(archived)" in archived.stdout
    assert "no journal events match" in cli(url, "absentword", "-w", "acme").stdout


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["-k", "0"], "k"),
        (["-k", "500"], "k"),
        (["--since", "soon"], "since"),
        (["--type", " "], "type"),
    ],
)
def test_cli_bad_input_names_the_field(mem: Episodic, args: list[str], field: str) -> None:
    result = cli(mem.store.url, WORD, "--workspace", "acme", *args)
    assert result.exit_code == 2
    assert f"error: {field}:" in result.stderr


def test_cli_help_has_an_example() -> None:
    result = runner.invoke(app, ["journal", "--help"])
    assert result.exit_code == 0 and "Example: episodic journal" in result.stdout


# -- HTTP ---------------------------------------------------------------------------------------
def test_http_search_is_bound_to_the_key(mem: Episodic) -> None:
    keys = {
        "admin": mem.create_key("acme", role="admin")[1],
        "builder": mem.create_key("acme", role="agent", agent="builder")[1],
        "lead": mem.create_key("acme", role="lead", agent="keeper", crew="ops")[1],
        "orbit": mem.create_key("orbit", role="admin")[1],
    }

    with serve(asgi(mem)) as base:

        def get(who: str, **params: Any) -> httpx.Response:
            headers = {"Authorization": f"Bearer {keys[who]}"}
            return httpx.get(f"{base}/v1/journal", params=params, headers=headers, timeout=30)

        def seen(who: str, **params: Any) -> set[str]:
            r = get(who, q=WORD, **params)
            assert r.status_code == 200, r.text
            return {e["id"] for e in r.json()["events"]}

        everything = {"chunk-1", "decision-1", "escalation-1", "old-chunk"}
        assert seen("admin") == everything
        assert seen("admin", agent="keeper") == {"decision-1"}
        assert seen("builder") == {"chunk-1", "old-chunk"}
        assert seen("lead") == {"chunk-1", "decision-1", "old-chunk"}  # its crew's, not sec's
        assert seen("orbit") == {"orbit-1"}
        assert get("orbit", q=WORD, workspace="acme").status_code == 403
        assert get("builder", q=WORD, agent="keeper").status_code == 403
        assert get("lead", q=WORD, crew="sec").status_code == 403

        r = get("admin", q=WORD, type=["exec.output_chunk", "keeper.decision"], k=2)
        body = r.json()["events"]
        assert r.status_code == 200 and len(body) == 2
        assert {e["type"] for e in body} <= {"exec.output_chunk", "keeper.decision"}
        old = get("admin", q="linker gave up").json()["events"]
        assert [(e["id"], e["archived"]) for e in old] == [("old-chunk", True)]
        assert set(old[0]) >= {"id", "ts", "type", "severity", "agent", "summary", "score"}
        since = (NOW - timedelta(minutes=90)).isoformat()
        assert seen("admin", since=since) == {"decision-1", "escalation-1"}

        for params, field in (
            ({"q": WORD, "k": 0}, "k"),
            ({"q": WORD, "k": 101}, "k"),
            ({}, "q"),
            ({"q": "   "}, "q"),
            ({"q": WORD, "since": "tomorrow-ish"}, "since"),
        ):
            r = get("admin", **params)
            assert r.status_code == 422, (params, r.text)
            assert r.json()["error"]["field"] == field, (params, r.text)
        assert httpx.get(f"{base}/v1/journal", params={"q": WORD}).status_code == 401


# -- migration 6 on a database made before it ---------------------------------------------------
def test_a_v5_database_is_searchable_once_migrated(
    empty_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from episodic.store import migrations
    from episodic.store.postgres import connection as pg_connection

    # Steps 1-5, and the validity and reverted-supersession columns today's writer fills
    # in (steps 10 and 14 touch nothing the journal search steps do).
    v5 = tuple(s for s in migrations.MIGRATIONS if s[0] <= 5 or s[0] in (10, 14))
    monkeypatch.setattr(migrations, "MIGRATIONS", v5)
    monkeypatch.setattr(pg_connection, "MIGRATIONS", v5)
    with Episodic(
        store=open_store(empty_url), embedder=None, settings=Settings(), clock=lambda: NOW
    ) as old:
        assert old.store.schema_version() == 14  # the highest step applied
        assert old.ingest(journal_events()).stored == 5
        assert old.compact(workspace="acme")[0].detail["archived_events"] == 1
    monkeypatch.undo()

    with Episodic(store=open_store(empty_url), embedder=None, settings=Settings()) as new:
        assert new.store.schema_version() == migrations.LATEST_VERSION >= 6
        hits = new.search_journal(WORD, workspace="acme")
        assert {(h.id, h.archived) for h in hits} == {
            ("chunk-1", False),
            ("decision-1", False),
            ("escalation-1", False),
            ("old-chunk", True),
        }
        assert ids(new.search_journal("E0599", workspace="acme")) == ["chunk-1"]
    code, report = doctor_deep(empty_url)
    [check] = [c for c in report["checks"] if c["name"] == "journal.mirror"]
    assert check["status"] == "ok" and code == 0, report


# -- doctor --deep ------------------------------------------------------------------------------
def test_doctor_deep_notices_the_journal_index_out_of_step(mem: Episodic) -> None:
    url = mem.store.url
    mem.close()

    def journal_check() -> dict[str, Any]:
        code, report = doctor_deep(url)
        [check] = [c for c in report["checks"] if c["name"] == "journal.mirror"]
        return {"code": code, **check}

    assert journal_check()["status"] == "ok"
    if url.startswith("sqlite:///"):
        # A row written while the trigger was gone: missing from the index.
        raw_execute(url, "DROP TRIGGER events_journal_fts_ai")
        raw_execute(
            url,
            "INSERT INTO events (id, workspace_id, ts, type, severity, admitted, created_at) "
            "VALUES ('ghost', 'acme', '2026-11-21T00:00:00.000000Z', 'note', 'info', 0, "
            "'2026-11-21T00:00:00.000000Z')",
        )
    else:
        raw_execute(url, "DROP INDEX events_tsv")
    check = journal_check()
    assert check["status"] == "error" and check["count"] == 1 and check["code"] == 1
    assert check["fix"]
    if url.startswith("sqlite:///"):
        assert check["detail"] == "1 journal rows missing from the journal's keyword index"
    else:
        assert check["detail"] == "1 events_tsv GIN index missing"
