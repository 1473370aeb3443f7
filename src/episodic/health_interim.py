"""INTERIM — replaced when memory upkeep (issue 5) merges.

Issue 5 adds ``Episodic.memory_health(workspace, crew=None, *, history=30) -> HealthView
| None``, computing and snapshotting the health score. Until then the HTTP API, the MCP
server and the operator's page code against that signature through this stand-in, which
only reads the newest rows of the existing ``memory_health_snapshots`` table. At merge:
drop ``InterimHealth`` from ``Episodic``'s bases and delete this module (a method of the
same name defined on ``Episodic`` itself already wins over this one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from episodic.errors import InvalidInput
from episodic.store.base import Store

# Seed 000: red below 50, yellow 50-75, green from 75.
BAND_YELLOW_FROM = 50.0
BAND_GREEN_FROM = 75.0
_COMPONENTS = ("freshness", "coverage", "coherence", "efficiency", "reachability")


def band(score: float) -> str:
    if score >= BAND_GREEN_FROM:
        return "green"
    return "yellow" if score >= BAND_YELLOW_FROM else "red"


@dataclass(frozen=True, slots=True)
class HealthView:
    freshness: float
    coverage: float
    coherence: float
    efficiency: float
    reachability: float
    score: float
    band: str
    snapshot_date: str
    history: list[dict[str, Any]] = field(default_factory=list)  # older, newest first

    def to_json(self) -> dict[str, Any]:
        return {
            "freshness": self.freshness,
            "coverage": self.coverage,
            "coherence": self.coherence,
            "efficiency": self.efficiency,
            "reachability": self.reachability,
            "score": self.score,
            "band": self.band,
            "snapshot_date": self.snapshot_date,
            "history": self.history,
        }


class InterimHealth:
    """Mixed into ``Episodic`` until issue 5's ``memory_health`` arrives."""

    store: Store

    def memory_health(
        self, workspace: str, crew: str | None = None, *, history: int = 30
    ) -> HealthView | None:
        """The newest health snapshot of the workspace (or crew) and up to ``history``
        older ones; None before the first snapshot."""
        if not workspace or not workspace.strip():
            raise InvalidInput("workspace", "required")
        if history < 0:
            raise InvalidInput("history", "must be 0 or more")
        rows = self.store.health_snapshots(workspace, crew, history + 1)
        if not rows:
            return None
        latest, older = rows[0], rows[1:]
        score = float(latest["score"])
        return HealthView(
            **{name: float(latest[name]) for name in _COMPONENTS},
            score=score,
            band=band(score),
            snapshot_date=str(latest["snapshot_date"]),
            history=[{**row, "band": band(float(row["score"]))} for row in older],
        )
