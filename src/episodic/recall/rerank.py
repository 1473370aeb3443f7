"""The policy's re-rank factors (importance, prominence, scope level, retrievability,
recency) applied to fused candidates, for one recall.

A recall re-ranks some candidates twice (first the leaders, to learn which of the rest
can still pass them, then everyone who can), so each memory's factors are computed once
and kept for the recall. The per-factor detail a trace shows is built only when asked
for: an ordinary recall allocates none of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from functools import lru_cache
from operator import itemgetter
from typing import Protocol

from episodic.config import MAX_CONTENT_CHARS
from episodic.model import Memory, MemoryStatus, Query
from episodic.recall.policies import Factor, RecallPolicy
from episodic.scoring.decay import clamp01, prominence, recency_weight, reinforcement_of
from episodic.scoring.prior import importance_prior, length_prior
from episodic.scoring.retrievability import initial_stability, retrievability
from episodic.scoring.scope import scope_level, scope_multiplier
from episodic.store.search import RankRow

SECONDS_PER_DAY = 86_400.0
# The name a trace shows the length prior under, beside the policy's factors.
LENGTH = "length"
# The factors a candidate's ``RankRow`` holds everything for (with the length prior).
ROW_FACTORS = frozenset({Factor.IMPORTANCE, Factor.IMPORTANCE_PRIOR, Factor.SCOPE_LEVEL})


class Rerank:
    """``policy``'s factors for ``query`` at ``now``; call it with (id, fused score)
    pairs and the rows they name."""

    def __init__(self, policy: RecallPolicy, query: Query, now: datetime) -> None:
        self.policy = policy
        self.query = query
        self.now = now
        names = [f.value for f in policy.factors]
        values = [_bound(f, query, now, policy) for f in policy.factors]
        if policy.length_prior > 0:
            strength = policy.length_prior
            names.append(LENGTH)
            # Capped where the bound on every factor (engine: _factor_bounds) is taken.
            values.append(lambda m: length_prior(min(len(m.content), MAX_CONTENT_CHARS), strength))
        self.names = tuple(names)
        self._values = tuple(values)
        self._parts: dict[str, tuple[float, ...]] = {}

    def from_rows(self) -> bool:
        """Whether every factor can be worked out from a candidate's ``RankRow``."""
        return all(f in ROW_FACTORS for f in self.policy.factors)

    def prime(self, rows: Iterable[RankRow]) -> None:
        """Keep each row's factor values, worked out from the row alone (``from_rows``;
        every row has its length): a candidate re-ranked later needs no whole row. The
        factors are the very functions ``parts`` applies to a memory."""
        values = [_row_bound(f, self.query, self.policy) for f in self.policy.factors]
        strength = self.policy.length_prior
        known = self._parts
        for r in rows:
            parts = [value(r) for value in values]
            if strength > 0:
                assert r.chars is not None
                parts.append(length_prior(min(r.chars, MAX_CONTENT_CHARS), strength))
            known[r.id] = tuple(parts)

    def parts(self, m: Memory) -> tuple[float, ...]:
        """``m``'s factor values, in the policy's order."""
        found = self._parts.get(m.id)
        if found is None:
            found = self._parts[m.id] = tuple([value(m) for value in self._values])
        return found

    def __call__(
        self,
        fused: list[tuple[str, float]],
        memories: Mapping[str, Memory],
        *,
        detail: bool = False,
    ) -> tuple[list[tuple[str, float]], dict[str, dict[str, float]]]:
        """``fused`` times each memory's factors, best first (a stable sort: ties keep
        their fused order), and with ``detail`` each memory's fused score and factors."""
        if not self.names:
            return fused, {}
        scored: list[tuple[str, float]] = []
        details: dict[str, dict[str, float]] = {}
        known, parts_of = self._parts, self.parts
        for mid, score in fused:
            parts = known.get(mid) or parts_of(memories[mid])
            total = score
            for value in parts:
                total *= value
            scored.append((mid, total))
            if detail:
                details[mid] = {"fused": score, **dict(zip(self.names, parts, strict=True))}
        scored.sort(key=itemgetter(1), reverse=True)
        return scored, details


class _Scored(Protocol):
    """What the factors of ``ROW_FACTORS`` read: a ``Memory`` or a ``RankRow``."""

    @property
    def importance(self) -> float: ...

    @property
    def agent(self) -> str | None: ...

    @property
    def crew(self) -> str | None: ...


def _bound(
    factor: Factor, query: Query, now: datetime, policy: RecallPolicy
) -> Callable[[Memory], float]:
    """``factor_value`` of ``factor`` for one recall, with what every memory shares
    worked out once (``default``'s two factors are computed for every candidate)."""
    if factor in ROW_FACTORS:
        return _row_bound(factor, query, policy)
    return lambda m: factor_value(factor, m, query, now, policy)


def _row_bound(factor: Factor, query: Query, policy: RecallPolicy) -> Callable[[_Scored], float]:
    """A factor of ``ROW_FACTORS`` for one recall, as ``_bound`` gives it: the same
    function scores a memory and its ``RankRow``."""
    if factor is Factor.IMPORTANCE_PRIOR:
        w = clamp01(policy.importance_weight)
        # importance_prior's formula, its weight clamped once.
        return lambda m: (1.0 - w) + w * clamp01(m.importance)
    if factor is Factor.SCOPE_LEVEL:
        table = _multipliers(policy.scope_multipliers)
        agent, crew = query.agent_id, query.crew_id
        # A recall's candidates share a few (agent, crew) pairs: each pair's multiplier
        # is worked out once.
        known: dict[tuple[str | None, str | None], float] = {}

        def level(m: _Scored) -> float:
            pair = (m.agent, m.crew)
            found = known.get(pair)
            if found is None:
                found = known[pair] = scope_multiplier(scope_level(*pair, agent, crew), table)
            return found

        return level
    if factor is Factor.IMPORTANCE:
        return lambda m: m.importance
    raise ValueError(f"{factor.value} needs a memory's whole row")


def factor_value(
    factor: Factor, m: Memory, query: Query, now: datetime, policy: RecallPolicy
) -> float:
    """What ``factor`` multiplies ``m``'s score by."""
    if factor is Factor.IMPORTANCE:
        return m.importance
    if factor is Factor.IMPORTANCE_PRIOR:
        return importance_prior(m.importance, policy.importance_weight)
    if factor is Factor.PROMINENCE:
        # From base importance: the nightly decay already folded age and reinforcement
        # into `importance`, and seed 001's prominence applies them once.
        return prominence(
            m.base_importance,
            _age_days(m, now),
            reinforcement_of(m.payload),
            retired=m.status is not MemoryStatus.ACTIVE,
        )
    if factor is Factor.SCOPE_LEVEL:
        level = scope_level(m.agent, m.crew, query.agent_id, query.crew_id)
        return scope_multiplier(level, _multipliers(policy.scope_multipliers))
    if factor is Factor.RETRIEVABILITY:
        if m.stability is not None and m.stability > 0:
            # FSRS state kept by reviews (upkeep.reviews): elapsed since the last review,
            # or since the memory's time when it was never reviewed.
            since = m.last_reviewed_at or m.ts
            elapsed = max(0.0, (now - since).total_seconds() / SECONDS_PER_DAY)
            return retrievability(elapsed, m.stability)
        surprise = m.payload.get("surprise", 0.0)
        stability = initial_stability(float(surprise) if isinstance(surprise, int | float) else 0.0)
        return retrievability(_age_days(m, now), stability)
    return recency_weight(_age_days(m, now))


def _age_days(m: Memory, now: datetime) -> float:
    return max(0.0, (now - m.ts).total_seconds() / SECONDS_PER_DAY)


@lru_cache(maxsize=64)
def _multipliers(pairs: tuple[tuple[str, float], ...]) -> Mapping[str, float]:
    """A policy's scope multipliers as the table ``scope_multiplier`` reads, built once
    per policy rather than once per candidate."""
    return dict(pairs)
