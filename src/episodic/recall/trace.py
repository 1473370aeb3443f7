"""The recall trace: every stage's candidates with rank and score, and what was dropped why.

Built only when asked for (``explain=True``), so an ordinary recall allocates none of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Why a candidate did not make it into the result.
DROP_SCOPE = "scope"  # visible in the workspace, but outside the query's scope
DROP_THRESHOLD = "below threshold"  # dense cosine under the policy's floor
DROP_MMR = "merged by MMR"  # a near-duplicate of a memory already picked
DROP_SAME_SOURCE = "same source"  # an entry and the message it quotes: one is shown
DROP_RANK = "beyond k"  # ranked below the k asked for
DROP_BUDGET = "over budget"  # recalled, but did not fit the render budget
DROP_SUPERSEDED = "superseded"  # a newer memory replaced it (shown with who decided)
DROP_VALIDITY = "not valid then"  # not true at the time a recall ``as_of`` asked about


@dataclass(frozen=True, slots=True)
class TraceRow:
    memory_id: str
    rank: int
    score: float
    detail: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Dropped:
    memory_id: str
    stage: str
    reason: str
    detail: str = ""


@dataclass(slots=True)
class Trace:
    policy: str
    query: str
    lexical_query: str
    time_windows: list[str] = field(default_factory=list)
    stages: dict[str, list[TraceRow]] = field(default_factory=dict)
    dropped: list[Dropped] = field(default_factory=list)

    def add_stage(
        self,
        name: str,
        ranked: list[tuple[str, float]],
        detail: dict[str, dict[str, float]] | None = None,
    ) -> None:
        self.stages[name] = [
            TraceRow(mid, rank, score, (detail or {}).get(mid, {}))
            for rank, (mid, score) in enumerate(ranked, start=1)
        ]

    def drop(self, memory_id: str, stage: str, reason: str, detail: str = "") -> None:
        self.dropped.append(Dropped(memory_id, stage, reason, detail))

    def to_json(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "query": self.query,
            "lexical_query": self.lexical_query,
            "time_windows": self.time_windows,
            "stages": {
                name: [
                    {
                        "id": r.memory_id,
                        "rank": r.rank,
                        "score": round(r.score, 6),
                        **(
                            {"detail": {k: round(v, 6) for k, v in r.detail.items()}}
                            if r.detail
                            else {}
                        ),
                    }
                    for r in rows
                ]
                for name, rows in self.stages.items()
            },
            "dropped": [
                {
                    "id": d.memory_id,
                    "stage": d.stage,
                    "reason": d.reason,
                    **({"detail": d.detail} if d.detail else {}),
                }
                for d in self.dropped
            ],
        }
