"""Store methods the service added (issue 6), on SQLite: listing pages, the Python scope
predicate against the SQL one, keys, status changes."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest

from episodic.errors import NotFound
from episodic.model import MemoryStatus, Role, Scope, ScopeFilter
from episodic.store import SqliteStore
from episodic.store.sql import scope_allows
from episodic.tenancy import ApiKey, hash_secret, new_secret
from store_contract import T0, event, memory_of


@pytest.fixture
def store() -> SqliteStore:
    s = SqliteStore(":memory:")
    events = []
    memories = []
    for n, (agent, crew, base, resource, kind) in enumerate(
        itertools.product(
            ("a1", "a2", None), ("c1", "c2", None), (0.5, 0.7), ("r1", None), ("note", "entry")
        )
    ):
        e = event(
            f"m{n:02d}",
            agent_id=agent,
            crew_id=crew,
            resource_id=resource,
            type=kind,
            minutes=n % 7,
        )
        events.append(e)
        memories.append(memory_of(e, base=base))
    s.append(events, memories)
    return s


FILTERS = [
    ScopeFilter("acme"),
    ScopeFilter("acme", scope=Scope.OWN, agent_id="a1"),
    ScopeFilter("acme", scope=Scope.CREW_SHARED, crew_id="c1"),
    ScopeFilter("acme", scope=Scope.CREW_SHARED, crew_id="c1", agent_id="a2"),
    ScopeFilter("acme", agent_id="a2", crew_id="c2"),
    ScopeFilter("acme", resource_id="r1", types=("entry",)),
    ScopeFilter("acme", scope=Scope.OWN, agent_id="a1", resource_id="r1"),
    ScopeFilter("orbit"),
]


@pytest.mark.parametrize("flt", FILTERS)
def test_python_scope_predicate_agrees_with_sql(store: SqliteStore, flt: ScopeFilter) -> None:
    everything = store.list_memories(ScopeFilter("acme"), 1000)
    assert len(everything) == 72
    by_sql = {m.id for m in store.list_memories(flt, 1000)}
    by_python = {m.id for m in everything if scope_allows(flt, m)}
    assert by_sql == by_python


def test_pages_walk_everything_once_in_time_order(store: SqliteStore) -> None:
    seen = []
    before = None
    while True:
        page = store.list_memories(ScopeFilter("acme"), 10, before=before)
        seen += page
        if len(page) < 10:
            break
        before = (page[-1].ts, page[-1].id)
    assert len(seen) == 72 and len({m.id for m in seen}) == 72
    keys = [(m.ts, m.id) for m in seen]
    assert keys == sorted(keys, reverse=True)


def test_status_filter_and_set_status(store: SqliteStore) -> None:
    retired = store.set_status("acme", "m03", MemoryStatus.RETIRED)
    assert retired.status is MemoryStatus.RETIRED
    only = store.list_memories(ScopeFilter("acme"), 100, statuses=[MemoryStatus.RETIRED])
    assert [m.id for m in only] == ["m03"]
    with pytest.raises(NotFound):
        store.set_status("orbit", "m04", MemoryStatus.RETIRED)
    assert store.get_memory("acme", "m04").status is MemoryStatus.ACTIVE


def test_keys_round_trip_and_revoke_once(store: SqliteStore) -> None:
    key_id, secret = new_secret()
    key = ApiKey(key_id, "acme", Role.LEAD, crew_id="c1", label="ci", created_at=T0)
    store.add_api_key(key, hash_secret(secret))
    assert store.api_key_by_hash(hash_secret(secret)) == key
    assert store.api_key_by_hash(hash_secret(secret + "x")) is None
    first = store.revoke_api_key(key_id, T0 + timedelta(days=1))
    again = store.revoke_api_key(key_id, T0 + timedelta(days=2))
    assert first is not None and again is not None
    assert first.revoked_at == again.revoked_at == T0 + timedelta(days=1)
    assert store.revoke_api_key("k_missing", T0) is None
    assert [k.id for k in store.api_keys("acme")] == [key_id] and store.api_keys("orbit") == []
