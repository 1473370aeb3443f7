"""Health snapshots (seed 000): one row a day per workspace and per crew in
``memory_health_snapshots``, read back as a ``HealthView``.

The metrics and their weights are defined in ``episodic.scoring.health``; this module
gathers their inputs (``Store.health_facts`` for counts and the median ages, of the
workspace and all its crews in one pass,
``Store.vector_matrix`` for the embeddings, ``Store.hit_cosines`` for the recalls of the
last 30 days) and stores the result. Reading a snapshot never recomputes it: the daily
job (or ``episodic upkeep health``) does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from episodic.errors import InvalidInput
from episodic.model import ScopeFilter
from episodic.scoring import health as h
from episodic.store.upkeep import HealthFacts, HealthSnapshot, UpkeepStore

JOB = "health"
HISTORY = 30


def compute_health(
    store: UpkeepStore, workspace: str, crew: str | None, now: datetime
) -> HealthSnapshot:
    """Today's (``now``'s UTC date) snapshot of a workspace, or of one crew in it."""
    facts = store.health_facts(workspace, now)
    empty = HealthFacts(active=0, vectored=0, linked=0, median_age_days=None)
    return _snapshot(store, workspace, crew, facts.get(crew, empty), now)


def _snapshot(
    store: UpkeepStore, workspace: str, crew: str | None, facts: HealthFacts, now: datetime
) -> HealthSnapshot:
    flt = ScopeFilter(workspace_id=workspace, crew_id=crew)
    matrix = store.vector_matrix(flt)
    rows = int(matrix.shape[0])
    nn = h.neighbour_cosine(matrix) if rows >= 2 else None
    g = h.mean_pair_cosine(matrix)
    recalls = store.hit_cosines(flt, now - timedelta(days=h.EFFICIENCY_WINDOW_DAYS))
    freshness = h.freshness(facts.median_age_days)
    coverage = h.coverage(facts.vectored, facts.active)
    coherence = h.coherence(nn or 0.0, g, rows)
    efficiency = h.efficiency(recalls, nn)
    reachability = h.reachability(facts.linked, facts.vectored)
    return HealthSnapshot(
        workspace_id=workspace,
        crew_id=crew,
        snapshot_date=now.date(),
        freshness=round(freshness, 3),
        coverage=round(coverage, 3),
        coherence=round(coherence, 3),
        efficiency=round(efficiency, 3),
        reachability=round(reachability, 3),
        score=round(h.score(freshness, coverage, coherence, efficiency, reachability), 3),
    )


def snapshot_workspace(store: UpkeepStore, workspace: str, now: datetime) -> list[HealthSnapshot]:
    """Compute and store today's snapshot of the workspace and of each of its crews."""
    facts = store.health_facts(workspace, now)
    snaps = [_snapshot(store, workspace, crew, f, now) for crew, f in facts.items()]
    for snap in snaps:
        store.put_health_snapshot(snap)
    return snaps


def snapshot_json(s: HealthSnapshot) -> dict[str, Any]:
    return {
        "workspace": s.workspace_id,
        "crew": s.crew_id,
        "snapshot_date": s.snapshot_date.isoformat(),
        "freshness": s.freshness,
        "coverage": s.coverage,
        "coherence": s.coherence,
        "efficiency": s.efficiency,
        "reachability": s.reachability,
        "score": s.score,
        "band": h.band(s.score),
    }


@dataclass(frozen=True, slots=True)
class HealthView:
    """The latest snapshot of a workspace (or crew) and the ones before it."""

    workspace_id: str
    crew_id: str | None
    snapshot_date: str  # YYYY-MM-DD, UTC
    freshness: float
    coverage: float
    coherence: float
    efficiency: float
    reachability: float
    score: float
    band: str  # red | yellow | green
    history: list[HealthSnapshot] = field(default_factory=list)  # older ones, newest first

    @classmethod
    def of(cls, latest: HealthSnapshot, history: list[HealthSnapshot]) -> HealthView:
        return cls(
            workspace_id=latest.workspace_id,
            crew_id=latest.crew_id,
            snapshot_date=latest.snapshot_date.isoformat(),
            freshness=latest.freshness,
            coverage=latest.coverage,
            coherence=latest.coherence,
            efficiency=latest.efficiency,
            reachability=latest.reachability,
            score=latest.score,
            band=h.band(latest.score),
            history=history,
        )

    def trend(self) -> list[float]:
        """Scores oldest first, ending with the latest (for a sparkline)."""
        return [s.score for s in reversed(self.history)] + [self.score]

    def to_json(self) -> dict[str, Any]:
        return {
            "workspace": self.workspace_id,
            "crew": self.crew_id,
            "freshness": self.freshness,
            "coverage": self.coverage,
            "coherence": self.coherence,
            "efficiency": self.efficiency,
            "reachability": self.reachability,
            "score": self.score,
            "band": self.band,
            "snapshot_date": self.snapshot_date,
            "history": [snapshot_json(s) for s in self.history],
        }


def health_view(
    store: UpkeepStore, workspace: str, crew: str | None = None, *, history: int = HISTORY
) -> HealthView | None:
    """The latest snapshot and up to ``history`` older ones; None before the first."""
    if not workspace or not workspace.strip():
        raise InvalidInput("workspace", "required: health is kept per workspace")
    if history < 0:
        raise InvalidInput("history", f"must be 0 or more snapshots, got {history}")
    snaps = store.health_snapshots(workspace, crew or None, history + 1)
    if not snaps:
        return None
    return HealthView.of(snaps[0], snaps[1:])
