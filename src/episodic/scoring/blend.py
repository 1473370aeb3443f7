"""Seed 001's two-phase score: a weighted blend of cosine and min-max-normalised BM25.

Min-max takes the pool's weakest BM25 score as its zero. When the BM25 leg returned every
memory in scope that matches at all (fewer than its pool size), every other memory scores
0, so 0 is the true minimum: each match keeps its share of the best score. Taking the
weakest match as zero there would give it nothing however close it is to the best (two
notes sharing every word of the question, one a little longer), and no importance factor
applied after could bring them back together. A full pool is scaled by its own minimum,
as seed 001 does (the matches past the pool are unknown).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from enum import StrEnum

BLEND_DENSE_WEIGHT = 0.7
BLEND_SPARSE_WEIGHT = 0.3


class BlendScale(StrEnum):
    """How each leg's scores are put on one scale before they are weighed."""

    # Seed 001: the cosine as it is, BM25 min-max over its pool.
    RAW = "raw"
    # Both legs min-max over their own pools: each leg's best is 1, its weakest 0.
    MINMAX = "minmax"
    # Each score's place in its own leg's distribution: the z-score over the pool through
    # the normal CDF. A leg whose best stands far above the rest keeps that lead; a leg
    # whose pool is flat gives no candidate much over another.
    CDF = "cdf"
    # Each candidate's place in its own leg's list, ``1 - (rank - 1) / n`` over the n the
    # leg returned: the best is 1 whatever its score, the last 1/n. Rank fusion on the
    # blend's weights: neither leg's score distribution decides how much it counts.
    RANK = "rank"


def min_max(scores: Mapping[str, float], *, from_zero: bool = False) -> dict[str, float]:
    """Rescale to [0, 1]: ``(s - min) / (max - min)``; with ``from_zero`` the minimum is
    0 (each score's share of the best: the scores are every match there is). All-equal
    scores map to 1.0 (every candidate is equally the best), an empty mapping to {}."""
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    if from_zero:
        lo = min(lo, 0.0)
    if hi == lo:
        return dict.fromkeys(scores, 1.0)
    span = hi - lo
    return {key: (value - lo) / span for key, value in scores.items()}


def cdf_scaled(scores: Mapping[str, float]) -> dict[str, float]:
    """Each score's z-score over ``scores`` through the normal CDF, in (0, 1); all-equal
    scores (or one alone) map to 1.0, as min-max does, an empty mapping to {}."""
    if not scores:
        return {}
    values = list(scores.values())
    mean = sum(values) / len(values)
    std = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
    if std == 0:
        return dict.fromkeys(scores, 1.0)
    root2 = math.sqrt(2.0)
    return {key: 0.5 * (1.0 + math.erf((v - mean) / std / root2)) for key, v in scores.items()}


def rank_scaled(scores: Mapping[str, float]) -> dict[str, float]:
    """``1 - (rank - 1) / n`` for each of ``scores`` ranked best first (ties keep their
    order), an empty mapping to {}."""
    n = len(scores)
    ordered = sorted(scores, key=lambda key: scores[key], reverse=True)
    return {key: 1.0 - rank / n for rank, key in enumerate(ordered)}


def blend(
    cosines: Mapping[str, float],
    bm25: Mapping[str, float],
    *,
    dense_weight: float = BLEND_DENSE_WEIGHT,
    sparse_weight: float = BLEND_SPARSE_WEIGHT,
    every_match: bool = False,
    scale: BlendScale = BlendScale.RAW,
) -> list[tuple[str, float]]:
    """``dense_weight x cosine + sparse_weight x min_max(bm25)`` over the union of both
    candidate sets, best first; ``every_match`` says the BM25 candidates are all the
    matches in scope (the leg's pool was not filled), so their minimum is 0. A candidate
    one leg did not return scores 0 on that leg. With no dense leg at all (sparse-only
    mode) the score is each match's share of the best BM25, as seed 001 falls back to
    BM25-only: there is no cosine to share a scale with, and the weaker match keeps its
    share for importance or prominence to weigh (seed 001's floor example: 0.9 x 0.1
    still above 0.2 x 0.1). ``scale`` says how each leg is put on one scale first
    (``BlendScale``); a candidate a leg did not return scores 0 on it whatever the
    scale."""
    if not cosines:
        alone = min_max(bm25, from_zero=True)
        return sorted(alone.items(), key=lambda pair: pair[1], reverse=True)
    scale = BlendScale(scale)  # a policy built with the plain name ("cdf") works too
    dense: Mapping[str, float]
    if scale is BlendScale.CDF:
        dense, norm = cdf_scaled(cosines), cdf_scaled(bm25)
    elif scale is BlendScale.RANK:
        dense, norm = rank_scaled(cosines), rank_scaled(bm25)
    else:
        norm = min_max(bm25, from_zero=every_match)
        dense = min_max(cosines) if scale is BlendScale.MINMAX else cosines
    ids = list(dict.fromkeys([*dense, *norm]))
    scored = [(i, dense_weight * dense.get(i, 0.0) + sparse_weight * norm.get(i, 0.0)) for i in ids]
    return sorted(scored, key=lambda pair: pair[1], reverse=True)


def _top_z(scores: Mapping[str, float]) -> float:
    """How far the best score stands above the pool: (max - mean) / std, 0 when flat."""
    values = list(scores.values())
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    std = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
    return (max(values) - mean) / std if std > 0 else 0.0


def confident_weight(
    dense_share: float,
    cosines: Mapping[str, float],
    bm25: Mapping[str, float],
    strength: float,
) -> float:
    """Query-dependent fusion: the dense share moved (on the logit scale) towards the leg
    whose best match stands further above its own pool."""
    share = min(max(dense_share, 1e-6), 1 - 1e-6)
    logit = math.log(share / (1 - share)) + strength * (_top_z(cosines) - _top_z(bm25))
    return 1 / (1 + math.exp(-logit))
