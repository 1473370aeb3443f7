"""What the contract tests share: small hand-made events, memories and unit vectors, and
the scope table every leg must honour."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from episodic.model import Event, Memory, Scope, ScopeFilter
from episodic.store.base import Store, Vector

T0 = datetime(2026, 3, 1, 9, 30, 15, 123456, tzinfo=UTC)
MODEL = "unit-test-model"
DIM = 8


def vec(*components: float) -> Vector:
    """A unit vector in DIM dimensions from its leading components."""
    arr = np.zeros(DIM, dtype=np.float32)
    arr[: len(components)] = components
    out: Vector = (arr / np.linalg.norm(arr)).astype(np.float32)
    return out


def f32(values: Any) -> Vector:
    out: Vector = np.asarray(values, dtype=np.float32)
    return out


def axis(i: int) -> Vector:
    arr = np.zeros(DIM, dtype=np.float32)
    arr[i] = 1.0
    return arr


def event(
    id: str,
    ws: str = "acme",
    *,
    summary: str = "",
    minutes: float = 0.0,
    **fields: Any,
) -> Event:
    values: dict[str, Any] = {"type": "note", **fields}
    return Event(
        id=id,
        workspace=ws,
        ts=T0 + timedelta(minutes=minutes),
        summary=summary or f"event {id}",
        **values,
    )


def memory_of(e: Event, *, base: float = 0.5, **fields: Any) -> Memory:
    values: dict[str, Any] = {
        "id": e.id,
        "workspace": e.workspace,
        "ts": e.ts,
        "type": e.type,
        "content": e.summary,
        "severity": e.severity,
        "payload": e.payload,
        "crew": e.crew,
        "agent": e.agent,
        "resource": e.resource,
        "conversation": e.conversation,
        "base_importance": base,
        "importance": base,
        "source_event_ids": (e.id,),
        "created_at": T0,
    }
    values.update(fields)
    return Memory(**values)


def remember(store: Store, *events: Event, **memory_fields: Any) -> list[Memory]:
    """Append events, every one of them admitted as a memory."""
    memories = [memory_of(e, **memory_fields) for e in events]
    store.append(events, memories)
    return memories


def dense_ids(store: Store, flt: ScopeFilter, query: Vector, limit: int = 50) -> list[str]:
    return [c.memory_id for c in store.search_dense(flt, query, limit)]


def sparse_ids(store: Store, flt: ScopeFilter, text: str, limit: int = 50) -> list[str]:
    return [c.memory_id for c in store.search_sparse(flt, text, limit)]


# Who sees what under each scope rule. Every memory says "deploy incident" and has a
# vector near the query, so each leg returns exactly the visible set.
SCOPE_ROWS: dict[str, dict[str, Any]] = {
    "own": {"agent": "a1", "crew": "c1", "base": 0.5},
    "own_other_crew": {"agent": "a1", "crew": "c2", "base": 0.5},
    "own_resource": {
        "agent": "a1",
        "crew": "c1",
        "resource": "r1",
        "conversation": "k1",
        "base": 0.5,
    },
    "peer_routine": {"agent": "a2", "crew": "c1", "base": 0.5},
    "peer_at_bar": {"agent": "a2", "crew": "c1", "base": 0.55},
    "peer_escalation": {"agent": "a2", "crew": "c1", "base": 0.9, "resource": "r1"},
    "other_crew_escalation": {"agent": "a3", "crew": "c2", "base": 0.9},
    "no_agent_note": {"crew": "c1", "base": 0.7},
}
ALL = set(SCOPE_ROWS)

SCOPE_CASES: list[tuple[str, ScopeFilter, set[str]]] = [
    ("whole workspace", ScopeFilter("acme"), ALL),
    (
        "own",
        ScopeFilter("acme", Scope.OWN, agent_id="a1"),
        {"own", "own_other_crew", "own_resource"},
    ),
    (
        "own ignores the crew",
        ScopeFilter("acme", Scope.OWN, agent_id="a1", crew_id="c2"),
        {"own", "own_other_crew", "own_resource"},
    ),
    (
        "own narrowed by resource",
        ScopeFilter("acme", Scope.OWN, agent_id="a1", resource_id="r1"),
        {"own_resource"},
    ),
    (
        "crew_shared with agent",
        ScopeFilter("acme", Scope.CREW_SHARED, agent_id="a1", crew_id="c1"),
        {
            "own",
            "own_other_crew",
            "own_resource",
            "peer_at_bar",
            "peer_escalation",
            "no_agent_note",
        },
    ),
    (
        "crew_shared without agent",
        ScopeFilter("acme", Scope.CREW_SHARED, crew_id="c1"),
        {"peer_at_bar", "peer_escalation", "no_agent_note"},
    ),
    (
        "crew_shared narrowed by resource",
        ScopeFilter("acme", Scope.CREW_SHARED, agent_id="a1", crew_id="c1", resource_id="r1"),
        {"own_resource", "peer_escalation"},
    ),
    (
        "crew_shared narrowed by conversation",
        ScopeFilter("acme", Scope.CREW_SHARED, agent_id="a1", crew_id="c1", conversation_id="k1"),
        {"own_resource"},
    ),
    (
        "no scope, agent",
        ScopeFilter("acme", agent_id="a2"),
        {"peer_routine", "peer_at_bar", "peer_escalation"},
    ),
    (
        "no scope, crew",
        ScopeFilter("acme", crew_id="c2"),
        {"own_other_crew", "other_crew_escalation"},
    ),
    (
        "no scope, agent and crew",
        ScopeFilter("acme", agent_id="a1", crew_id="c2"),
        {"own_other_crew"},
    ),
    (
        "no scope, resource",
        ScopeFilter("acme", resource_id="r1"),
        {"own_resource", "peer_escalation"},
    ),
    ("no scope, conversation", ScopeFilter("acme", conversation_id="k1"), {"own_resource"}),
    ("unknown agent", ScopeFilter("acme", Scope.OWN, agent_id="nobody"), set()),
    ("unknown crew", ScopeFilter("acme", Scope.CREW_SHARED, crew_id="nobody"), set()),
    ("other workspace", ScopeFilter("orbit"), set()),
]
