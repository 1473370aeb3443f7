"""How the blend puts the dense and sparse legs on one scale (``BlendScale``)."""

from __future__ import annotations

import pytest

from episodic.scoring.blend import BlendScale, blend, cdf_scaled

# A dense leg whose cosines are bunched (0.30-0.36, as MiniLM gives a long answer against
# a short question) beside a BM25 leg with a clear best.
COSINES = {"a": 0.36, "b": 0.35, "c": 0.34, "d": 0.30}
BM25 = {"d": 12.0, "b": 3.0, "c": 2.5, "a": 2.0}


def test_raw_is_seed_001_blend_unchanged() -> None:
    fused = dict(blend(COSINES, BM25, dense_weight=0.4, sparse_weight=0.6))
    assert fused["a"] == pytest.approx(0.4 * 0.36 + 0.6 * 0.0)
    assert fused["d"] == pytest.approx(0.4 * 0.30 + 0.6 * 1.0)


def test_minmax_puts_the_cosines_on_the_same_zero_to_one_scale() -> None:
    fused = dict(blend(COSINES, BM25, dense_weight=0.4, sparse_weight=0.6, scale=BlendScale.MINMAX))
    # the dense leg's best now counts 1 and its weakest 0, as BM25's do
    assert fused["a"] == pytest.approx(0.4 * 1.0)
    assert fused["d"] == pytest.approx(0.6 * 1.0)


def test_cdf_keeps_a_leg_s_standout_and_flattens_a_bunched_pool() -> None:
    dense = cdf_scaled(COSINES)
    sparse = cdf_scaled(BM25)
    assert all(0.0 < v < 1.0 for v in (*dense.values(), *sparse.values()))
    # BM25's best stands far above the rest: it keeps nearly all its lead...
    assert sparse["d"] > 0.95 and sparse["b"] < 0.5
    # ...while the three bunched cosines share the top of the dense scale
    assert dense["a"] - dense["c"] < sparse["d"] - sparse["b"]


def test_cdf_and_minmax_do_not_depend_on_a_leg_s_units() -> None:
    # cosines of another model, spread wider and shifted: the same order, other units
    wider = {key: 3 * value - 0.5 for key, value in COSINES.items()}
    for scale in (BlendScale.CDF, BlendScale.MINMAX):
        assert dict(blend(wider, BM25, scale=scale)) == pytest.approx(
            dict(blend(COSINES, BM25, scale=scale))
        )
    # the raw cosine is taken as it is, units and all
    assert dict(blend(wider, BM25)) != pytest.approx(dict(blend(COSINES, BM25)))


def test_cdf_of_flat_or_single_scores_is_one_and_a_missing_leg_scores_zero() -> None:
    assert cdf_scaled({"x": 0.4}) == {"x": 1.0}
    assert cdf_scaled({"x": 2.0, "y": 2.0}) == {"x": 1.0, "y": 1.0}
    assert cdf_scaled({}) == {}
    fused = dict(
        blend(
            {"a": 0.5, "b": 0.4},
            {"c": 3.0},
            dense_weight=0.5,
            sparse_weight=0.5,
            scale=BlendScale.CDF,
        )
    )
    # "c" was found by BM25 alone: it has nothing on the dense side
    assert fused["c"] == pytest.approx(0.5 * 1.0)
    assert fused["b"] == pytest.approx(0.5 * cdf_scaled({"a": 0.5, "b": 0.4})["b"])


def test_a_scale_given_by_its_plain_name_is_the_same_scale() -> None:
    by_name = blend(COSINES, BM25, scale="cdf")  # type: ignore[arg-type]
    assert by_name == blend(COSINES, BM25, scale=BlendScale.CDF)
    assert by_name != blend(COSINES, BM25)


def test_rank_scores_each_leg_by_its_place_not_its_score() -> None:
    fused = dict(blend(COSINES, BM25, dense_weight=0.4, sparse_weight=0.6, scale=BlendScale.RANK))
    # "d" is BM25's first (1) and the dense leg's last of four (1/4)
    assert fused["d"] == pytest.approx(0.4 * 0.25 + 0.6 * 1.0)
    # "a" is the dense leg's first and BM25's last: BM25's wide lead for "d" counts no
    # more than one place
    assert fused["a"] == pytest.approx(0.4 * 1.0 + 0.6 * 0.25)
    # a candidate one leg did not return scores 0 on that leg
    alone = dict(blend({"a": 0.5}, {"c": 3.0}, dense_weight=0.5, sparse_weight=0.5, scale="rank"))  # type: ignore[arg-type]
    assert alone == pytest.approx({"a": 0.5, "c": 0.5})
