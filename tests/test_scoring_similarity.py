"""Near-duplicate pairs (prefix filtering) and leader clusters, against brute force."""

from __future__ import annotations

import random

import numpy as np
import pytest

from episodic.scoring.mmr import jaccard
from episodic.scoring.similarity import leader_clusters, near_duplicates


def brute(sets: list[frozenset[str]], t: float) -> list[tuple[int, int, float]]:
    return [
        (i, j, jaccard(sets[i], sets[j]))
        for i in range(len(sets))
        for j in range(i + 1, len(sets))
        if sets[i] and sets[j] and jaccard(sets[i], sets[j]) > t
    ]


@pytest.mark.parametrize("threshold", [0.5, 0.8])
@pytest.mark.parametrize("seed", range(5))
def test_prefix_filtering_finds_exactly_the_brute_force_pairs(seed: int, threshold: float) -> None:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(30)]
    base = [frozenset(rng.sample(vocab, rng.randint(1, 9))) for _ in range(25)]
    # Near copies of some sets, so there are pairs to find.
    sets = base + [frozenset(list(s)[:-1]) | {rng.choice(vocab)} for s in base[:15]] + [frozenset()]
    assert near_duplicates(sets, threshold) == brute(sets, threshold)


def test_the_threshold_is_strict() -> None:
    five, four = frozenset("abcde"), frozenset("abcd")  # Jaccard exactly 0.8
    assert near_duplicates([five, four], 0.8) == []
    assert near_duplicates([five, four], 0.79) == [(0, 1, 0.8)]
    assert near_duplicates([frozenset(), frozenset()], 0.5) == []  # empty is not "the same"
    with pytest.raises(ValueError):
        near_duplicates([five], 1.0)


def test_leader_clusters_follow_the_order_and_cap_the_size() -> None:
    linked = np.zeros((6, 6), dtype=bool)
    for a, b in [(0, 1), (0, 2), (1, 3), (4, 5)]:
        linked[a, b] = linked[b, a] = True
    assert leader_clusters(linked, [0, 1, 2, 3, 4, 5], 12) == [[0, 1, 2], [4, 5]]
    # 1 leads first: it takes 0 and 3; 2 is then alone (its only link, 0, is taken).
    assert leader_clusters(linked, [1, 0, 2, 3, 4, 5], 12) == [[1, 0, 3], [4, 5]]
    assert leader_clusters(linked, [0, 1, 2, 3, 4, 5], 2) == [[0, 1], [4, 5]]
