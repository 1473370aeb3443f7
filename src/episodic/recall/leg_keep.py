"""Each leg's best few keep a place near the top of a recall's ranking (policy.leg_keep,
policy.long_keep), shown in the trace.

The pure rule lives in ``scoring/leg_heads.py``. This step picks each leg's best that
count and what they may pass: with ``leg_keep_chars``, short memories only, passing long
ones only (what pushed a short message down was the long answers' many chances to
match); with ``long_keep``, the mirror: each leg's best few long memories, passing any
memory or short ones only (what pushed a long answer a summary needs down was the length
prior). It leaves alone a query whose long memories match it clearly better than its
short ones (the length gate's ``long_margin``: it asks for long answers whole, as a
summary does, and lifting short messages would push them out), and says in the trace
what it did. It is the one place the engine calls the rule from.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import islice

from episodic.config import MAX_CONTENT_CHARS
from episodic.model import Candidate
from episodic.recall.policies import Leg, RecallPolicy
from episodic.recall.trace import Trace
from episodic.scoring.leg_heads import keep_leg_heads, keep_long_heads, leads_long, leg_heads
from episodic.scoring.passages import PASSAGE_CHARS
from episodic.scoring.prior import long_margin

# The legs whose best few are kept: the dense and the keyword leg alike.
HEAD_LEGS = (Leg.DENSE.value, Leg.SPARSE.value)
# The trace's stage: "keep:legs" when the step ran (each moved candidate's detail is the
# place it came from), "keep:long" when the query asks for long answers and nothing moved.
STAGE = "keep:"


def stage_of(trace: Trace) -> str | None:
    """The name of the stage this step left in ``trace``, if any."""
    return next((name for name in trace.stages if name.startswith(STAGE)), None)


def keep_heads(
    ranked: Sequence[tuple[str, float]],
    legs: dict[str, list[Candidate]],
    policy: RecallPolicy,
    chars: Callable[[str], int | None],
    trace: Trace | None = None,
) -> list[tuple[str, float]]:
    """``ranked`` with each leg's first ``policy.leg_keep`` ids no lower than place
    ``policy.leg_keep_rank``, then each leg's first ``policy.long_keep`` long ones no
    lower than place ``policy.long_keep_rank``; ``chars(id)`` is a memory's length, None
    when its row was not read. The step reads no row: with ``leg_keep_chars``, a memory
    whose row was not read counts neither as short nor as long (the ranking reads every
    row when some memory in the workspace is long; when none is, nothing could pass
    one)."""
    limit = policy.leg_keep_chars
    lengths = {i: min(n, MAX_CONTENT_CHARS) for i, _ in ranked if (n := chars(i)) is not None}
    longest = max(lengths.values(), default=0)
    if limit > 0 and longest <= min(limit, PASSAGE_CHARS):
        # Nothing a short memory may pass, and no long memory for the gate to weigh (its
        # margin is 0): nothing moves. A workspace of short memories (all of LoCoMo)
        # ends here; the stage is shown as when the step runs.
        if trace is not None:
            _replace_stage(trace, STAGE + "legs", list(ranked), {})
        return list(ranked)
    dense = {c.memory_id: c.score for c in legs.get(Leg.DENSE.value, [])}
    # The length step's gate, on the same cosines and lengths: the query it lifts asks
    # for long answers, and the plain ranking it took already holds them; neither keep
    # moves anything for it (the short one would push those answers out, the long one
    # has nothing left to restore).
    if (limit > 0 or policy.long_keep > 0) and 0 < policy.length_gate <= long_margin(
        dense, lengths, policy.length_gate_top
    ):
        if trace is not None:
            _replace_stage(trace, STAGE + "long", list(ranked), {})
        return list(ranked)

    def counts(i: str) -> bool:
        if limit <= 0:
            return True
        n = chars(i)
        return n is not None and n <= limit

    firsts = [
        list(islice((c.memory_id for c in legs.get(g, []) if counts(c.memory_id)), policy.leg_keep))
        for g in HEAD_LEGS
    ]
    # Short ones pass long memories only: what pushed them down was length.
    longer = {i for i, n in lengths.items() if n > limit} if limit > 0 else None
    heads = leg_heads(firsts, policy.leg_keep)
    kept, moved = keep_leg_heads(ranked, heads, policy.leg_keep_rank, longer)
    detail = {i: {"from": float(p)} for i, p in moved.items()}
    long = limit if limit > 0 else PASSAGE_CHARS
    dense_ids = [c.memory_id for c in legs.get(Leg.DENSE.value, [])]
    if policy.long_keep > 0 and leads_long(dense_ids, lengths, long, policy.long_keep_lead):
        # After the short keep, so each leg's best long answers hold their place: they
        # pass any memory (with long_keep_chars, short ones only), the short keep's too
        # when those sit below place long_keep_rank. Long is over leg_keep_chars, or one
        # passage when that is 0.
        was = {i: place for place, (i, _) in enumerate(ranked, start=1)}
        kept, lifted = keep_long_heads(
            kept,
            [[c.memory_id for c in legs.get(g, [])] for g in HEAD_LEGS],
            lengths,
            long,
            policy.long_keep,
            policy.long_keep_rank,
            policy.long_keep_chars,
        )
        detail |= {i: {"from": float(was[i]), "chars": float(lengths[i])} for i in lifted}
    if trace is not None:
        _replace_stage(trace, STAGE + "legs", kept, detail)
    return kept


def keeps(policy: RecallPolicy) -> bool:
    """Whether ``policy`` runs this step: it keeps each leg's best few, short or long."""
    return policy.leg_keep > 0 or policy.long_keep > 0


def _replace_stage(
    trace: Trace, name: str, ranked: list[tuple[str, float]], detail: dict[str, dict[str, float]]
) -> None:
    # A second pass over a deeper head replaces the first one's stage.
    if (old := stage_of(trace)) is not None:
        del trace.stages[old]
    trace.add_stage(name, ranked, detail)
