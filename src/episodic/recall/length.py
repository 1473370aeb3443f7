"""The soft length prior's step in a recall: the ranking scored with the prior, settled
as the query should see it (``scoring/prior.py``: ``settle_length_prior``), and shown in
the trace.

The pure rule (the prior, its fusion with the plain ranking, the per-query gate) lives in
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
from episodic.scoring.prior import long_margin, settle_length_prior

# The trace's stage for this step: the ranking after it, each long memory's length and
# the query's long margin (what the gate compares) in its detail.
STAGE = "length prior"


def settles(policy: RecallPolicy) -> bool:
    """Whether ``policy`` settles the prior's ranking at all: a prior that is neither
    fused with the plain ranking nor gated leaves the re-ranked order as it is."""
    return policy.length_prior > 0 and (policy.length_share < 1 or policy.length_gate > 0)


def settle(
    ranked: Sequence[tuple[str, float]],
    length: Callable[[str], int],
    dense: Sequence[Candidate],
    policy: RecallPolicy,
    trace: Trace | None = None,
) -> list[tuple[str, float]]:
    """``ranked`` (re-ranked with the prior; ``length(id)`` the characters of each) as
    the query should see it under ``policy``; with ``trace``, the result as a stage."""
    # Capped where the re-rank's prior caps it (recall/rerank.py).
    chars = {i: min(length(i), MAX_CONTENT_CHARS) for i, _ in ranked}
    cosines = {c.memory_id: c.score for c in dense}
    settled = settle_length_prior(
        ranked,
        chars,
        cosines,
        policy.length_prior,
        share=policy.length_share,
        k=policy.length_rank_k,
        gate=policy.length_gate,
        top=policy.length_gate_top,
    )
    if trace is not None:
        margin = long_margin(cosines, chars, policy.length_gate_top)
        detail = {
            i: {"chars": float(chars[i]), "long_margin": margin}
            for i, _ in settled
            if chars[i] > PASSAGE_CHARS
        }
        trace.add_stage(STAGE, settled, detail)
    return settled
