"""FSRS retrievability: how likely a memory is still recalled after ``t`` days.

FSRS-6 (seed 003, via the ``fsrs`` package's default parameters):
``R(t, S) = (1 + factor x t / S) ^ -decay`` with ``factor = 0.9 ^ (1 / -decay) - 1``, so
that ``R(S, S) = 0.9``: stability is the number of days until recall drops to 90%.
A new episode starts at the stability of a first "Good" review, boosted by surprise:
``S0 x (1 + 0.5 x surprise)``.
"""

from __future__ import annotations

from datetime import UTC, datetime

from fsrs import Card, Rating, Scheduler

_DEFAULT_PARAMETERS = Scheduler().parameters
# Index 20 of FSRS-6's parameters is the forgetting-curve decay; 0..3 are the initial
# stabilities after a first Again / Hard / Good / Easy.
FSRS_DECAY = float(_DEFAULT_PARAMETERS[20])
INITIAL_STABILITY_GOOD_DAYS = float(_DEFAULT_PARAMETERS[Rating.Good.value - 1])
SURPRISE_STABILITY_BOOST = 0.5


def _first_good_review() -> tuple[float, float]:
    # The package's own scheduler decides a new card's state after a first "Good", so the
    # numbers follow its FSRS-6 defaults rather than a copy of its formulas.
    card, _ = Scheduler(enable_fuzzing=False).review_card(
        Card(), Rating.Good, review_datetime=datetime(2000, 1, 1, tzinfo=UTC)
    )
    assert card.stability is not None and card.difficulty is not None
    return float(card.stability), float(card.difficulty)


INITIAL_DIFFICULTY_GOOD = _first_good_review()[1]


def retrievability(elapsed_days: float, stability_days: float, decay: float = FSRS_DECAY) -> float:
    """FSRS-6 forgetting curve; 1.0 at t = 0, 0.9 at t = S, falling slowly after."""
    if stability_days <= 0:
        return 0.0
    t = max(0.0, elapsed_days)
    factor = 0.9 ** (1.0 / -decay) - 1.0
    return float((1.0 + factor * t / stability_days) ** -decay)


def initial_stability(surprise: float = 0.0) -> float:
    """Seed 003: a new episode's stability, ``S0(Good) x (1 + 0.5 x surprise)``."""
    clamped = min(1.0, max(0.0, surprise))
    return INITIAL_STABILITY_GOOD_DAYS * (1.0 + SURPRISE_STABILITY_BOOST * clamped)


def initial_difficulty() -> float:
    """Seed 003: a new episode's FSRS difficulty, that of a first "Good" review (1..10)."""
    return INITIAL_DIFFICULTY_GOOD
