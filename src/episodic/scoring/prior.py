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

from episodic.scoring.decay import clamp01
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


def length_prior_floor(strength: float, longest: int) -> float:
    """The least ``length_prior`` gives: a memory as long as a memory may be
    (``longest`` characters)."""
    return length_prior(longest, strength)
