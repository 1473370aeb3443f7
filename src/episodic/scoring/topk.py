"""How many results, how deep each leg looks, and seed 000's dense-only ranking score."""

from __future__ import annotations

DEFAULT_K = 5
MIN_K = 1
MAX_K = 50
# The dense leg fetches extra candidates so that re-ranking and fusion have room to
# reorder; a floor keeps small k from starving fusion of overlap.
DENSE_OVERFETCH_FACTOR = 3
DENSE_OVERFETCH_MIN = 20


def clamp_k(k: int | None) -> int:
    """Seed 000: ``None -> 5``; anything outside ``1..50`` -> 5 (not to the nearest
    bound: an out-of-range k is treated as a mistake, answered with the default)."""
    if k is None or not MIN_K <= k <= MAX_K:
        return DEFAULT_K
    return k


def dense_overfetch(k: int) -> int:
    """Seed 000: ``max(3 x k, 20)`` candidates from the dense leg."""
    return max(DENSE_OVERFETCH_FACTOR * k, DENSE_OVERFETCH_MIN)


def cosine_times_importance(cos: float, importance: float) -> float:
    """Seed 000's dense-only sort key: ``cosine x importance``."""
    return cos * importance
