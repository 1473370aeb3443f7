"""Each leg's best few keep a place near the top of the final ranking.

Fusion, context and the length step can push a candidate one leg ranks first far down:
a short message the dense leg finds best sinks below long answers that match the query's
words many times. A common hybrid-search safeguard keeps each leg's first ``keep``
candidates (by the leg's own score) no lower than place ``rank`` of the final ranking,
whatever the steps before did to them:

- a kept candidate already at or above place ``rank`` stays where it is;
- the others move up to place ``rank``, in their current order; their score becomes one
  between the two they now sit between, so the ranking stays ordered by score;
- with ``passable``, a kept candidate passes only those (recall passes long memories
  only: the short message that long answers pushed down rises above them, never above
  another short one the ranking put first).

``rank`` is a place in the ranking, not a share of the hits asked for: the same recall
keeps the same candidates whatever ``k`` a caller asks for.

``keep_long_heads`` is the mirror for long memories: a price on length (the length
prior) pushes every long answer below the short messages, also the few a question names
whole (a summary's evidence). Each leg's first few long ones rise to their place (passing
any memory, or short ones only), so the prior can be taken more strongly and still leave
each leg's best long answers near the top.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from itertools import islice


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
    ranked: Sequence[tuple[str, float]],
    heads: Sequence[str],
    rank: int,
    passable: Container[str] | None = None,
) -> tuple[list[tuple[str, float]], dict[str, int]]:
    """``ranked`` (id, score; best first) with every id of ``heads`` that ranks below
    place ``rank`` (1-based) moved up towards it, and {moved id: the place it came from}.

    A moved id passes the ids above it one by one, up to place ``rank``; it stops below
    another id of ``heads`` (their order stays) and, with ``passable``, below any id not
    in it. Its score becomes the mean of the two it ends between, so the ranking stays
    ordered by score. Ids of ``heads`` that are not in ``ranked`` (filtered out before
    this step) are left out; ``rank`` < 1 or no heads leave ``ranked`` as it is."""
    out = list(ranked)
    if rank < 1 or not heads:
        return out, {}
    wanted = set(heads)
    was = {i: place for place, (i, _) in enumerate(ranked, start=1)}
    moved: dict[str, int] = {}
    for i in [i for i, _ in ranked if i in wanted]:  # the best placed first
        at = next(n for n, (j, _) in enumerate(out) if j == i)
        to = at
        while (
            to > rank - 1
            and out[to - 1][0] not in wanted
            and (passable is None or out[to - 1][0] in passable)
        ):
            to -= 1
        if to == at:
            continue
        del out[at]
        lower = out[to][1]
        upper = out[to - 1][1] if to > 0 else lower + max(abs(lower), 1.0)
        out.insert(to, (i, (upper + lower) / 2))
        moved[i] = was[i]
    return out, moved


def keep_long_heads(
    ranked: Sequence[tuple[str, float]],
    legs: Sequence[Sequence[str]],
    lengths: Mapping[str, int],
    limit: int,
    keep: int,
    rank: int,
    pass_limit: int = 0,
) -> tuple[list[tuple[str, float]], dict[str, int]]:
    """``keep_leg_heads`` for long memories: each leg's (``legs``: ids, best first) first
    ``keep`` ids longer than ``limit`` characters (by ``lengths``; an id of unknown length
    is none) moved up towards place ``rank``. With ``pass_limit`` above 0 they pass only
    ids of at most that many characters (an unknown length is not), else any id. ``keep``
    < 1 leaves ``ranked`` as it is.

    Passing short memories only mirrors the short keep, but a memory just over ``limit``
    pays almost no length prior and stays high: it then holds back the long answers a leg
    ranks first below it."""
    if keep < 1:
        return list(ranked), {}

    def long(i: str) -> bool:
        n = lengths.get(i)
        return n is not None and n > limit

    firsts = [list(islice((i for i in leg if long(i)), keep)) for leg in legs]
    passable = {i for i, n in lengths.items() if n <= pass_limit} if pass_limit > 0 else None
    return keep_leg_heads(ranked, leg_heads(firsts, keep), rank, passable)


def leads_long(leg: Sequence[str], lengths: Mapping[str, int], limit: int, depth: int) -> bool:
    """Whether one of the first ``depth`` ids of ``leg`` (best first) is longer than
    ``limit`` characters (by ``lengths``; an unknown length is not); ``depth`` < 1: always.

    A query whose dense leg finds a long answer best is about what such answers hold; one
    whose best matches are all short messages asks about something said in one."""
    if depth < 1:
        return True
    return any(lengths.get(i, 0) > limit for i in leg[:depth])
