"""A standing rule the question touches keeps a place near the top (policy.rule_keep_margin).

A user lays a rule down once ("Always include the status codes when I ask about API
errors") and then asks about the topic in other words. The answers and questions on that
topic share more of the question's words than the rule does, and fusion ranks them
above it; the dense leg often finds the rule among its best. This step takes, of the
dense leg's first ``rule_keep_depth`` candidates, the best short one (one passage at
most) that lays a rule down (``write/directives.py``: "Always ...", "Never ...", "from
now on ...", "I want you to ...") and matches
the query within ``rule_keep_margin`` in cosine of the leg's best, and ranks it no lower
than place ``rule_keep_rank``. A rule that names its speaker ("... when I ask about
errors": ``states_own_rule``) says how they want every answer on the topic given, and a
question asked in other words may match it well below the best: such a rule is kept the
same way from anywhere in the dense leg within ``rule_keep_own_margin`` of its best. One
rule at most: the step never fills the head with rules.

Two things keep it safe on chats between people, where "always" and "never" are
everyday words: only a sentence that lays a rule down counts ("I never liked it" does
not), and a rule far below the best match is not what the question is about.
It reads the text alone of the short candidates within the margins only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from episodic.model import Candidate
from episodic.recall.policies import RecallPolicy
from episodic.recall.trace import Trace
from episodic.scoring.leg_heads import keep_leg_heads
from episodic.scoring.passages import PASSAGE_CHARS
from episodic.write.directives import states_own_rule, states_standing_rule

STAGE = "keep:rule"


def rule_to_keep(
    dense: Sequence[Candidate],
    policy: RecallPolicy,
    chars: Callable[[str], int | None],
    read: Callable[[Sequence[str]], Mapping[str, str]],
) -> str | None:
    """The id of the rule ``policy`` keeps near the top, if any: the dense leg's best
    short candidate stating a rule within the margin of the leg's best score (among its
    first ``rule_keep_depth``), or one naming its speaker within the own rule's margin.
    ``chars(id)`` is a memory's length (None when unknown: its text tells); ``read(ids)``
    their contents, in one read (an id it cannot read is left out)."""
    if not keeps_rule(policy) or not dense:
        return None
    best = dense[0].score
    margin, own = policy.rule_keep_margin, policy.rule_keep_own_margin
    # The short candidates either reading may take, best first, each with whether any
    # rule counts there (the margin's head) or only one naming its speaker. The leg is
    # sorted: past the margin's head and below both floors, nothing further is taken.
    floor = best - max(margin, own)
    near: list[tuple[str, bool]] = []
    for n, c in enumerate(dense):
        if c.score < floor and n >= policy.rule_keep_depth:
            break
        any_rule = margin > 0 and n < policy.rule_keep_depth and c.score >= best - margin
        if not any_rule and not (own > 0 and c.score >= best - own):
            continue
        size = chars(c.memory_id)
        if size is None or size <= PASSAGE_CHARS:
            near.append((c.memory_id, any_rule))
    if not near:
        return None
    contents = read([i for i, _ in near])
    for i, any_rule in near:  # best first
        content = contents.get(i)
        if content is None or len(content) > PASSAGE_CHARS:
            continue
        if states_standing_rule(content) if any_rule else states_own_rule(content):
            return i
    return None


def keep_rule(
    ranked: Sequence[tuple[str, float]],
    rule: str | None,
    policy: RecallPolicy,
    trace: Trace | None = None,
) -> list[tuple[str, float]]:
    """``ranked`` with ``rule`` no lower than place ``policy.rule_keep_rank`` (it passes
    any memory on the way up); the trace shows where it came from."""
    if rule is None:
        return list(ranked)
    kept, moved = keep_leg_heads(ranked, [rule], policy.rule_keep_rank)
    if trace is not None:
        # A second pass over a deeper head replaces the first one's stage.
        trace.stages.pop(STAGE, None)
        trace.add_stage(STAGE, kept, {i: {"from": float(p)} for i, p in moved.items()})
    return kept


def keeps_rule(policy: RecallPolicy) -> bool:
    """Whether ``policy`` runs this step."""
    return policy.rule_keep_margin > 0 or policy.rule_keep_own_margin > 0
