"""Among near-duplicates, the newest first.

Two memories joined by a ``similar`` edge (cosine >= 0.80, seed 000's linking) say nearly
the same thing about the same subject; when both match a query, the newer one holds the
current state ("the deploy target moved to eu-west-1" after "the deploy target is
us-east-1"). It takes at least the score of any older near-duplicate it is ranked with,
and ties go to the newer, so it sits right above what it restates; the older stays in the
list, one place down, as history.

A newer memory of lower base importance does not take the older one's place: an info
note restating an error-level regression is not its new state, and between two such
near-equal matches importance decides (seed 000's cosine x importance).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime


def newest_first(
    ranked: Sequence[tuple[str, float]],
    similar: Mapping[str, Sequence[tuple[str, float]]],
    ts: Mapping[str, datetime],
    base: Mapping[str, float] | None = None,
) -> list[tuple[str, float]]:
    """``ranked`` (id, score) best first, each id's similar memories and every ranked
    id's time (and base importance: a newer memory below the older one's is not
    lifted); returns the same ids, re-scored and re-sorted."""
    score = dict(ranked)
    order = {memory_id: float(n) for n, (memory_id, _) in enumerate(ranked)}
    lifted = dict(score)
    place = dict(order)
    for memory_id, others in similar.items():
        if memory_id not in score:
            continue
        above = order[memory_id] - 0.5  # just above the older one; other ties keep order
        for other, _weight in others:
            if (
                other in score
                and ts[other] > ts[memory_id]
                and (base is None or base[other] >= base[memory_id])
                and (score[memory_id], -above) > (lifted[other], -place[other])
            ):
                lifted[other], place[other] = score[memory_id], above
    # Several versions lifted to one place: the newest first.
    return sorted(
        lifted.items(), key=lambda pair: (-pair[1], place[pair[0]], -ts[pair[0]].timestamp())
    )


def newer_of(
    ranked: Sequence[tuple[str, float]],
    similar: Mapping[str, Sequence[tuple[str, float]]],
    ts: Mapping[str, datetime],
) -> dict[str, str]:
    """Each ranked id that has a newer near-duplicate ranked with it, mapped to the newest
    of them: what a rendered block marks as earlier."""
    present = {memory_id for memory_id, _ in ranked}
    out: dict[str, str] = {}
    for memory_id, others in similar.items():
        if memory_id not in present:
            continue
        newer = [o for o, _ in others if o in present and ts[o] > ts[memory_id]]
        if newer:
            out[memory_id] = max(newer, key=lambda o: (ts[o], o))
    return out
