"""Among memories about the same subject, the newest first.

Two memories whose vectors are close (``same_subject``: cosine at or above a threshold the
recall policy sets) speak of the same subject; when both match a query, the newer one
holds the current state ("the deploy target moved to eu-west-1" after "the deploy target
is us-east-1"; "Priya handed on-call over to Marco" after "on-call goes to Priya"). It
takes at least the score of any older one it is ranked with, and ties go to the newer, so
it sits right above what it restates; the older stays in the list, one place down, as
history. Nothing is hidden: this only reorders.

Turns of one conversation reply to and repeat each other ("see you Friday!"); a later
turn is not a newer state of an earlier one, so two turns of the same conversation are
never paired. A turn and a memory of another conversation (or of none) are paired at
their own threshold (``turns``; 0 pairs none). Only memories by one owner are paired (the
same agent, crew and resource, as the supersession rule requires): a later turn of the
other speaker is a reply, not the newer state of what the first said.

A newer memory of lower base importance does not take the older one's place: an info
note restating an error-level regression is not its new state, and between two such
near-equal matches importance decides (seed 000's cosine x importance).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


def same_subject(
    vectors: Mapping[str, npt.NDArray[np.float32]],
    conversation: Mapping[str, str | None],
    ts: Mapping[str, datetime],
    records: Mapping[str, float],
    turns: Mapping[str, float],
    owner: Mapping[str, Hashable] | None = None,
) -> dict[str, list[tuple[str, float]]]:
    """Each id's newer memories about the same subject, as (id, cosine), closest first.

    A newer memory ``n`` is about an older one's subject at cosine >= its own threshold
    (what its text says of change decides it): ``records[n]`` when both are outside
    conversations, ``turns[n]`` when either is a turn, and never when both are turns of
    one conversation, nor (``owner`` given) when they are not by the same owner: what
    another says later is not the newer state of what one said. A threshold of 0 (or none
    given) pairs nothing; ids with no vector have no partner."""
    ids = sorted(vectors)
    out: dict[str, list[tuple[str, float]]] = {i: [] for i in ids}
    if len(ids) < 2:
        return out
    # Imported here: a recall with no vectors (keyword-only, an agent's hook) never gets
    # here, and importing numpy was a third of its time.
    import numpy as np

    matrix = np.stack([np.asarray(vectors[i], dtype=np.float64) for i in ids])
    norms = np.linalg.norm(matrix, axis=1)
    norms[norms == 0] = 1.0
    unit = matrix / norms[:, None]
    cosines = unit @ unit.T
    # Every (older a, newer b) pair at once: a recall's head holds up to a hundred ids.
    n = len(ids)
    # Times by rank, compared exactly (a float of seconds would blur microseconds).
    rank = {t: k for k, t in enumerate(sorted({ts[i] for i in ids}))}
    when = np.array([rank[ts[i]] for i in ids])
    chats = [conversation.get(i) for i in ids]
    outside = np.array([c is None for c in chats])
    codes = {c: k for k, c in enumerate(dict.fromkeys(c for c in chats if c is not None))}
    # No conversation is its own code, so it is never "the same conversation".
    chat = np.array([codes[c] if c is not None else -1 - k for k, c in enumerate(chats)])
    on_records = np.array([records.get(i, 0.0) for i in ids])
    on_turns = np.array([turns.get(i, 0.0) for i in ids])
    owners = {o: k for k, o in enumerate(dict.fromkeys((owner or {}).get(i) for i in ids))}
    whose = np.array([owners[(owner or {}).get(i)] for i in ids])
    threshold = np.where(outside[:, None] & outside[None, :], on_records, on_turns)
    pairs = (
        (when[None, :] > when[:, None])
        & (chat[:, None] != chat[None, :])
        & (whose[:, None] == whose[None, :])
        & (threshold > 0)
        & (cosines >= threshold)
    )
    pairs[np.arange(n), np.arange(n)] = False
    for a, b in zip(*np.nonzero(pairs), strict=True):
        out[ids[a]].append((ids[b], float(cosines[a, b])))
    for partners in out.values():
        partners.sort(key=lambda pair: (-pair[1], pair[0]))
    return out


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


def older_below_newer(
    ranked: Sequence[tuple[str, float]],
    similar: Mapping[str, Sequence[tuple[str, float]]],
    ts: Mapping[str, datetime],
    base: Mapping[str, float] | None = None,
) -> list[tuple[str, float]]:
    """``ranked`` (id, score) best first with each older memory of a pair moved to just
    below the lowest of its newer ones; the ids in between move up one place, no id
    enters or leaves. A moved id takes the score of the one above it, so scores still
    fall. The same guards as ``newest_first``: only a newer partner (and not one of lower
    base importance) moves an older one."""
    present = {memory_id for memory_id, _ in ranked}
    waits: dict[str, set[str]] = {
        memory_id: {
            other
            for other, _ in similar.get(memory_id, ())
            if other in present
            and ts[other] > ts[memory_id]
            and (base is None or base[other] >= base[memory_id])
        }
        for memory_id, _ in ranked
    }
    # The first id in the old order whose newer partners are all placed goes next: an
    # older one waits just until its last newer one is placed, the rest keep their order.
    left = list(ranked)
    out: list[tuple[str, float]] = []
    placed: set[str] = set()
    while left:
        pick = next((n for n, (memory_id, _) in enumerate(left) if waits[memory_id] <= placed), 0)
        memory_id, score = left.pop(pick)
        out.append((memory_id, min(score, out[-1][1]) if out else score))
        placed.add(memory_id)
    return out
