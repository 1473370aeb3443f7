"""Seed 001's two-phase score: a weighted blend of cosine and min-max-normalised BM25.

Plain min-max gives the weakest BM25 match 0 however close it is to the best: two notes
that share every query word and differ only in length (a 10% gap in BM25) end a full
share of the BM25 weight apart, and no importance factor applied after can bring them
back together. The span is therefore never taken under a share of the best score
(``span_floor``): scores that close keep most of their share, while a pool that spreads
wide (most queries over a real journal) is scaled exactly as min-max scales it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

BLEND_DENSE_WEIGHT = 0.7
BLEND_SPARSE_WEIGHT = 0.3


# The span of BM25 scores min-max never goes under, as a share of the best score: at 0.6
# a match at 90% of the best keeps 0.83 of the BM25 share instead of 0 (held out on
# LoCoMo: benchmarks/README.md).
SPAN_FLOOR = 0.6


def min_max(scores: Mapping[str, float], span_floor: float = 0.0) -> dict[str, float]:
    """Rescale to [0, 1]: ``(s - lo) / (max - lo)`` with ``lo = min(min, (1 - f) x max)``
    for ``f = span_floor``: at 0 plain min-max, at 1 each score's share of the best.
    All-equal scores map to 1.0 (every candidate is equally the best), an empty mapping
    to {}."""
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    if span_floor > 0 and hi > 0:
        lo = min(lo, (1.0 - min(span_floor, 1.0)) * hi)
    if hi == lo:
        return dict.fromkeys(scores, 1.0)
    span = hi - lo
    return {key: max(0.0, value - lo) / span for key, value in scores.items()}


def blend(
    cosines: Mapping[str, float],
    bm25: Mapping[str, float],
    *,
    dense_weight: float = BLEND_DENSE_WEIGHT,
    sparse_weight: float = BLEND_SPARSE_WEIGHT,
    span_floor: float = 0.0,
) -> list[tuple[str, float]]:
    """``dense_weight x cosine + sparse_weight x min_max(bm25, span_floor)`` over the
    union of both candidate sets, best first. A candidate one leg did not return scores 0
    on that leg. With no dense leg at all (sparse-only mode) the score is each match's
    share of the best BM25, as seed 001 falls back to BM25-only: there is no cosine to
    share a scale with, and the weaker match keeps its share for importance or
    prominence to weigh (seed 001's floor example: 0.9 x 0.1 still above 0.2 x 0.1)."""
    if not cosines:
        alone = min_max(bm25, 1.0)
        return sorted(alone.items(), key=lambda pair: pair[1], reverse=True)
    norm = min_max(bm25, span_floor)
    ids = list(dict.fromkeys([*cosines, *norm]))
    scored = [
        (i, dense_weight * cosines.get(i, 0.0) + sparse_weight * norm.get(i, 0.0)) for i in ids
    ]
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
