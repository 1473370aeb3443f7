"""Importance as a bounded prior on a relevance score.

Seed 000 multiplies relevance by importance outright (``cosine x importance``): a memory
of importance 0.05 then needs twenty times the relevance of one at 1.0. As a prior, the
score keeps a floor share whatever the importance:
``score x ((1 - w) + w x importance)``, with ``w = IMPORTANCE_PRIOR_WEIGHT``. Between the
least and the most important memory the factor moves by ``w``, so importance decides
among comparable matches (a fresh regression over a stale note of the same words) and
cannot bury a clearly better one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from episodic.scoring.decay import clamp01
from episodic.scoring.fusion import RRF_K, rrf
from episodic.scoring.passages import PASSAGE_CHARS

# The share of a score that importance governs. At 0.3 the least important memory keeps
# 70% of its score: a match about 1.4 times better still wins against the most important
# one. LoCoMo cannot set this (every turn there has the same importance): it is a
# judgement, bounded so that relevance stays first.
IMPORTANCE_PRIOR_WEIGHT = 0.3


def importance_prior(importance: float, weight: float = IMPORTANCE_PRIOR_WEIGHT) -> float:
    """``(1 - w) + w x clamp01(importance)``, in ``[1 - w, 1]``."""
    w = clamp01(weight)
    return (1.0 - w) + w * clamp01(importance)


def length_prior(chars: int, strength: float) -> float:
    """``(PASSAGE_CHARS / chars) ^ strength`` for a memory longer than one passage, 1 for
    one that fits in a passage (or with ``strength`` 0).

    A long memory is many passages, each a chance to match the query's words and meaning:
    a 5,000-character answer that talks around a subject outranks the one-line message
    that states it. This is the price of those chances, growing slowly with the length
    (at 0.2, a 4,000-character memory keeps 76% of its score, a 16,000-character one
    57%); short memories are untouched."""
    if strength <= 0 or chars <= PASSAGE_CHARS:
        return 1.0
    return float((PASSAGE_CHARS / chars) ** strength)


def length_prices(chars: Mapping[str, int], strength: float) -> dict[str, float]:
    """Each memory's ``length_prior`` at ``strength`` from its length in ``chars``, for the
    memories that pay it (the others' price is 1 and left out)."""
    if strength <= 0:
        return {}
    return {i: length_prior(n, strength) for i, n in chars.items() if n > PASSAGE_CHARS}


def length_prior_floor(strength: float, longest: int) -> float:
    """The least ``length_prior`` gives: a memory as long as a memory may be
    (``longest`` characters)."""
    return length_prior(longest, strength)


def mix_length_prior(
    ranked: Sequence[tuple[str, float]],
    chars: Mapping[str, int],
    strength: float,
    share: float,
    k: int = RRF_K,
) -> list[tuple[str, float]]:
    """``ranked`` (best first, scored with the length prior of ``strength``) re-ordered
    by a reciprocal rank fusion of two rankings: the one given (weight ``share``) and the
    one without the prior, each score divided by its memory's ``length_prior`` from its
    length in ``chars`` (weight ``1 - share``).

    The prior alone pushes out every long answer, also those a question needs whole (a
    summary's evidence is several long answers, which the dense leg ranks first); in the
    fusion a long memory that the plain ranking places high keeps a place. The result
    keeps the scores of ``ranked`` in their order (the i-th place gets the i-th best
    score): only which memory holds each place changes, so what is compared with those
    scores later (memories past the ranked head) stays on the same scale. A ``share`` of
    1 or more, or no prior, returns ``ranked`` as it is."""
    if share >= 1.0 or strength <= 0 or len(ranked) < 2:
        return list(ranked)
    w = max(share, 0.0)
    with_prior = [i for i, _ in ranked]

    def plain(pair: tuple[str, float]) -> float:
        return pair[1] / length_prior(chars.get(pair[0], 0), strength)

    without = [i for i, _ in sorted(ranked, key=plain, reverse=True)]
    fused = rrf([with_prior, without], k, (w, 1.0 - w))
    scores = sorted((s for _, s in ranked), reverse=True)
    return [(i, s) for (i, _), s in zip(fused, scores, strict=True)]


def long_margin(cosines: Mapping[str, float], chars: Mapping[str, int], top: int) -> float:
    """How much better the query's best long memories match it than its best short ones:
    the mean dense cosine of the ``top`` best memories longer than one passage minus that
    of the ``top`` best others, among those in ``cosines``; 0 when either kind is
    missing.

    A question that asks for a whole thread ("summarise how my project went") is matched
    best by the long answers that hold it, all of them; one about something the user said
    once is matched about as well by that short message as by the long answers around
    it, which only repeat its words."""
    long = sorted((c for i, c in cosines.items() if chars.get(i, 0) > PASSAGE_CHARS), reverse=True)
    short = sorted(
        (c for i, c in cosines.items() if 0 < chars.get(i, 0) <= PASSAGE_CHARS), reverse=True
    )
    if not long or not short or top < 1:
        return 0.0
    return sum(long[:top]) / len(long[:top]) - sum(short[:top]) / len(short[:top])


def head_gap(cosines: Mapping[str, float], depth: int) -> float:
    """How far the query's best dense match stands above its ``depth``-th best: the
    difference of their cosines, 0 or more. Infinite when fewer than ``depth`` (or under
    2) memories matched: too few to call the head level.

    A small gap is a level head: several memories match the query about equally and none
    stands out, as when long answers that each repeat the query's words crowd the one
    message that says what was asked."""
    if depth < 2 or len(cosines) < depth:
        return math.inf
    best = sorted(cosines.values(), reverse=True)
    return best[0] - best[depth - 1]


def length_share_for(
    chars: Mapping[str, int],
    cosines: Mapping[str, float],
    *,
    share: float,
    gate: float,
    top: int,
    level: float = 0.0,
    level_depth: int = 3,
) -> float:
    """The share of the prior's ranking the query takes in ``mix_length_prior``: 0 (the
    ranking without the prior) when its long memories match it by ``gate`` or more better
    than its short ones (``long_margin`` over the ``top`` best of each, a positive
    ``gate``; 0 never lifts the prior); else 1 (the prior's ranking alone) when its dense
    head is level (``head_gap`` at ``level_depth`` under a positive ``level``; 0 never);
    else ``share``."""
    if gate > 0 and long_margin(cosines, chars, top) >= gate:
        return 0.0
    if level > 0 and head_gap(cosines, level_depth) < level:
        return 1.0
    return share
