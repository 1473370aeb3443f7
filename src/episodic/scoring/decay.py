"""Time and use: how importance fades with age and lifts with recall.

Three seeds, three curves, all pure functions of plain numbers:

- seed 000 (Crewship): linear decay to a floor, boosted by how often a memory was recalled;
- seed 001 (TeaParty): exponential decay with a 90-day half-life, multiplied by reinforcement
  (``reinforcement_count``: the sessions that retrieved the entry, kept in the payload);
- seed 004 (n8n): a 180-day half-life recency weight.

Negative ages (clock skew, a future timestamp) are treated as age 0 so that a bad clock
can never push a score above what a brand-new entry gets.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

# Seed 000
DECAY_HORIZON_DAYS = 180  # linear recency reaches the floor at this age
DECAY_FLOOR = 0.1  # old-but-critical memories never decay to zero
REFERENCE_BOOST_DIVISOR = 8  # keeps recall feedback loops from swamping base importance

# Seed 001
HALF_LIFE_DAYS = 90
PROMINENCE_DECAY_FLOOR = 0.1  # applied to the decay term, not to the final prominence

# Where seed 001's reinforcement lives: payload fields, as in TeaParty's frontmatter.
REINFORCEMENT_COUNT = "reinforcement_count"
LAST_REINFORCED = "last_reinforced"
# A count past this is read as this: no session count gets near it, and it keeps a
# hand-edited absurd value from overflowing the arithmetic. A stored number of 10**18 or
# more is not a count at all and reads as 0 (a bigint holds it in SQL). The SQL twins in
# both backends read the payload the same way.
MAX_REINFORCEMENT = 1_000_000
REINFORCEMENT_LIMIT = 10**18

# Seed 004
RECENCY_HALF_LIFE_DAYS = 180


def clamp01(x: float) -> float:
    return min(1.0, max(0.0, x))


def recency_factor(days: float) -> float:
    """Seed 000: ``max(0.1, 1 - days / 180)``."""
    return max(DECAY_FLOOR, 1.0 - max(0.0, days) / DECAY_HORIZON_DAYS)


def reference_boost(refs: int) -> float:
    """Seed 000: ``log2(refs + 1)``; 0 for an entry never recalled."""
    return math.log2(max(0, refs) + 1)


def decayed_importance(base: float, days: float, refs: int) -> float:
    """Seed 000's nightly recompute:
    ``clamp01(base x recency_factor(days) x (1 + reference_boost(refs) / 8))``."""
    boost = 1.0 + reference_boost(refs) / REFERENCE_BOOST_DIVISOR
    return clamp01(base * recency_factor(days) * boost)


def prominence(
    importance: float, age_days: float, reinforcement_count: int, retired: bool = False
) -> float:
    """Seed 001:
    ``importance x max(0.1, exp(-ln2 / 90 x age_days)) x (1 + reinforcement_count)``,
    and 0 for a retired entry. Not clamped: reinforcement may lift it above 1."""
    if retired:
        return 0.0
    decay = math.exp(-math.log(2) / HALF_LIFE_DAYS * max(0.0, age_days))
    return importance * max(PROMINENCE_DECAY_FLOOR, decay) * (1 + max(0, reinforcement_count))


def reinforcement_of(payload: Mapping[str, Any]) -> int:
    """Seed 001's ``reinforcement_count`` from a memory's payload: a whole number from 0 to
    ``MAX_REINFORCEMENT``; anything else (absent, text, a fraction, a negative) counts 0."""
    value = payload.get(REINFORCEMENT_COUNT)
    if isinstance(value, bool) or not isinstance(value, int):
        return 0
    if not 0 <= value < REINFORCEMENT_LIMIT:
        return 0
    return min(value, MAX_REINFORCEMENT)


def prominence_importance(base: float, age_days: float, reinforcement_count: int) -> float:
    """The stored importance the nightly ``prominence`` decay writes: seed 001's
    prominence clamped to [0, 1], since importance is a [0, 1] scale everywhere it is
    read (render, crew_shared, admission floors). The recall-time factor stays unclamped:
    there reinforcement may lift a memory above an unreinforced one of equal importance."""
    return clamp01(prominence(base, age_days, reinforcement_count))


def recency_weight(age_days: float) -> float:
    """Seed 004: ``0.5 ** (age_days / 180)``; no floor."""
    return math.pow(0.5, max(0.0, age_days) / RECENCY_HALF_LIFE_DAYS)
