"""Forgetting: after ``forget``, nothing of the forgotten data can be recalled (any policy,
either leg), exported or found in any table, and everything else is untouched. On both
backends."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import raw_execute, raw_rows, sql_text
from episodic import POLICIES, Episodic, Settings
from episodic.cli import app
from episodic.embed.cache import content_hash
from episodic.embed.fake import FakeEmbedder
from episodic.model import ScopeFilter
from episodic.store import open_store
from episodic.store.base import Relation

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
MARK = "zorblax"  # a word only the forgotten data holds
SHARED = "nightly batch window moved to 2am"


def journal(i: str, ws: str, agent: str, summary: str, days: float = 1.0) -> dict[str, Any]:
    return {
        "id": i,
        "workspace": ws,
        "agent": agent,
        "crew": "ops",
        "type": "peer.escalation",
        "summary": summary,
        "ts": (NOW - timedelta(days=days)).isoformat(),
    }


@pytest.fixture
def fake() -> FakeEmbedder:
    return FakeEmbedder(dim=256)


@pytest.fixture
def db(db_url: str) -> str:
    return db_url


@pytest.fixture
def mem(db: str, fake: FakeEmbedder) -> Iterator[Episodic]:
    m = Episodic(store=open_store(db), embedder=fake, settings=Settings(), clock=lambda: NOW)
    yield m
    m.close()


def seed(mem: Episodic, tmp_path: Path) -> None:
    mem.ingest(
        [
            journal("g1", "acme", "ghost", f"checkout {MARK} outage in the payment pod"),
            journal("g2", "acme", "ghost", f"{MARK} rollback of the checkout cache"),
            journal("k1", "acme", "keeper", "checkout outage reviewed by keeper"),
            journal("k2", "acme", "keeper", "keeper approved the checkout rollback"),
            journal("g3", "acme", "ghost", SHARED),
            # Another workspace holds the very same text as g3: its cached embedding stays.
            journal("o1", "orbit", "ghost", SHARED),
        ]
    )
    chat = [
        ("ghost", "Ghost", f"My card {MARK} was charged twice for the order."),
        ("helper", "Helper", "I see the double charge on the order."),
        ("ghost", "Ghost", "Please refund one of the two charges."),
        ("helper", "Helper", "Refund issued for the second charge."),
    ]
    for n, (agent, name, text) in enumerate(chat):
        mem.add_message(
            text,
            workspace="acme",
            conversation="chat-1",
            role="user" if agent == "ghost" else "assistant",
            agent=agent,
            name=name,
            ts=NOW - timedelta(hours=5) + timedelta(minutes=n),
        )
    mem.index_once()
    assert mem.segment(flush=True).episodes >= 1
    mem.index_once()
    mem.store.add_relations(
        "acme", [Relation("g1", "k1", "similar", 0.9), Relation("k2", "g2", "similar", 0.85)]
    )
    # Compaction keeps aged journal rows in the archive under the event's id.
    raw_execute(
        mem.store.url,
        "INSERT INTO events_archive (id, workspace_id, ts, type, severity, summary, payload, "
        "archived_at, agent_id) VALUES ('g1', 'acme', "
        f"{sql_text((NOW - timedelta(days=300)).isoformat())}, 'peer.escalation', 'warn', "
        f"{sql_text(f'archived {MARK} row')}, '{{}}', {sql_text(NOW.isoformat())}, 'ghost')",
    )
    mem.export_markdown(tmp_path / "before")
    assert mem.import_markdown(tmp_path / "before").errors == []
    # Recalls record pending reviews (seed 003): the ghost's own query, and the keeper's
    # operator recall that returned the ghost's memories.
    mem.recall(f"my {MARK} card", workspace="acme", agent="ghost")
    keeper = mem.recall("checkout outage rollback", workspace="acme", k=10)
    assert {h.id for h in keeper.hits} & {"g1", "g2"}


def every_text_row(url: str) -> list[tuple[str, str]]:
    """(table, cell) for every text cell of every table: on SQLite the FTS shadow tables
    included, on PostgreSQL every text, bytea and tsvector column (``memories.tsv``)."""
    found = []
    if is_sqlite(url):
        tables = [
            r[0]
            for r in raw_rows(url, "SELECT name FROM sqlite_master WHERE type = 'table'")
            if r[0] != "memories_fts"
        ]
        selects = {table: f'SELECT * FROM "{table}"' for table in tables}
    else:
        columns: dict[str, list[str]] = {}
        for table, column, kind in raw_rows(
            url,
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = 'public' "
            "AND data_type IN ('text', 'character varying', 'bytea', 'tsvector', 'jsonb')",
        ):
            cast = "" if kind == "bytea" else "::text"
            columns.setdefault(table, []).append(f'"{column}"{cast}')
        assert '"tsv"::text' in columns["memories"]  # the search index is a column here
        selects = {
            table: f'SELECT {", ".join(cols)} FROM "{table}"' for table, cols in columns.items()
        }
    for table, sql in selects.items():
        for row in raw_rows(url, sql):
            for cell in row:
                if isinstance(cell, str | bytes | memoryview):
                    text = cell if isinstance(cell, str) else bytes(cell).decode("latin-1")
                    found.append((table, text))
    return found


def search_terms(url: str) -> set[str]:
    """The full-text index's vocabulary: FTS5's terms, or every lexeme of the tsvectors."""
    if is_sqlite(url):
        import sqlite3

        con = sqlite3.connect(url.removeprefix("sqlite:///"))
        con.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, memories_fts, 'row')")
        terms = {r[0] for r in con.execute("SELECT term FROM temp.vocab")}
        con.close()
        return terms
    return {r[0] for r in raw_rows(url, "SELECT word FROM ts_stat('SELECT tsv FROM memories')")}


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite:///")


def test_forget_an_agent_leaves_nothing_searchable_or_exportable(
    mem: Episodic, fake: FakeEmbedder, tmp_path: Path
) -> None:
    seed(mem, tmp_path)
    url = mem.store.url
    ghost_ids = {m.id for m in mem.list_memories(ScopeFilter("acme", agent_id="ghost")).items}
    derived = {
        m.id
        for m in mem.list_memories(ScopeFilter("acme"), limit=200).items
        if m.type in ("episode", "entry", "learning") and set(m.source_event_ids) & ghost_ids
    }
    assert len(ghost_ids) >= 4 and derived  # journal rows, messages; episode and entries
    assert MARK in search_terms(url)
    assert any(MARK in text for t, text in every_text_row(url) if t == "memories")
    if is_sqlite(url):
        assert MARK.encode() in _file_bytes(url)
    kept_before = {m.id for m in mem.list_memories(ScopeFilter("acme", agent_id="keeper")).items}
    helper_before = {m.id for m in mem.list_memories(ScopeFilter("acme", agent_id="helper")).items}
    cache_before = _count(url, "SELECT count(*) FROM embedding_cache")

    reviews_before = _count(url, "SELECT count(*) FROM memory_reviews")
    assert reviews_before >= 2
    counts = mem.forget(workspace="acme", agent="ghost")
    assert counts.extensions >= 2  # both reviews above

    assert counts.memories >= len(ghost_ids | derived) - 1
    assert counts.vectors >= len(ghost_ids) and counts.relations >= 2 and counts.archived == 1
    assert counts.import_files >= len(ghost_ids) and counts.embedding_cache > 0
    gone = ghost_ids | derived
    # Recall, every policy: nothing forgotten comes back, nothing with the word in it.
    for policy in POLICIES:
        for query in (MARK, f"checkout {MARK} outage", "card charged twice refund"):
            hits = mem.recall(query, workspace="acme", policy=policy, k=50, mark=False).hits
            assert not {h.id for h in hits} & gone, policy
            assert all(MARK not in h.memory.content for h in hits), policy
    # Each leg on its own, dense with the very vector of a forgotten text.
    flt = ScopeFilter("acme")
    assert not {c.memory_id for c in mem.store.search_sparse(flt, MARK, 50)}
    qvec = fake.embed_batch([f"checkout {MARK} outage in the payment pod"])[0]
    assert not {c.memory_id for c in mem.store.search_dense(flt, qvec, 50)} & gone
    # Export: no file of it.
    mem.export_markdown(tmp_path / "after", workspace="acme")
    exported = [p.read_text() for p in (tmp_path / "after").rglob("*") if p.is_file()]
    assert exported and not any(MARK in text for text in exported)
    # Every table (FTS shadow tables or the tsvector column included), the search
    # vocabulary and, on SQLite (secure_delete), the file itself. PostgreSQL keeps dead
    # tuples in its data files until a VACUUM (see docs/postgresql.md).
    assert not [(t, text[:80]) for t, text in every_text_row(url) if MARK in text]
    assert not {t for t in search_terms(url) if t.startswith(MARK[:5])}
    if is_sqlite(url):
        assert MARK.encode() not in _file_bytes(url)
    assert mem.recall("nightly batch window", workspace="orbit").hits[0].id == "o1"
    for sql in (
        "SELECT count(*) FROM memories WHERE workspace_id = 'acme' AND agent_id = 'ghost'",
        "SELECT count(*) FROM events WHERE workspace_id = 'acme' AND agent_id = 'ghost'",
        "SELECT count(*) FROM events_archive",
    ):
        assert _count(url, sql) == 0, sql
    for table, column in (
        ("memory_relations", "src"),
        ("memory_relations", "dst"),
        ("memory_vectors", "memory_id"),
        ("memory_sources", "memory_id"),
        ("memory_sources", "event_id"),
        ("import_files", "memory_id"),
    ):
        ids = ", ".join(sql_text(i) for i in gone)
        assert _count(url, f"SELECT count(*) FROM {table} WHERE {column} IN ({ids})") == 0
    cached = "SELECT count(*) FROM embedding_cache WHERE content_hash = "
    assert (
        _count(url, cached + sql_text(content_hash(f"{MARK} rollback of the checkout cache"))) == 0
    )
    assert _count(url, cached + sql_text(content_hash(SHARED))) == 1
    assert _count(url, "SELECT count(*) FROM embedding_cache") < cache_before
    # Everyone else is untouched; the helper's messages lose only the episode's keys.
    assert {m.id for m in mem.list_memories(ScopeFilter("acme", agent_id="keeper")).items} == (
        kept_before
    )
    helper = mem.list_memories(ScopeFilter("acme", agent_id="helper")).items
    assert {m.id for m in helper} == helper_before
    assert all(MARK not in m.keys for m in helper)
    assert all(m.keys.startswith("Helper assistant") for m in helper if m.type == "message")


def test_forget_by_age_keeps_what_is_newer(mem: Episodic) -> None:
    mem.ingest(
        [
            journal("old", "acme", "a", "ancient checkout outage", days=400),
            journal("new", "acme", "a", "fresh checkout outage", days=3),
        ]
    )
    mem.index_once()
    counts = mem.forget(workspace="acme", older_than_days=365)
    assert (counts.memories, counts.events, counts.vectors) == (1, 1, 1)
    assert [h.id for h in mem.recall("checkout outage", workspace="acme").hits] == ["new"]


def test_forget_one_memory_takes_what_was_derived_from_it(mem: Episodic, tmp_path: Path) -> None:
    seed(mem, tmp_path)
    message = next(
        m
        for m in mem.list_memories(ScopeFilter("acme", conversation_id="chat-1")).items
        if m.type == "message" and MARK in m.content
    )
    before = mem.list_memories(ScopeFilter("acme", conversation_id="chat-1"), limit=100).items
    citing = {m.id for m in before if message.id in m.source_event_ids and m.id != message.id}
    assert citing  # its episode at least
    counts = mem.forget(workspace="acme", memory=message.id)
    left = mem.list_memories(ScopeFilter("acme", conversation_id="chat-1"), limit=100).items
    assert message.id not in {m.id for m in left}
    # The episode summarising it and the entries quoting it go too; other messages stay.
    assert not citing & {m.id for m in left}
    assert counts.memories == 1 + len(citing)
    assert len([m for m in left if m.type == "message"]) == 3


def test_forget_refuses_bad_input(mem: Episodic) -> None:
    from episodic.errors import InvalidInput

    for kwargs, field in (
        ({"workspace": ""}, "workspace"),
        ({"workspace": "acme", "older_than_days": -1}, "older_than_days"),
        ({"workspace": "acme", "agent": " "}, "agent"),
        # Naming nothing is not "everything": the whole workspace needs all=True.
        ({"workspace": "acme"}, "all"),
        ({"workspace": "acme", "all": False}, "all"),
        ({"workspace": "acme", "agent": "ghost", "all": True}, "all"),
    ):
        with pytest.raises(InvalidInput) as info:
            mem.forget(**kwargs)
        assert info.value.field == field


def test_cli_forget_asks_before_a_whole_workspace(
    db: str, mem: Episodic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EPISODIC_EMBEDDER", "none")
    mem.ingest([journal("w1", "acme", "a", "checkout outage")])
    runner = CliRunner()
    result = runner.invoke(app, ["--db", db, "forget", "--workspace", "acme"], input="n\n")
    assert result.exit_code == 1 and "nothing forgotten" in result.stderr
    result = runner.invoke(app, ["--db", db, "forget", "--workspace", "acme", "--yes", "--json"])
    assert result.exit_code == 0, result.output
    assert '"memories": 1' in result.stdout


def _count(url: str, sql: str) -> int:
    return int(raw_rows(url, sql)[0][0])


def _file_bytes(url: str) -> bytes:
    """The SQLite file and its write-ahead log, as stored on disk."""
    path = Path(url.removeprefix("sqlite:///"))
    wal = path.with_name(path.name + "-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")
