"""The soft length prior's last step in a recall: which ranking of the re-ranked head a
query sees (``scoring/prior.py``: ``length_share_for``, ``mix_length_prior``), shown in
the trace.

The head was cut with the prior in its scores (a lower cut), so it holds the first places
of the rankings with and without it: the plain ranking is the prior's scores divided by
each memory's factor, and either ranking, or their fusion, can be taken from it. The pure
rule (the prior, the fusion, the per-query gate and level rule) lives in
``scoring/prior.py``; this step gathers what it reads from the recall (each ranked
memory's length, the dense leg's cosines) and says in the trace what it did. It is the
one place the engine calls the rule from.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from episodic.config import MAX_CONTENT_CHARS
from episodic.model import Candidate
from episodic.recall.policies import RecallPolicy
from episodic.recall.trace import Trace
from episodic.scoring.passages import PASSAGE_CHARS
from episodic.scoring.prior import length_share_for, long_margin, mix_length_prior

# The trace's stage for this step is named for the ranking the query took:
# "length:plain" (the gate lifted the prior), "length:prior" (the prior's ranking alone)
# or "length:fused"; its detail gives each long memory's length and the query's long
# margin (what the gate compares).
STAGE = "length:"


def settles(policy: RecallPolicy) -> bool:
    """Whether ``policy`` settles the prior's ranking at all: a prior that is neither
    fused with the plain ranking nor gated leaves the re-ranked order as it is."""
    return policy.length_prior > 0 and (policy.length_share < 1 or policy.length_gate > 0)


def stage_of(trace: Trace) -> str | None:
    """The name of the stage this step left in ``trace``, if any."""
    return next((name for name in trace.stages if name.startswith(STAGE)), None)


def settle(
    ranked: Sequence[tuple[str, float]],
    length: Callable[[str], int],
    dense: Sequence[Candidate],
    policy: RecallPolicy,
    trace: Trace | None = None,
) -> list[tuple[str, float]]:
    """``ranked`` (re-ranked with the prior; ``length(id)`` the characters of each) as
    the query should see it under ``policy``, by the dense leg's cosines; with ``trace``,
    the result as a stage when a memory in it pays the prior."""
    # Capped where the re-rank's prior caps it (recall/rerank.py).
    chars = {i: min(length(i), MAX_CONTENT_CHARS) for i, _ in ranked}
    if all(n <= PASSAGE_CHARS for n in chars.values()):
        return list(ranked)  # no memory pays the prior: both rankings are this one
    cosines = {c.memory_id: c.score for c in dense}
    share = length_share_for(
        chars,
        cosines,
        share=policy.length_share,
        gate=policy.length_gate,
        top=policy.length_gate_top,
        level=policy.length_level,
        level_depth=policy.length_level_depth,
    )
    settled = mix_length_prior(ranked, chars, policy.length_prior, share, policy.length_rank_k)
    if trace is not None:
        kind = "plain" if share <= 0 else "prior" if share >= 1 else "fused"
        margin = long_margin(cosines, chars, policy.length_gate_top)
        detail = {
            i: {"chars": float(chars[i]), "long_margin": margin}
            for i, _ in settled
            if chars[i] > PASSAGE_CHARS
        }
        # A second pass over a deeper head replaces the first one's stage.
        if (name := stage_of(trace)) is not None:
            del trace.stages[name]
        trace.add_stage(STAGE + kind, settled, detail)
    return settled
