"""Re-ranking for one recall: each memory's factors are worked out once (a recall
re-ranks its leaders twice: first to learn which of the rest can still pass them), the
per-factor detail is built only for a trace, and default's factors, bound once per
recall, give exactly what the factor functions give."""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from episodic.model import Memory, MemoryStatus, Query
from episodic.recall import rerank as rerank_module
from episodic.recall.policies import DEFAULT, TEAPARTY
from episodic.recall.rerank import Rerank, factor_value

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def memory(
    i: int, importance: float = 0.5, agent: str | None = None, crew: str | None = None
) -> Memory:
    return Memory(
        id=f"m{i}",
        workspace="w",
        ts=NOW - timedelta(days=i),
        type="peer.escalation",
        content=f"memory {i}",
        importance=importance,
        base_importance=importance,
        agent=agent,
        crew=crew,
    )


def test_a_memory_s_factors_are_worked_out_once_per_recall(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[float] = []
    real = rerank_module.prominence

    def counting(*args: object, **kwargs: object) -> float:
        calls.append(1.0)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(rerank_module, "prominence", counting)
    memories = {m.id: m for m in (memory(i, importance=0.1 * i) for i in range(10))}
    pairs = [(f"m{i}", 1.0 - i / 20) for i in range(10)]
    rerank = Rerank(TEAPARTY, Query(text="q", workspace_id="w"), NOW)
    leaders, _ = rerank(pairs[:4], memories)
    everyone, _ = rerank(pairs, memories)
    assert len(calls) == 10  # not 14: the four leaders are not worked out again
    assert dict(leaders).items() <= dict(everyone).items()


def test_the_detail_is_built_only_for_a_trace() -> None:
    memories = {m.id: m for m in (memory(i) for i in range(3))}
    pairs = [(f"m{i}", 1.0 - i / 10) for i in range(3)]
    rerank = Rerank(DEFAULT, Query(text="q", workspace_id="w", agent_id="a"), NOW)
    ranked, detail = rerank(pairs, memories)
    assert detail == {}
    again, detail = rerank(pairs, memories, detail=True)
    assert again == ranked
    # default's length prior shows beside its factors; a short memory keeps all its score
    assert detail["m0"] == {
        "fused": 1.0,
        "importance_prior": 0.85,
        "scope_level": 1.0,
        "length": 1.0,
    }


@pytest.mark.parametrize("agent,crew", [(None, None), ("a", None), (None, "c"), ("a", "c")])
def test_default_s_bound_factors_are_the_factor_functions(
    agent: str | None, crew: str | None
) -> None:
    query = Query(text="q", workspace_id="w", agent_id=agent, crew_id=crew)
    rerank = Rerank(DEFAULT, query, NOW)
    owners = [None, "a", "b", "c"]
    for n, (importance, m_agent, m_crew) in enumerate(
        itertools.product((-0.5, 0.0, 0.123456789, 0.5, 1.0, 1.7), owners, owners)
    ):
        m = memory(n, importance, m_agent, m_crew)
        expected = tuple(factor_value(f, m, query, NOW, DEFAULT) for f in DEFAULT.factors)
        # then default's length prior (1 for these short memories)
        assert rerank.parts(m) == (*expected, 1.0)


def test_a_retired_memory_keeps_its_prominence_penalty() -> None:
    query = Query(text="q", workspace_id="w")
    active = memory(1)
    retired = replace(active, id="r", status=MemoryStatus.RETIRED)
    rerank = Rerank(TEAPARTY, query, NOW)
    assert rerank.parts(retired)[0] < rerank.parts(active)[0]
