"""Conversational context: a turn next to a strong match is likely part of the same story,
and a conversation that holds a strong match is likely the one the query is about.

In a conversation the answer often sits one turn away from the words that match the query
(a question and its reply, a statement and its follow-up). Spreading part of a matched
turn's score to its neighbours lets them compete:

    score'(x) = score(x) + weight x max over matched y next to x of score(y) / |offset(x, y)|

``max`` rather than a sum, so a turn surrounded by many weak matches does not outrank one
strong match.

Both spreads can read each source's score times a price of its own (``price``, 1 when
missing): a long memory's score is many passages' chances to match, and re-ranking later
charges the memory itself for them (``prior.length_prior``), but not a short turn that
inherited that score beside it. Priced, a neighbour or a conversation inherits what the
source is worth after the charge.

``lift_by_conversation`` is the wider view: every candidate gains a share of the best score
in its own conversation,

    score'(x) = score(x) + weight x max over candidates y in x's conversation of score(y)

so that when a query's words meet one turn of a conversation, the turns of that
conversation which carry the answer in other words (a date, a name, "yes, the blue one")
rise above equally scored turns of unrelated conversations. Passage retrieval does the same
with a document's best passage. A memory outside any conversation forms its own group.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from operator import itemgetter

NEIGHBOUR_WEIGHT = 0.5
CONVERSATION_WEIGHT = 0.5


def spread_to_neighbours(
    ranked: Sequence[tuple[str, float]],
    adjacency: Mapping[str, Sequence[tuple[str, int]]],
    weight: float = NEIGHBOUR_WEIGHT,
    backward: float = 1.0,
    price: Mapping[str, float] | None = None,
) -> list[tuple[str, float]]:
    """``ranked`` (id, score) best first and, for some of them, their (neighbour, offset)
    pairs; returns every id (old and newly reached) with its spread score, best first.
    A neighbour before its source (negative offset) gains ``backward`` times as much.
    With ``price``, a source spreads its score times its price (1 when missing); its own
    score is left as it is."""
    base = dict(ranked)
    lift: dict[str, float] = {}
    for source, neighbours in adjacency.items():
        score = base.get(source, 0.0) * (price.get(source, 1.0) if price else 1.0)
        if score <= 0:
            continue
        for neighbour, offset in neighbours:
            gain = weight * score / max(1, abs(offset)) * (backward if offset < 0 else 1.0)
            if gain > lift.get(neighbour, 0.0):
                lift[neighbour] = gain
    merged = dict(base)
    for memory_id, gain in lift.items():
        merged[memory_id] = merged.get(memory_id, 0.0) + gain
    return sorted(merged.items(), key=itemgetter(1), reverse=True)


def lift_by_conversation(
    ranked: Sequence[tuple[str, float]],
    conversation_of: Mapping[str, str | None],
    weight: float = CONVERSATION_WEIGHT,
    depth: int = 0,
    top: int = 1,
    price: Mapping[str, float] | None = None,
) -> list[tuple[str, float]]:
    """``ranked`` (id, score) with each candidate's conversation (missing or None: none);
    returns the same ids with their lifted scores, best first (ties keep their order).
    With ``depth`` > 0 only each conversation's best ``depth`` candidates are lifted.
    With ``price``, a conversation's strength is read from its candidates' scores times
    their prices (1 when missing)."""
    ordered = sorted(ranked, key=itemgetter(1), reverse=True)  # stable: ties keep order
    # Each candidate's group: its conversation, or itself when it has none (a 1-tuple,
    # never equal to a conversation's id).
    of = conversation_of.get
    groups: list[str | tuple[str]] = []
    for memory_id, _ in ordered:
        c = of(memory_id)
        groups.append((memory_id,) if c is None else c)
    # The scores a conversation's strength is read from, best first, with their groups:
    # with ``price`` the priced scores, whose order can differ from the plain one.
    worth: Iterable[tuple[str | tuple[str], float]]
    if price:
        worth = sorted(
            (
                (key, score * price.get(memory_id, 1.0))
                for key, (memory_id, score) in zip(groups, ordered, strict=True)
            ),
            key=itemgetter(1),
            reverse=True,
        )
    else:
        worth = ((key, score) for key, (_, score) in zip(groups, ordered, strict=True))
    # A conversation's strength: the mean of its ``top`` best scores (1: its best), a
    # missing one counting 0, so one lucky match weighs less than several good ones.
    strength: dict[str | tuple[str], float] = {}
    counted: dict[str | tuple[str], int] = {}
    share = max(1, top)
    for key, score in worth:
        n = counted.get(key, 0)
        if n < top:
            strength[key] = strength.get(key, 0.0) + score / share
            counted[key] = n + 1
    lifted: list[tuple[str, float]] = []
    if depth <= 0:
        lifted = [
            (memory_id, score + weight * strength[key])
            for key, (memory_id, score) in zip(groups, ordered, strict=True)
        ]
    else:
        seen: dict[str | tuple[str], int] = {}
        for key, (memory_id, score) in zip(groups, ordered, strict=True):
            n = seen.get(key, 0) + 1
            seen[key] = n
            lift = weight * strength[key] if n <= depth else 0.0
            lifted.append((memory_id, score + lift))
    lifted.sort(key=itemgetter(1), reverse=True)
    return lifted
