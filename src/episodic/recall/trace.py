"""The recall trace: every stage's candidates with rank and score, and what was dropped why.

Built only when asked for (``explain=True``), so an ordinary recall allocates none of it.
Each stage holds the ranking as that step left it, in the order the steps ran: the legs,
fusion, context, the re-rank factors, ``time`` (the time boost), ``length:*`` (the length
step), ``keep:*`` (each leg's best and a standing rule kept near the top), then the
reorders that only move memories about one subject (``order:*``, present when they moved
something), diversity, and the hits' own order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from episodic.model import score_json

# Why a candidate did not make it into the result.
DROP_SCOPE = "scope"  # visible in the workspace, but outside the query's scope
DROP_THRESHOLD = "below threshold"  # dense cosine under the policy's floor
DROP_MMR = "merged by MMR"  # a near-duplicate of a memory already picked
DROP_SAME_SOURCE = "same source"  # an entry and the message it quotes: one is shown
DROP_RANK = "beyond k"  # ranked below the k asked for
DROP_BUDGET = "over budget"  # recalled, but did not fit the render budget
DROP_SUPERSEDED = "superseded"  # a newer memory replaced it (shown with who decided)
DROP_VALIDITY = "not valid then"  # not true at the time a recall ``as_of`` asked about

# The stages of the reorders that only move memories about one subject: newest first among
# the ranked head, then the hits' own order (newer turns, restated values first).
ORDER_NEWEST_FIRST = "order:newest similar first"
ORDER_WITHIN_HITS = "order:within hits"

# The keyword leg's stage. Its scores are BM25's, where a word held by half or more of the
# memories the index counts weighs almost nothing (its idf is floored at 1e-6): a memory
# that holds every word of the query can score below what four decimals show.
SPARSE_STAGE = "leg:sparse"
WEIGHTLESS = 5e-5
WEIGHTLESS_NOTE = (
    "weight ~0: these hold the query's words, but so do half or more of the memories the "
    "keyword index counts, and BM25 weighs such words at almost nothing; each is a match "
    "all the same"
)


def shown_score(stage: str, score: float) -> str:
    """A trace row's score as a person reads it: four decimals, or, for a keyword match
    that would show as 0.0000, that it matched with almost no weight (not a miss)."""
    if weightless(stage, score):
        return "matched, weight ~0"
    return f"{score:.4f}"


def weightless(stage: str, score: float) -> bool:
    """Whether a row of ``stage`` is a keyword match too common to weigh anything."""
    return stage == SPARSE_STAGE and abs(score) < WEIGHTLESS


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
                        "score": score_json(r.score),
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
