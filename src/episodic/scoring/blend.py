"""Seed 001's two-phase score: a weighted blend of cosine and min-max-normalised BM25."""

from __future__ import annotations

from collections.abc import Mapping

BLEND_DENSE_WEIGHT = 0.7
BLEND_SPARSE_WEIGHT = 0.3


def min_max(scores: Mapping[str, float]) -> dict[str, float]:
    """Rescale to [0, 1]: ``(s - min) / (max - min)``. All-equal scores map to 1.0 (every
    candidate is equally the best), an empty mapping to {}."""
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    if hi == lo:
        return dict.fromkeys(scores, 1.0)
    span = hi - lo
    return {key: (value - lo) / span for key, value in scores.items()}


def blend(
    cosines: Mapping[str, float],
    bm25: Mapping[str, float],
    *,
    dense_weight: float = BLEND_DENSE_WEIGHT,
    sparse_weight: float = BLEND_SPARSE_WEIGHT,
) -> list[tuple[str, float]]:
    """``dense_weight x cosine + sparse_weight x min_max(bm25)`` over the union of both
    candidate sets, best first. A candidate one leg did not return scores 0 on that leg.
    With no dense leg at all (sparse-only mode) the score is the normalised BM25 alone, as
    seed 001 falls back to BM25-only."""
    norm = min_max(bm25)
    if not cosines:
        return sorted(norm.items(), key=lambda pair: pair[1], reverse=True)
    ids = list(dict.fromkeys([*cosines, *norm]))
    scored = [
        (i, dense_weight * cosines.get(i, 0.0) + sparse_weight * norm.get(i, 0.0)) for i in ids
    ]
    return sorted(scored, key=lambda pair: pair[1], reverse=True)
