"""Reciprocal rank fusion (seed 000's hybrid recall; seed 003 uses the same with k=30).

Pure: plain id lists in, ``(id, score)`` pairs out.
"""

from __future__ import annotations

from collections.abc import Sequence

# Seed 000's constant. Larger k flattens the gap between rank 1 and rank 10, so one leg's
# top hit cannot outvote a candidate both legs agree on.
RRF_K = 60


def rrf(
    rankings: Sequence[Sequence[str]],
    k: int = RRF_K,
    weights: Sequence[float] | None = None,
) -> list[tuple[str, float]]:
    """Fuse several best-first rankings of ids.

    ``score(id) = sum over rankings containing id of w_r / (k + rank)``, rank 1-based,
    ``w_r`` the ranking's weight (1 for all when ``weights`` is None: plain RRF).

    Returns ``(id, score)`` best first. Equal scores keep the order in which ids first
    appear (ranking by ranking, top to bottom), so the result is deterministic. An id
    repeated inside one ranking counts once, at its best rank.
    """
    if k < 0:
        raise ValueError(f"rrf k must be >= 0, got {k}")
    if weights is not None and len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} rankings")
    scores: dict[str, float] = {}
    for index, ranking in enumerate(rankings):
        weight = 1.0 if weights is None else weights[index]
        seen: set[str] = set()
        for rank, item in enumerate(ranking, start=1):
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    # sorted() is stable and dicts keep insertion order: ties stay in first-appearance order.
    return sorted(scores.items(), key=lambda pair: pair[1], reverse=True)
