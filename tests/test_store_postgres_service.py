"""PostgresStore's service methods (keys, listing, restore, import state, forget) beyond
the shared contract: the same calls on SqliteStore and PostgresStore give the same
answers and leave the same rows, and what only a server shared by several processes
needs (concurrent restores, a forget racing a writer).

Data is written with ``restore`` (a method of this part) and plain SQL, so these tests
need no other part of PostgresStore."""

from __future__ import annotations

import itertools
import sqlite3
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest

from episodic.embed.cache import content_hash
from episodic.errors import InvalidInput, NotFound
from episodic.model import Event, Memory, MemoryStatus, Role, Scope, ScopeFilter
from episodic.store.base import (
    ForgetCounts,
    ForgetSpec,
    HealthSnapshot,
    ImportedFile,
    ReviewRequest,
)
from episodic.store.postgres import PostgresStore
from episodic.store.sqlite import SqliteStore, ts_text
from episodic.tenancy import ApiKey, hash_secret, new_secret

T0 = datetime(2026, 6, 1, 12, 0, 0, 654321, tzinfo=UTC)
OLD = T0 - timedelta(days=400)
MARK = "zorblax"  # a word only the forgotten data (and one other workspace) holds
SHARED = f"{MARK} checkout outage in the payment pod"


class Backend:
    """A store and plain SQL on the same database, bypassing the store."""

    def __init__(self, store: SqliteStore | PostgresStore, url: str) -> None:
        self.store = store
        self.url = url

    @property
    def is_pg(self) -> bool:
        return isinstance(self.store, PostgresStore)

    def sql(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        if self.is_pg:
            with psycopg.connect(self.url) as pg:
                cur = pg.execute(sql, params or None)
                return [tuple(r) for r in cur.fetchall()] if cur.description else []
        conn = sqlite3.connect(self.url.removeprefix("sqlite:///"))
        try:
            with conn:
                rows = conn.execute(sql.replace("%s", "?"), params).fetchall()
            return [tuple(r) for r in rows]
        finally:
            conn.close()

    def put_vector(self, memory_id: str, i: int) -> None:
        v = np.zeros(4, dtype=np.float32)
        v[i % 4] = 1.0
        if isinstance(self.store, SqliteStore):
            self.store.put_vectors("m", 4, [(memory_id, v)])
            return
        self.sql(
            "INSERT INTO memory_vectors (memory_id, workspace_id, vector, dim, model, indexed_at) "
            "SELECT id, workspace_id, %s::vector, 4, 'm', %s FROM memories WHERE id = %s",
            (str(v.tolist()), ts_text(T0), memory_id),
        )


@pytest.fixture
def pg(pg_url: str) -> Iterator[Backend]:
    s = PostgresStore(pg_url)
    yield Backend(s, pg_url)
    s.close()


@pytest.fixture
def lite(tmp_path: Path) -> Iterator[Backend]:
    url = f"sqlite:///{tmp_path}/memory.db"
    s = SqliteStore(url)
    yield Backend(s, url)
    s.close()


def ev(id: str, ws: str = "acme", *, ts: datetime = T0, **fields: Any) -> Event:
    values: dict[str, Any] = {"type": "note", "summary": f"event {id}", **fields}
    return Event(id=id, workspace=ws, ts=ts, **values)


def mem(e: Event, **fields: Any) -> Memory:
    values: dict[str, Any] = {
        "id": e.id,
        "workspace": e.workspace,
        "ts": e.ts,
        "type": e.type,
        "content": e.summary,
        "agent": e.agent,
        "crew": e.crew,
        "resource": e.resource,
        "conversation": e.conversation,
        "source_event_ids": (e.id,),
        "created_at": T0,
    }
    values.update(fields)
    return Memory(**values)


# -- listing -------------------------------------------------------------------------
def seed_grid(b: Backend) -> None:
    for n, (agent, crew, base, resource, kind) in enumerate(
        itertools.product(
            ("a1", "a2", None), ("c1", "c2", None), (0.5, 0.7), ("r1", None), ("note", "entry")
        )
    ):
        e = ev(
            f"m{n:02d}",
            agent=agent,
            crew=crew,
            resource=resource,
            type=kind,
            ts=T0 + timedelta(minutes=n % 7),
        )
        status = (MemoryStatus.ACTIVE, MemoryStatus.RETIRED, MemoryStatus.COMPACTED)[n % 3]
        b.store.restore(mem(e, base_importance=base, status=status), [(e, None)])
    b.store.restore(mem(ev("x1", "orbit")), [(ev("x1", "orbit"), None)])


LIST_FILTERS = [
    ScopeFilter("acme"),
    ScopeFilter("acme", scope=Scope.OWN, agent_id="a1"),
    ScopeFilter("acme", scope=Scope.CREW_SHARED, crew_id="c1"),
    ScopeFilter("acme", scope=Scope.CREW_SHARED, crew_id="c1", agent_id="a2"),
    ScopeFilter("acme", agent_id="a2", crew_id="c2"),
    ScopeFilter("acme", resource_id="r1", types=("entry",)),
    ScopeFilter("acme", types=()),
    ScopeFilter("orbit"),
    ScopeFilter("nobody"),
]


@pytest.mark.parametrize("flt", LIST_FILTERS)
def test_list_memories_pages_as_sqlite_does(lite: Backend, pg: Backend, flt: ScopeFilter) -> None:
    for b in (lite, pg):
        seed_grid(b)
    for statuses in (None, [MemoryStatus.ACTIVE], [MemoryStatus.RETIRED, "compacted"], []):
        pages: list[list[list[Memory]]] = []
        for b in (lite, pg):
            walked: list[list[Memory]] = []
            before = None
            while True:
                page = b.store.list_memories(flt, 7, statuses=statuses, before=before)  # type: ignore[arg-type]
                walked.append(page)
                if len(page) < 7:
                    break
                before = (page[-1].ts, page[-1].id)
            pages.append(walked)
        assert pages[0] == pages[1], statuses
    assert pg.store.list_memories(ScopeFilter("acme"), 0) == []
    with pytest.raises(InvalidInput) as info:
        pg.store.list_memories(ScopeFilter("acme", scope=Scope.OWN), 0)
    assert info.value.field == "agent"


def test_set_status_returns_the_whole_memory_and_stays_in_its_workspace(pg: Backend) -> None:
    src, m = ev("s-src"), mem(ev("s1"), source_event_ids=("s-src", "s1"))
    pg.store.restore(m, [(src, None), (ev("s1"), None)])
    retired = pg.store.set_status("acme", "s1", MemoryStatus.RETIRED)
    assert retired == replace(m, status=MemoryStatus.RETIRED)
    with pytest.raises(NotFound):
        pg.store.set_status("orbit", "s1", MemoryStatus.ACTIVE)
    with pytest.raises(NotFound):
        pg.store.set_status("acme", "missing", MemoryStatus.ACTIVE)


# -- keys, snapshots, import state ---------------------------------------------------
def test_keys_snapshots_and_import_state_round_trip(lite: Backend, pg: Backend) -> None:
    answers = []
    for b in (lite, pg):
        s = b.store
        keys = []
        for n, ws in enumerate(("acme", "acme", "orbit")):
            key_id, secret = new_secret()
            key = ApiKey(key_id, ws, Role.AGENT, agent_id=f"a{n}", created_at=T0)
            s.add_api_key(key, hash_secret(secret))
            keys.append((key, secret))
        assert s.api_key_by_hash(hash_secret(keys[0][1])) == keys[0][0]
        revoked = s.revoke_api_key(keys[1][0].id, T0 + timedelta(hours=1))
        again = s.revoke_api_key(keys[1][0].id, T0 + timedelta(hours=2))
        assert revoked == again and again is not None
        assert again.revoked_at == T0 + timedelta(hours=1)
        assert s.revoke_api_key("k_missing", T0) is None
        assert [k.id for k in s.api_keys("acme")] == sorted(k.id for k, _ in keys[:2])
        assert len(s.api_keys()) == 3 and s.api_keys("nobody") == []
        for day, crew_id, score in ((1, None, 50.0), (2, None, 65.0), (2, "c1", 70.0)):
            s.put_health_snapshot(
                HealthSnapshot("acme", crew_id, date(2026, 3, day), 0.1, 0.2, 0.3, 0.4, 0.5, score)
            )
        files = [ImportedFile("a/x.md", 1, 10, "h1", "acme", "x"), ImportedFile("y.md", 2, 5, "h2")]
        s.save_import_state("/root", files)
        s.save_import_state("/root", [replace(files[0], size=11)], removed=["y.md", "zz.md"])
        answers.append(
            (
                s.health_snapshots("acme", None, 10),
                s.health_snapshots("acme", "c1", 10),
                s.health_snapshots("acme", None, 1),
                s.health_snapshots("acme", None, 0),
                s.import_state("/root"),
                s.import_state("/other"),
            )
        )
    assert answers[0] == answers[1]
    snaps, crew, newest, none, state, other = answers[1]
    assert [x.score for x in snaps] == [65.0, 50.0] and crew[0].crew_id == "c1"
    assert len(newest) == 1 and none == [] and other == {}
    assert state == {"a/x.md": ImportedFile("a/x.md", 1, 11, "h1", "acme", "x")}


# -- restore -------------------------------------------------------------------------
def test_restore_inserts_updates_and_drops_a_stale_vector(pg: Backend) -> None:
    s = pg.store
    src = ev("r-src", summary="the source", payload={"é": [1, 2.5]})
    m = mem(ev("r1", summary="first text"), source_event_ids=("r-src",), payload={"k": 1})
    result = s.restore(m, [(src, "ep-9")])
    assert (result.inserted, result.events_inserted) == (1, 1)
    assert s.events_with_episodes("acme", ["nope", "r-src", "r-src"]) == [(src, "ep-9")]
    assert s.events_with_episodes("orbit", ["r-src"]) == []
    assert s.restore(m, [(src, "ep-other")]).unchanged == 1  # stored events are kept as is
    assert s.events_with_episodes("acme", ["r-src"])[0][1] == "ep-9"
    pg.put_vector("r1", 0)
    assert s.restore(replace(m, importance=0.9)).updated == 1
    assert pg.sql("SELECT has_vector FROM memories WHERE id = 'r1'") == [(1,)]
    pg.sql(
        "INSERT INTO events (id, workspace_id, ts, type, severity, admitted, created_at) "
        "VALUES ('r-2', 'acme', %s, 'note', 'info', 1, %s)",
        (ts_text(T0), ts_text(T0)),
    )
    edited = replace(m, content="second text", source_event_ids=("r-2", "r-src"), keys="k")
    assert s.restore(edited).updated == 1
    assert s.list_memories(ScopeFilter("acme"), 10) == [edited]
    assert pg.sql("SELECT has_vector FROM memories WHERE id = 'r1'") == [(0,)]
    assert pg.sql("SELECT count(*) FROM memory_vectors") == [(0,)]
    assert pg.sql("SELECT count(*) FROM memories WHERE tsv @@ 'second'::tsquery") == [(1,)]
    with pytest.raises(InvalidInput) as info:
        s.restore(replace(m, workspace="orbit"))
    assert info.value.field == "id"
    with pytest.raises(InvalidInput) as info:
        s.restore(replace(m, source_event_ids=("missing",)))
    assert info.value.field == "source_event_ids"
    with pytest.raises(InvalidInput) as info:
        s.restore(mem(ev("r3")), [(ev("r3", "orbit"), None)])
    assert info.value.field == "events"
    # A refused restore leaves nothing behind, not even its events.
    with pytest.raises(InvalidInput):
        s.restore(mem(ev("r4"), source_event_ids=("r4", "missing")), [(ev("r4"), None)])
    assert s.events_with_episodes("acme", ["r4"]) == []
    assert s.list_memories(ScopeFilter("acme"), 10) == [edited]


def test_concurrent_restores_of_one_memory_insert_it_once(pg: Backend) -> None:
    e = ev("c1")
    versions = [mem(e, content=f"text {n % 2}") for n in range(16)]

    def one(m: Memory) -> tuple[int, int, int]:
        store = PostgresStore(pg.url, pool_max=1)
        try:
            r = store.restore(m, [(e, None)])
        finally:
            store.close()
        return r.inserted, r.updated, r.unchanged

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, versions))
    assert sum(r[0] for r in results) == 1
    assert sum(r[0] + r[1] + r[2] for r in results) == 16
    assert pg.sql("SELECT count(*) FROM memory_sources") == [(1,)]
    assert pg.sql("SELECT count(*) FROM events") == [(1,)]


# -- delete and forget ---------------------------------------------------------------
def test_delete_memories_keeps_events_and_other_workspaces(pg: Backend) -> None:
    for e in (ev("d1"), ev("d2"), ev("d3", "orbit")):
        pg.store.restore(mem(e), [(e, None)])
        pg.put_vector(e.id, 0)
    pg.sql(
        "INSERT INTO memory_relations (src, dst, relation, weight, created_at) "
        "VALUES ('d1', 'd2', 'similar', 0.5, 'x')"
    )
    assert pg.store.delete_memories("acme", ["d1", "d1", "d3", "nope"]) == 1
    assert pg.store.delete_memories("acme", []) == 0
    assert pg.sql("SELECT id FROM memories ORDER BY id") == [("d2",), ("d3",)]
    assert pg.sql("SELECT memory_id FROM memory_vectors ORDER BY 1") == [("d2",), ("d3",)]
    assert pg.sql("SELECT count(*) FROM memory_sources WHERE memory_id = 'd1'") == [(0,)]
    assert pg.sql("SELECT count(*) FROM memory_relations") == [(0,)]
    assert pg.sql("SELECT count(*) FROM events") == [(3,)]


def seed_world(b: Backend) -> None:
    """Journal rows, a conversation with its episode, derived entries, another workspace
    holding the same text; vectors, edges, archive, compaction, reviews, nudges, import
    records, cache entries and health snapshots pointing at them."""
    s = b.store
    j1 = ev("j1", agent="ghost", crew="ops", summary=SHARED, ts=OLD)
    j2 = ev("j2", agent="keeper", crew="ops", summary="keeper reviewed the outage")
    r1 = ev("r1", agent="keeper", resource="res1", summary="resource note")
    msg: dict[str, Any] = {"type": "message", "conversation": "chat"}
    m1 = ev("msg1", agent="ghost", summary=f"my {MARK} card", **msg)
    m2 = ev("msg2", agent="helper", summary="refund issued", ts=OLD, **msg)
    o1 = ev("o1", "orbit", agent="ghost", summary=SHARED)
    for e in (j1, j2, r1, o1):
        s.restore(mem(e), [(e, None)])
    s.restore(mem(m1, keys=f"Ghost user {MARK} card"), [(m1, "ep1")])
    s.restore(mem(m2, keys=f"Helper assistant {MARK} card"), [(m2, "ep1")])
    episode = ev("ep1", type="episode", conversation="chat", summary=f"{MARK} card refund")
    s.restore(mem(episode, source_event_ids=("msg1", "msg2")))
    s.restore(mem(ev("en1", type="entry", agent="keeper"), source_event_ids=("j1",)))
    s.restore(mem(ev("en2", type="entry", agent="keeper"), source_event_ids=("j2", "r1")))
    for n, memory_id in enumerate(("j1", "j2", "ep1", "o1", "msg2", "en1")):
        b.put_vector(memory_id, n)
    for src, dst in (("j1", "j2"), ("j2", "ep1"), ("r1", "j2"), ("en2", "en1")):
        b.sql(
            "INSERT INTO memory_relations (src, dst, relation, weight, created_at) "
            "VALUES (%s, %s, 'similar', 0.5, %s)",
            (src, dst, ts_text(T0)),
        )
    for archived_id, owner, ts in (
        ("old-g", "ghost", OLD),
        ("old-k", "keeper", OLD),
        ("j2", "keeper", T0),
    ):
        b.sql(
            "INSERT INTO events_archive (id, workspace_id, ts, type, severity, summary, payload, "
            "archived_at, agent_id) VALUES (%s, 'acme', %s, 'note', 'info', %s, '{}', %s, %s)",
            (archived_id, ts_text(ts), f"archived {archived_id}", ts_text(T0), owner),
        )
    b.sql(
        "INSERT INTO memory_compactions (memory_id, survivor_id, workspace_id, similarity, "
        "compacted_at) VALUES ('r1', 'j2', 'acme', 0.95, %s)",
        (ts_text(T0),),
    )
    reviews: list[tuple[str, str | None, str | None, tuple[str, ...], datetime]] = [
        ("ghost asks", "ghost", None, ("j2",), T0),
        ("keeper sees j1", "keeper", None, ("j1", "j2"), T0),
        ("keeper sees j2", "keeper", None, ("j2",), T0),
        ("in the chat", None, "chat", ("msg2",), T0),
        ("long ago", "keeper", None, ("r1",), OLD),
        ("orbit", "ghost", None, ("o1",), T0),
    ]
    for query, agent, conversation, ids, at in reviews:
        ws = "orbit" if query == "orbit" else "acme"
        s.add_review(
            ReviewRequest(ws, query, ids, at, agent_id=agent, conversation_id=conversation)
        )
    for nudged in ("ghost", "keeper"):
        assert s.claim_nudge("acme", nudged, "s1", 3, T0)
    s.claim_nudge("orbit", "ghost", "s1", 3, T0)
    s.save_import_state(
        "/md",
        [ImportedFile(f"{i}.md", 1, 1, "h", "acme", i) for i in ("j1", "j2", "ep1", "msg1")],
    )
    contents = [r[0] for r in b.sql("SELECT DISTINCT content FROM memories")] + ["never stored"]
    for text in contents:
        b.sql(
            "INSERT INTO embedding_cache (content_hash, model, dim, vector, created_at) "
            "VALUES (%s, 'm', 1, %s, %s)",
            (content_hash(text), b"\0\0\0\0", ts_text(T0)),
        )
    for ws, crew in (("acme", None), ("acme", "ops"), ("orbit", None)):
        s.put_health_snapshot(HealthSnapshot(ws, crew, date(2026, 3, 1), 1, 1, 1, 1, 1, 50.0))


TABLES = {
    "memories": "id, workspace_id, keys",
    "events": "id, episode_id",
    "memory_sources": "memory_id, event_id",
    "memory_vectors": "memory_id",
    "memory_relations": "src, dst",
    "events_archive": "id",
    "memory_compactions": "memory_id",
    "memory_reviews": "query",
    "memory_nudges": "workspace_id, agent_id",
    "import_files": "path",
    "embedding_cache": "content_hash",
    "memory_health_snapshots": "workspace_id, crew_id",
}


def dump(b: Backend) -> dict[str, list[tuple[Any, ...]]]:
    return {t: b.sql(f"SELECT {cols} FROM {t} ORDER BY {cols}") for t, cols in TABLES.items()}


FORGETS = [
    ForgetSpec("acme", agent_id="ghost"),
    ForgetSpec("acme", memory_id="ep1"),
    ForgetSpec("acme", memory_id="j2"),
    ForgetSpec("acme", conversation_id="chat"),
    ForgetSpec("acme", resource_id="res1"),
    ForgetSpec("acme", before=T0 - timedelta(days=30)),
    ForgetSpec("acme", agent_id="keeper", before=T0 - timedelta(days=30)),
    ForgetSpec("acme"),
    ForgetSpec("orbit"),
    ForgetSpec("nobody"),
]


@pytest.mark.parametrize("spec", FORGETS, ids=lambda s: repr(s)[10:])
def test_forget_removes_what_sqlite_removes(lite: Backend, pg: Backend, spec: ForgetSpec) -> None:
    counts: list[ForgetCounts] = []
    for b in (lite, pg):
        seed_world(b)
        counts.append(b.store.forget(spec, rekey=lambda e: f"rekeyed {e.id}"))
    assert counts[0] == counts[1]
    before, after = dump(lite), dump(pg)
    assert before == after
    if spec == FORGETS[0]:
        # j1 and msg1, the entry and the episode made of them; the helper's message stays.
        assert counts[1] == ForgetCounts(
            memories=4,
            events=2,
            vectors=3,
            relations=3,
            archived=1,
            embedding_cache=3,
            import_files=3,
            health_snapshots=0,
            extensions=3,
            rekeyed=1,
        )


def test_forget_leaves_no_text_anywhere(pg: Backend) -> None:
    seed_world(pg)
    pg.store.forget(ForgetSpec("acme", agent_id="ghost"), rekey=lambda e: "")
    found = []
    for (table,) in pg.sql(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
    ):
        for row in pg.sql(f'SELECT t::text FROM "{table}" t WHERE t::text LIKE %s', (f"%{MARK}%",)):
            found.append((table, row[0]))
    # Only the other workspace, which said the same thing, still holds the word.
    assert sorted(t for t, _ in found) == ["events", "memories"]
    assert all("orbit" in row for _, row in found)
    assert pg.sql("SELECT id FROM memories WHERE tsv @@ to_tsquery('english', %s)", (MARK,)) == [
        ("o1",)
    ]
    assert pg.sql(
        "SELECT count(*) FROM embedding_cache WHERE content_hash = %s", (content_hash(SHARED),)
    ) == [(1,)]


def test_forget_hashes_cache_keys_as_content_hash_does(pg: Backend) -> None:
    text = "naïve café — 日本語 🚀"
    e = ev("u1", summary=text)
    pg.store.restore(mem(e), [(e, None)])
    pg.sql(
        "INSERT INTO embedding_cache (content_hash, model, dim, vector, created_at) "
        "VALUES (%s, 'm', 1, %s, 'x')",
        (content_hash(text), b"\0\0\0\0"),
    )
    assert pg.store.forget(ForgetSpec("acme"), rekey=lambda e: "").embedding_cache == 1


def test_forget_waits_for_a_writer_and_takes_what_it_wrote(pg: Backend) -> None:
    """A memory derived from a forgotten event, written by a transaction still open when
    the forget starts, goes with the forget: the forget waits for it."""
    e = ev("w1", agent="ghost")
    pg.store.restore(mem(e), [(e, None)])
    stamp = ts_text(T0)
    with psycopg.connect(pg.url) as writer:
        writer.execute(
            "INSERT INTO memories (id, workspace_id, ts, type, severity, content, "
            "base_importance, importance, created_at, updated_at) "
            "VALUES ('late', 'acme', %s, 'entry', 'info', 'late entry', 0.5, 0.5, %s, %s)",
            (stamp, stamp, stamp),
        )
        writer.execute("INSERT INTO memory_sources (memory_id, event_id) VALUES ('late', 'w1')")
        done: list[ForgetCounts] = []
        worker = threading.Thread(
            target=lambda: done.append(
                pg.store.forget(ForgetSpec("acme", agent_id="ghost"), rekey=lambda e: "")
            )
        )
        worker.start()
        time.sleep(0.5)
        assert worker.is_alive() and not done  # waiting for the writer
        writer.commit()
        worker.join(10)
    assert done and done[0].memories == 2
    assert pg.sql("SELECT count(*) FROM memories") == [(0,)]


def test_forget_refuses_an_empty_workspace(pg: Backend) -> None:
    for ws in ("", "  "):
        with pytest.raises(InvalidInput) as info:
            pg.store.forget(ForgetSpec(ws), rekey=lambda e: "")
        assert info.value.field == "workspace"


def test_a_nul_character_matches_nothing_and_cannot_be_stored(pg: Backend) -> None:
    """PostgreSQL text cannot hold NUL (SQLite's can): reads with one find nothing, as
    they do on SQLite, and writes name the field instead of failing in the driver."""
    s, nul = pg.store, "a\x00b"
    e = ev("n1", agent="ag")
    s.restore(mem(e), [(e, None)])
    assert s.list_memories(ScopeFilter("acme", agent_id=nul), 10) == []
    assert s.list_memories(ScopeFilter("acme"), 10, before=(T0 + timedelta(1), nul)) == []
    assert s.list_memories(ScopeFilter("acme", types=(nul,)), 10) == []
    with pytest.raises(NotFound):
        s.set_status("acme", nul, MemoryStatus.RETIRED)
    assert s.events_with_episodes("acme", [nul, "n1"]) == [(e, None)]
    assert s.delete_memories(nul, ["n1"]) == 0 and s.delete_memories("acme", [nul]) == 0
    assert s.forget(ForgetSpec("acme", agent_id=nul), rekey=lambda e: "") == ForgetCounts()
    assert s.api_keys(nul) == [] and s.revoke_api_key(nul, T0) is None
    assert s.api_key_by_hash(nul) is None and s.import_state(nul) == {}
    assert s.health_snapshots(nul, None, 5) == []
    for bad, field in (
        (lambda: s.restore(mem(ev("n2"), content=nul)), "content"),
        (lambda: s.restore(mem(ev("n2"), source_event_ids=(nul,))), "source_event_ids"),
        (lambda: s.restore(mem(ev("n2")), [(ev("n2", summary=nul), None)]), "events.summary"),
        (lambda: s.restore(mem(ev("n2")), [(ev("n2"), nul)]), "events.episode_id"),
        (lambda: s.add_api_key(ApiKey("k1", "acme", Role.ADMIN, label=nul), "h"), "label"),
    ):
        with pytest.raises(InvalidInput) as info:
            bad()
        assert info.value.field == field
    assert pg.sql("SELECT id FROM memories") == [("n1",)]
