"""Scoring functions pinned to the seeds' formulas and numbers."""

from __future__ import annotations

import math

import pytest

from episodic.scoring.decay import (
    DECAY_FLOOR,
    DECAY_HORIZON_DAYS,
    HALF_LIFE_DAYS,
    REFERENCE_BOOST_DIVISOR,
    decayed_importance,
    prominence,
    recency_factor,
    recency_weight,
    reference_boost,
)
from episodic.scoring.fusion import RRF_K, rrf
from episodic.scoring.topk import clamp_k, cosine_times_importance, dense_overfetch


def test_seed_constants() -> None:
    assert (RRF_K, DECAY_HORIZON_DAYS, DECAY_FLOOR, REFERENCE_BOOST_DIVISOR, HALF_LIFE_DAYS) == (
        60,
        180,
        0.1,
        8,
        90,
    )


# --- seed 000 decay -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("days", "factor"),
    [
        (0, 1.0),
        (1, 1 - 1 / 180),
        (90, 0.5),
        (162, 0.1),
        (170, 0.1),
        (180, 0.1),
        (365, 0.1),
        (-5, 1.0),
    ],
)
def test_recency_factor(days: float, factor: float) -> None:
    assert recency_factor(days) == pytest.approx(factor)


@pytest.mark.parametrize(
    ("refs", "boost"), [(0, 0.0), (1, 1.0), (3, 2.0), (7, 3.0), (15, 4.0), (-1, 0.0)]
)
def test_reference_boost(refs: int, boost: float) -> None:
    assert reference_boost(refs) == pytest.approx(boost)


@pytest.mark.parametrize(
    ("base", "days", "refs", "expected"),
    [
        (0.7, 0, 0, 0.7),
        (0.7, 1, 0, 0.7 * (179 / 180)),
        (0.7, 180, 0, 0.07),
        (0.7, 365, 0, 0.07),
        (0.7, 0, 1, 0.7 * (1 + 1 / 8)),
        (0.7, 1, 1, 0.7 * (179 / 180) * 1.125),
        (0.7, 180, 1, 0.07 * 1.125),
        (0.7, 365, 1, 0.07 * 1.125),
        (0.7, 0, 7, 0.7 * (1 + 3 / 8)),
        (0.7, 1, 7, 0.7 * (179 / 180) * 1.375),
        (0.7, 180, 7, 0.07 * 1.375),
        (0.7, 365, 7, 0.07 * 1.375),
        (0.5, 90, 0, 0.25),
        # 0.95 x 1.375 = 1.30625 -> clamped.
        (0.95, 0, 7, 1.0),
        (1.0, 0, 1, 1.0),
    ],
)
def test_decayed_importance(base: float, days: float, refs: int, expected: float) -> None:
    assert decayed_importance(base, days, refs) == pytest.approx(expected)


def test_recalled_old_escalation_outranks_stale_info_entry() -> None:
    # Seed 000: a six-month-old escalation recalled weekly keeps ranking; stale info fades.
    escalation = decayed_importance(0.85, 180, 26)
    stale_info = decayed_importance(0.5, 170, 0)
    assert escalation > stale_info


# --- seed 001 prominence --------------------------------------------------------------


@pytest.mark.parametrize(
    ("importance", "age_days", "reinforcement", "expected"),
    [
        (0.9, 0, 0, 0.9),
        (0.9, 90, 0, 0.45),
        (0.9, 180, 0, 0.225),
        (0.8, 90, 1, 0.8),
        (0.5, 0, 3, 2.0),
        # Past ~299 days exp decay is below 0.1: the floor holds.
        (0.9, 1000, 0, 0.09),
        (0.2, 1000, 0, 0.02),
        (0.9, 1000, 2, 0.27),
    ],
)
def test_prominence(
    importance: float, age_days: float, reinforcement: int, expected: float
) -> None:
    assert prominence(importance, age_days, reinforcement) == pytest.approx(expected)


def test_prominence_floor_kicks_in_after_log2_10_half_lives() -> None:
    knee = HALF_LIFE_DAYS * math.log2(10)
    assert prominence(1.0, knee - 1, 0) > 0.1
    assert prominence(1.0, knee + 1, 0) == pytest.approx(0.1)


def test_ancient_high_importance_outranks_ancient_low() -> None:
    assert prominence(0.9, 5000, 0) > prominence(0.2, 5000, 0)


@pytest.mark.parametrize("age_days", [0, 30, 5000])
def test_retired_entries_have_zero_prominence(age_days: float) -> None:
    assert prominence(0.9, age_days, 10, retired=True) == 0.0


# --- seed 004 recency weight ----------------------------------------------------------


@pytest.mark.parametrize(
    ("age_days", "weight"), [(0, 1.0), (90, 2**-0.5), (180, 0.5), (360, 0.25), (-3, 1.0)]
)
def test_recency_weight(age_days: float, weight: float) -> None:
    assert recency_weight(age_days) == pytest.approx(weight)


# --- RRF ------------------------------------------------------------------------------


def test_rrf_hand_computed() -> None:
    fused = dict(rrf([["a", "b", "c"], ["b", "d"]]))
    assert fused == pytest.approx({"a": 1 / 61, "b": 1 / 62 + 1 / 61, "c": 1 / 63, "d": 1 / 62})


def test_rrf_order_rewards_agreement_between_legs() -> None:
    assert [i for i, _ in rrf([["a", "b", "c"], ["b", "d"]])] == ["b", "a", "d", "c"]


def test_rrf_custom_k() -> None:
    # Seed 003 fuses with k=30.
    fused = rrf([["x", "y"], ["y"]], k=30)
    assert [i for i, _ in fused] == ["y", "x"]
    assert [s for _, s in fused] == pytest.approx([1 / 32 + 1 / 31, 1 / 31])


def test_rrf_ties_keep_first_appearance() -> None:
    assert [i for i, _ in rrf([["p", "q"], ["q", "p"]])] == ["p", "q"]
    assert [i for i, _ in rrf([["m"], ["n"], ["o"]])] == ["m", "n", "o"]


def test_rrf_counts_an_id_once_per_ranking() -> None:
    fused = rrf([["a", "a", "b"]])
    assert [i for i, _ in fused] == ["a", "b"]
    assert [s for _, s in fused] == pytest.approx([1 / 61, 1 / 63])


@pytest.mark.parametrize("rankings", [[], [[]], [[], []]])
def test_rrf_of_nothing_is_empty(rankings: list[list[str]]) -> None:
    assert rrf(rankings) == []


def test_rrf_rejects_negative_k() -> None:
    with pytest.raises(ValueError, match="k must be >= 0"):
        rrf([["a"]], k=-1)


# --- top-k ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("k", "clamped"),
    [(None, 5), (0, 5), (-3, 5), (1, 1), (5, 5), (12, 12), (50, 50), (51, 5), (1000, 5)],
)
def test_clamp_k(k: int | None, clamped: int) -> None:
    assert clamp_k(k) == clamped


@pytest.mark.parametrize(("k", "depth"), [(1, 20), (5, 20), (6, 20), (7, 21), (10, 30), (50, 150)])
def test_dense_overfetch(k: int, depth: int) -> None:
    assert dense_overfetch(k) == depth


@pytest.mark.parametrize(
    ("cos", "importance", "score"), [(0.9, 0.5, 0.45), (0.6, 1.0, 0.6), (0.0, 0.9, 0.0)]
)
def test_cosine_times_importance(cos: float, importance: float, score: float) -> None:
    assert cosine_times_importance(cos, importance) == pytest.approx(score)


def test_importance_can_reorder_cosine_ties() -> None:
    # A slightly less similar but far more important memory wins the dense-only sort.
    assert cosine_times_importance(0.80, 0.95) > cosine_times_importance(0.85, 0.5)


def test_weighted_rrf_scales_each_rankings_contribution() -> None:
    from episodic.scoring.fusion import rrf

    fused = dict(rrf([["a", "b"], ["b"]], k=60, weights=[1.0, 0.5]))
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 62 + 0.5 / 61)
    with pytest.raises(ValueError, match="2 weights for 1 rankings"):
        rrf([["a"]], weights=[1.0, 1.0])
