"""The length prior's last step in a recall: which ranking of the re-ranked head a query
sees (scoring/prior.py: ``length_share_for``, ``mix_length_prior``).

The head was cut with the prior in its scores (a lower cut), so it holds the first places
of the rankings with and without it: the plain ranking is the prior's scores divided by
each memory's factor, and either ranking, or their fusion, can be taken from it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from episodic.config import MAX_CONTENT_CHARS
from episodic.model import Memory
from episodic.recall.policies import RecallPolicy
from episodic.recall.trace import Trace
from episodic.scoring.passages import PASSAGE_CHARS
from episodic.scoring.prior import length_share_for, mix_length_prior

STAGE = "length:"


def settle_by_length(
    ranked: Sequence[tuple[str, float]],
    memories: Mapping[str, Memory],
    cosines: Mapping[str, float],
    policy: RecallPolicy,
    trace: Trace | None = None,
) -> list[tuple[str, float]]:
    """``ranked`` (every id in ``memories``, scored with ``policy``'s length prior) as the
    query should see it, by the query's dense ``cosines``: as it is when the policy takes
    the prior's ranking alone (no prior, a share of 1 and no gate). ``trace`` gets the
    ranking as stage "length:plain" (the gate lifted the prior), "length:prior" (the prior's
    ranking alone) or "length:fused", when a memory in it pays the prior."""
    if policy.length_prior <= 0 or (policy.length_share >= 1 and policy.length_gate <= 0):
        return list(ranked)
    chars = {i: min(len(memories[i].content), MAX_CONTENT_CHARS) for i, _ in ranked}
    if all(n <= PASSAGE_CHARS for n in chars.values()):
        return list(ranked)  # no memory pays the prior: both rankings are this one
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
        # A second pass over a deeper head replaces the first one's stage.
        for name in [n for n in trace.stages if n.startswith(STAGE)]:
            del trace.stages[name]
        trace.add_stage(STAGE + kind, settled)
    return settled
