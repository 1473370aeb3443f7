"""Which candidates a recall re-ranks: those that can still reach the first places.

Re-ranking reads each candidate's row, and deep pools hold hundreds of candidates while a
recall returns a few. When every factor applied after fusion is bounded, a candidate whose
fused score stays below what the leaders end with, even lifted by the most the factors
give, cannot pass them: its row is never read, and the first places come out exactly as
re-ranking everything would give them.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from datetime import datetime

from episodic.scoring.temporal import TimeWindow, time_booster


def split_head(
    fused: Sequence[tuple[str, float]],
    depth: int,
    hi: float,
    final: Callable[[Sequence[tuple[str, float]]], list[float] | None],
) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """(head, tail) of ``fused``, in order: the tail holds the candidates that cannot
    reach the first ``depth`` places when nothing lifts a score more than ``hi`` times.
    The ``depth`` best fused candidates all end at or above the least of their ``final``
    scores, and a candidate that stays below it even when lifted ``hi`` times (with a
    margin for rounding) cannot pass them. Nothing is cut when ``final`` cannot score
    them, or when a score is below zero (where ``hi`` times it is no upper bound)."""
    if len(fused) <= depth or min(s for _, s in fused) < 0:
        return list(fused), []
    top = heapq.nlargest(depth, fused, key=lambda pair: pair[1])
    scores = final(top)
    if scores is None:
        return list(fused), []
    cut = min(scores) / hi * (1.0 - 1e-9)
    first = {i for i, _ in top}
    head = [(i, s) for i, s in fused if s >= cut or i in first]
    tail = [(i, s) for i, s in fused if s < cut and i not in first]
    return head, tail


def by_time(
    ranked: Sequence[tuple[str, float]],
    ts: Callable[[str], datetime],
    windows: Sequence[TimeWindow],
    floor: float,
) -> list[tuple[str, float]]:
    """``ranked`` times each memory's time boost (its time ``ts(id)``), best first
    (unchanged without windows)."""
    if not windows:
        return list(ranked)
    boost = time_booster(windows, floor=floor)
    return sorted(
        ((i, s * boost(ts(i))) for i, s in ranked),
        key=lambda pair: pair[1],
        reverse=True,
    )


def within(kept: Sequence[tuple[str, float]], exact: Sequence[tuple[str, float]]) -> bool:
    """Whether every id of ``kept`` is among those of ``exact``."""
    ids = {i for i, _ in exact}
    return all(i in ids for i, _ in kept)
