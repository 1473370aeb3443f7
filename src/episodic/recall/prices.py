"""What a recall's context steps and blend read of long memories: each source's score
after the length price (``policy.neighbour_length_prior``, ``conversation_length_prior``)
and the blend's share where long memories were found (``policy.long_blend_dense``); a
query the length gate lifts is left as it is, as the length and keep steps leave it the
plain ranking. The pure parts live in ``scoring/prior.py`` and ``scoring/context.py``;
this step reads the lengths they need (small rows, filled once per recall).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from episodic.config import MAX_CONTENT_CHARS
from episodic.model import Candidate, Memory
from episodic.recall.policies import Fusion, Leg, RecallPolicy
from episodic.scoring.passages import PASSAGE_CHARS
from episodic.scoring.prior import length_prices, long_margin
from episodic.store.search import SearchStore


def context_prices(
    store: SearchStore,
    workspace_id: str,
    strength: float,
    ranked: Sequence[tuple[str, float]],
    memories: dict[str, Memory],
    lengths: dict[str, int],
) -> dict[str, float] | None:
    """The length price at ``strength`` of each of ``ranked`` over one passage: what a
    context step reads of its score (``policy.neighbour_length_prior``,
    ``conversation_length_prior``); None when it prices none."""
    if strength <= 0 or not ranked:
        return None
    ids = [i for i, _ in ranked]
    read_lengths(store, workspace_id, ids, memories, lengths)
    return length_prices(_capped(lengths, ids), strength)


def read_lengths(
    store: SearchStore,
    workspace_id: str,
    ids: Sequence[str],
    memories: dict[str, Memory],
    lengths: dict[str, int],
) -> None:
    """Each of ``ids``'s length into ``lengths``: from the rows already read, else the
    small rows (a whole row when the store kept no length)."""
    lengths.update((i, len(memories[i].content)) for i in ids if i in memories)
    rows = store.rank_rows(workspace_id, [i for i in ids if i not in lengths])
    lengths.update((i, r.chars) for i, r in rows.items() if r.chars is not None)
    unknown = [i for i in ids if i not in lengths]
    if unknown:
        memories.update((m.id, m) for m in store.get_memories(workspace_id, unknown))
        lengths.update((i, len(memories[i].content)) for i in unknown if i in memories)


def blend_for(
    store: SearchStore,
    workspace_id: str,
    policy: RecallPolicy,
    legs: Mapping[str, Sequence[Candidate]],
    memories: dict[str, Memory],
    lengths: dict[str, int],
) -> RecallPolicy:
    """``policy``, or with the blend's dense share ``policy.long_blend_dense`` when the
    legs found a memory over one passage and the length gate does not lift the query:
    long answers repeat the query's words, which the keyword leg counts as matches."""
    share = policy.long_blend_dense
    if share <= 0 or policy.fusion is not Fusion.BLEND:
        return policy
    found = list(dict.fromkeys(c.memory_id for leg in legs.values() for c in leg))
    read_lengths(store, workspace_id, found, memories, lengths)
    capped = _capped(lengths, found)
    if all(n <= PASSAGE_CHARS for n in capped.values()):
        return policy
    cosines = {c.memory_id: c.score for c in legs.get(Leg.DENSE.value, [])}
    if _gate_lifts(policy, cosines, capped):
        return policy
    total = policy.blend_dense + policy.blend_sparse
    return replace(policy, blend_dense=share * total, blend_sparse=(1.0 - share) * total)


def ungated(
    price: dict[str, float] | None,
    policy: RecallPolicy,
    cosines: Mapping[str, float],
    lengths: Mapping[str, int],
) -> dict[str, float] | None:
    """``price``, or None for a query the length gate lifts: its long memories match it
    clearly better than its short ones (``long_margin``), so it asks for long answers
    whole, the length step gives it the plain ranking and the keep step moves nothing;
    its context steps read the whole scores too."""
    if price is None or _gate_lifts(policy, cosines, _capped(lengths, lengths)):
        return None
    return price


def _capped(lengths: Mapping[str, int], ids: Iterable[str]) -> dict[str, int]:
    """The lengths of ``ids`` that are known, capped where the re-rank's prior caps them."""
    return {i: min(lengths[i], MAX_CONTENT_CHARS) for i in ids if i in lengths}


def _gate_lifts(
    policy: RecallPolicy, cosines: Mapping[str, float], capped: Mapping[str, int]
) -> bool:
    """Whether the length gate lifts the query: its long memories match it clearly better
    than its short ones (``long_margin``)."""
    gate = policy.length_gate
    return gate > 0 and long_margin(cosines, capped, policy.length_gate_top) >= gate
