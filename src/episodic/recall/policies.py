"""Recall policies: retrieval behaviour as data, not code paths.

A policy names the legs it runs and how their candidates are fused. Presets are module
constants looked up through ``POLICIES``; change one per call with ``dataclasses.replace``,
never by mutating it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from episodic.errors import UnknownPolicy
from episodic.scoring.fusion import RRF_K

MIN_COSINE = 0.1


class Leg(StrEnum):
    DENSE = "dense"  # cosine over stored vectors
    SPARSE = "sparse"  # BM25 over the full-text index


class Fusion(StrEnum):
    RRF = "rrf"  # reciprocal rank fusion of the legs' rankings
    COSINE_X_IMPORTANCE = "cosine_x_importance"  # dense only: cosine x importance


@dataclass(frozen=True, slots=True)
class RecallPolicy:
    name: str
    legs: tuple[Leg, ...]
    fusion: Fusion
    rrf_k: int = RRF_K
    # Dense candidates below this cosine are unrelated noise: without a floor the dense leg
    # returns *something* for any query, and "nothing relevant" could never render empty.
    min_cosine: float = MIN_COSINE
    description: str = ""


# Seed 000's HybridRecall: dense + BM25, RRF k=60, both legs equal.
CREWSHIP = RecallPolicy(
    name="crewship",
    legs=(Leg.DENSE, Leg.SPARSE),
    fusion=Fusion.RRF,
    description="dense + BM25 fused by RRF (k=60), as Crewship's HybridRecall",
)

# Seed 000's pure-cosine Recall for prompt injection: rank stability over lexical hits.
CREWSHIP_DENSE = RecallPolicy(
    name="crewship-dense",
    legs=(Leg.DENSE,),
    fusion=Fusion.COSINE_X_IMPORTANCE,
    description="dense only, sorted by cosine x importance, as Crewship's Recall",
)

# Ours. For now the hybrid path; later issues give it its own legs and re-rankers.
DEFAULT = RecallPolicy(
    name="default",
    legs=(Leg.DENSE, Leg.SPARSE),
    fusion=Fusion.RRF,
    description="hybrid dense + BM25 with RRF",
)

POLICIES: dict[str, RecallPolicy] = {p.name: p for p in (DEFAULT, CREWSHIP, CREWSHIP_DENSE)}


def get_policy(name: str | RecallPolicy | None) -> RecallPolicy:
    if isinstance(name, RecallPolicy):
        return name
    if name is None:
        return DEFAULT
    try:
        return POLICIES[name]
    except KeyError:
        raise UnknownPolicy(name, sorted(POLICIES)) from None
