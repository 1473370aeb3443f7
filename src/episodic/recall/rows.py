"""What ranking reads of each candidate: a small row (``RankRow``) for every candidate,
the whole row only for those that reach the top.

The soft length prior ranks with two orders at once, the prior's and the plain one, fused
by rank (``scoring/prior.py``). A candidate far down the fused list can still take a
first place in that fusion, so no bound on the fused score leaves a candidate out: every
candidate's final score is needed. Read as whole rows, that was every candidate's text,
payload and sources (a long memory's text spans overflow pages): ~120 rows a BEAM recall,
where ~50 reach the steps that need a whole row. The final score needs only the columns
``default``'s factors and the time boost read, and the memory's length, which the store
keeps in ``memory_lengths``; ranking from those is the same arithmetic on the same
values, so the hits are the ones whole rows give. A workspace whose longest memory fits in
one passage (the store keeps that too) ranks as before: no candidate pays the prior, and
the bound on the fused score already spares the rows below the top.

Whether the workspace holds a long memory comes with the first whole rows a recall reads,
its leaders' (the first places of the fused list, which ranking reads whole either way),
in one snapshot and, on PostgreSQL, one statement: no round trip of its own, and never
stale (a long memory written before the recall's snapshot is seen by it).
"""

from __future__ import annotations

from collections.abc import Sequence

from episodic.model import Memory
from episodic.recall.length import settles
from episodic.recall.policies import Diversity, RecallPolicy
from episodic.recall.rerank import Rerank
from episodic.scoring.passages import PASSAGE_CHARS
from episodic.store.search import RankRow, SearchStore


def rank_rows(
    store: SearchStore,
    workspace_id: str,
    policy: RecallPolicy,
    rerank: Rerank,
    ranked: Sequence[tuple[str, float]],
    memories: dict[str, Memory],
    depth: int,
) -> dict[str, RankRow] | None:
    """The ``RankRow`` of each candidate of ``ranked`` (fused, best first), their
    factors kept in ``rerank``, when ranking can work from them alone: the policy settles
    the length prior (where every candidate's final score is needed) with factors a
    ``RankRow`` holds, and every row has its length. None when it cannot: whole rows are
    read as before. (A memory the store has no length for is one written past the
    store's triggers; it is ranked from its whole row, never with a guessed length.)

    The first ``depth`` candidates' whole rows are read into ``memories`` on the way
    (ranking reads them either way: the bound on the rest starts from their final
    scores), with the workspace's longest memory. Without small rows the length step
    (``recall/length.py``) still measures the head from whole rows: a memory written
    past the store's triggers has no kept length, and the longest kept is no proof that
    none is long."""
    if not settles(policy) or policy.diversity is Diversity.MMR or not rerank.from_rows():
        return None
    leaders = [i for i, _ in ranked[:depth] if i not in memories]
    found, longest = store.memories_and_longest(workspace_id, leaders)
    memories.update((m.id, m) for m in found)
    if longest <= PASSAGE_CHARS:
        # No memory pays the prior: the fused score bounds the final one as without it,
        # and whole rows are read only for the candidates that can reach the top.
        return None
    rows = store.rank_rows(workspace_id, [i for i, _ in ranked if i not in memories])
    if any(r.chars is None for r in rows.values()):
        return None
    # The leaders' whole rows hold what their small rows would: no second read.
    rows.update(
        (i, RankRow(m.id, m.importance, m.agent, m.crew, m.ts, len(m.content)))
        for i, _ in ranked
        if (m := memories.get(i)) is not None
    )
    rerank.prime(rows.values())
    return rows


def read_head(
    store: SearchStore,
    workspace_id: str,
    policy: RecallPolicy,
    rerank: Rerank,
    ids: Sequence[str],
    memories: dict[str, Memory],
    small: dict[str, RankRow],
) -> None:
    """Make each of ``ids`` (a head to re-rank) rankable: its small row into ``small``,
    its factors kept in ``rerank``, when the policy's factors read no more (its length
    too, when the policy prices length); else its whole row into ``memories``. Below the
    leaders a head holds candidates that rarely reach the places whose whole rows the
    later steps read (one per source, the hits): a small row costs about half a whole
    one, the text, payload and sources left unread."""
    missing = [i for i in ids if i not in memories and i not in small]
    if not missing:
        return
    if policy.diversity is not Diversity.MMR and rerank.from_rows():
        found = store.rank_rows(workspace_id, missing)
        usable = {i: r for i, r in found.items() if r.chars is not None or policy.length_prior <= 0}
        rerank.prime(usable.values())
        small.update(usable)
        # A row without a kept length is read whole: its length is never guessed.
        missing = [i for i in found if i not in usable]
    if missing:
        memories.update((m.id, m) for m in store.get_memories(workspace_id, missing))
