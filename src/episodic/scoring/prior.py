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

# The share of a score that importance governs. At 0.3 the least important memory keeps
# 70% of its score: a match about 1.4 times better still wins against the most important
# one. LoCoMo cannot set this (every turn there has the same importance): it is a
# judgement, bounded so that relevance stays first.
IMPORTANCE_PRIOR_WEIGHT = 0.3


def importance_prior(importance: float, weight: float = IMPORTANCE_PRIOR_WEIGHT) -> float:
    """``(1 - w) + w x clamp01(importance)``, in ``[1 - w, 1]``."""
    w = clamp01(weight)
    return (1.0 - w) + w * clamp01(importance)
