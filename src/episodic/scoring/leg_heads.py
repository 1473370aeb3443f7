"""Each leg's best few keep a place near the top of the final ranking.

Fusion, context and the length step can push a candidate one leg ranks first far down:
a short message the dense leg finds best sinks below long answers that match the query's
words many times. A common hybrid-search safeguard keeps each leg's first ``keep``
candidates (by the leg's own score) no lower than place ``rank`` of the final ranking,
whatever the steps before did to them:

- a kept candidate already at or above place ``rank`` stays where it is;
- the others move up to place ``rank``, in their current order, just ahead of the
  candidate that held it; their score becomes one between the two they now sit between,
  so the ranking stays ordered by score.

``rank`` is a place in the ranking, not a share of the hits asked for: the same recall
keeps the same candidates whatever ``k`` a caller asks for.
"""

from __future__ import annotations

from collections.abc import Sequence


def leg_heads(legs: Sequence[Sequence[str]], keep: int) -> list[str]:
    """The first ``keep`` ids of each leg (best first), taken in turn (each leg's first,
    then each leg's second ...), each id once."""
    out: dict[str, None] = {}
    for place in range(keep):
        for leg in legs:
            if place < len(leg):
                out.setdefault(leg[place], None)
    return list(out)


def keep_leg_heads(
    ranked: Sequence[tuple[str, float]], heads: Sequence[str], rank: int
) -> tuple[list[tuple[str, float]], dict[str, int]]:
    """``ranked`` (id, score; best first) with every id of ``heads`` that ranks below
    place ``rank`` (1-based) moved up to it, and {moved id: the place it came from}.

    Ids of ``heads`` that are not in ``ranked`` (filtered out before this step) are left
    out. ``rank`` < 1 or no heads leave ``ranked`` as it is."""
    if rank < 1 or not heads or len(ranked) <= rank:
        return list(ranked), {}
    wanted = set(heads)
    above = list(ranked[: rank - 1])
    rest = list(ranked[rank - 1 :])
    pulled = [pair for pair in rest if pair[0] in wanted]
    if pulled == rest[: len(pulled)]:
        return list(ranked), {}  # each is at or above the place it is kept at
    stay = [pair for pair in rest if pair[0] not in wanted]
    # The pulled ones go just ahead of the first that stays: scored between its score and
    # the score of the place above (or as far above it when nothing is above).
    lower = stay[0][1]
    upper = above[-1][1] if above else lower + max(abs(lower), 1.0)
    upper = max(upper, lower)  # an unordered input: the pulled ones tie with lower
    step = (upper - lower) / (len(pulled) + 1)
    placed = [(i, upper - step * (j + 1)) for j, (i, _) in enumerate(pulled)]
    was = {i: place for place, (i, _) in enumerate(rest, start=rank)}
    moved = {i: was[i] for j, (i, _) in enumerate(placed) if was[i] > rank + j}
    return above + placed + stay, moved
