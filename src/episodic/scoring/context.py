"""Conversational context: a turn next to a strong match is likely part of the same story.

In a conversation the answer often sits one turn away from the words that match the query
(a question and its reply, a statement and its follow-up). Spreading part of a matched
turn's score to its neighbours lets them compete:

    score'(x) = score(x) + weight x max over matched y next to x of score(y) / |offset(x, y)|

``max`` rather than a sum, so a turn surrounded by many weak matches does not outrank one
strong match.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

NEIGHBOUR_WEIGHT = 0.5


def spread_to_neighbours(
    ranked: Sequence[tuple[str, float]],
    adjacency: Mapping[str, Sequence[tuple[str, int]]],
    weight: float = NEIGHBOUR_WEIGHT,
) -> list[tuple[str, float]]:
    """``ranked`` (id, score) best first and, for some of them, their (neighbour, offset)
    pairs; returns every id (old and newly reached) with its spread score, best first."""
    base = dict(ranked)
    lift: dict[str, float] = {}
    for source, neighbours in adjacency.items():
        score = base.get(source, 0.0)
        if score <= 0:
            continue
        for neighbour, offset in neighbours:
            gain = weight * score / max(1, abs(offset))
            if gain > lift.get(neighbour, 0.0):
                lift[neighbour] = gain
    merged = dict(base)
    for memory_id, gain in lift.items():
        merged[memory_id] = merged.get(memory_id, 0.0) + gain
    return sorted(merged.items(), key=lambda pair: pair[1], reverse=True)
