"""The recall methods measured on LoCoMo's held-out folds: newest-first among
near-duplicates, query-dependent fusion, pseudo-relevance feedback, and the context knobs
(a neighbour's direction, how deep a conversation's lift reaches)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from episodic.scoring.blend import confident_weight
from episodic.scoring.context import lift_by_conversation, spread_to_neighbours
from episodic.scoring.feedback import expansion_terms
from episodic.scoring.supersede import newest_first

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def test_newer_near_duplicate_takes_the_older_ones_place() -> None:
    ranked = [("old", 0.9), ("other", 0.6), ("new", 0.5)]
    ts = {"old": T0, "other": T0, "new": T0 + timedelta(days=30)}
    similar = {"old": [("new", 0.85)], "new": [("old", 0.85)]}
    assert newest_first(ranked, similar, ts) == [("new", 0.9), ("old", 0.9), ("other", 0.6)]


def test_a_newer_near_duplicate_of_lower_base_importance_keeps_its_place() -> None:
    # An info note restating an error-level regression is not its new state: between the
    # two, importance decides.
    ranked = [("regression", 0.9), ("note", 0.85)]
    ts = {"regression": T0, "note": T0 + timedelta(days=20)}
    similar = {"regression": [("note", 0.9)], "note": [("regression", 0.9)]}
    assert newest_first(ranked, similar, ts, {"regression": 0.9, "note": 0.5}) == ranked
    lifted = newest_first(ranked, similar, ts, {"regression": 0.9, "note": 0.9})
    assert [i for i, _ in lifted] == ["note", "regression"]


def test_an_older_near_duplicate_never_lifts_past_a_newer_one() -> None:
    ranked = [("new", 0.9), ("old", 0.5)]
    ts = {"old": T0, "new": T0 + timedelta(days=1)}
    similar = {"old": [("new", 0.9)], "new": [("old", 0.9)]}
    assert newest_first(ranked, similar, ts) == ranked


def test_a_chain_of_versions_puts_the_latest_first() -> None:
    ranked = [("v1", 0.9), ("v2", 0.7), ("v3", 0.4), ("x", 0.8)]
    ts = {"v1": T0, "v2": T0 + timedelta(days=10), "v3": T0 + timedelta(days=20), "x": T0}
    similar = {"v1": [("v2", 0.9), ("v3", 0.85)], "v2": [("v3", 0.9)]}
    assert [i for i, _ in newest_first(ranked, similar, ts)] == ["v3", "v2", "v1", "x"]


def test_similar_memories_outside_the_ranking_change_nothing() -> None:
    ranked = [("a", 0.9), ("b", 0.5)]
    ts = {"a": T0, "b": T0}
    assert newest_first(ranked, {"a": [("elsewhere", 0.95)]}, ts) == ranked


@pytest.mark.parametrize(
    ("cosines", "bm25", "direction"),
    [
        # BM25's best stands far out of its pool, cosines are flat: lean on BM25.
        (
            dict(zip("abcde", [0.5, 0.5, 0.5, 0.5, 0.49], strict=True)),
            dict(zip("abcde", [1, 1, 1, 1, 9.0], strict=True)),
            -1,
        ),
        # The dense leg's best stands out, BM25 is flat: lean on the dense leg.
        (
            dict(zip("abcde", [0.9, 0.3, 0.3, 0.3, 0.3], strict=True)),
            dict(zip("abcde", [2, 2.1, 2.2, 2, 2.1], strict=True)),
            1,
        ),
    ],
)
def test_confident_weight_leans_towards_the_leg_whose_best_stands_out(
    cosines: dict[str, float], bm25: dict[str, float], direction: int
) -> None:
    share = confident_weight(0.4, cosines, bm25, 1.0)
    assert (share - 0.4) * direction > 0.05
    assert 0.0 < share < 1.0
    assert confident_weight(0.4, cosines, bm25, 0.0) == pytest.approx(0.4)


def test_feedback_terms_come_from_the_strongest_matches_and_skip_the_query() -> None:
    docs = [
        ("Caroline: the adoption agency called about the adoption papers", 9.0),
        ("Melanie: adoption is a big step, the agency sounds kind", 6.0),
        ("Caroline: pottery class again today", 0.5),
    ]
    terms = expansion_terms("what did Caroline research about adoption?", docs, 2)
    assert terms[0][0] == "agency"  # in both strong matches, unlike "pottery"
    assert all(t not in ("adoption", "what", "did", "about") for t, _ in terms)
    assert expansion_terms("anything", docs, 0) == []
    assert expansion_terms("anything", [], 3) == []


def test_a_neighbour_before_its_source_gains_less_when_backward_is_below_one() -> None:
    ranked = [("m", 1.0)]
    adjacency = {"m": [("before", -1), ("after", 1)]}
    spread = dict(spread_to_neighbours(ranked, adjacency, 0.5, backward=0.5))
    assert spread["after"] == pytest.approx(0.5)
    assert spread["before"] == pytest.approx(0.25)
    symmetric = dict(spread_to_neighbours(ranked, adjacency, 0.5))
    assert symmetric["before"] == symmetric["after"] == pytest.approx(0.5)


def test_conversation_lift_reaches_only_its_best_candidates_with_depth() -> None:
    ranked = [("a1", 1.0), ("a2", 0.5), ("a3", 0.4), ("b1", 0.6)]
    conv = {"a1": "A", "a2": "A", "a3": "A", "b1": "B"}
    deep = dict(lift_by_conversation(ranked, conv, 0.5, depth=2))
    assert deep["a2"] == pytest.approx(1.0)  # 0.5 + 0.5 x 1.0
    assert deep["a3"] == pytest.approx(0.4)  # third of A: not lifted
    assert deep["b1"] == pytest.approx(0.9)
    whole = dict(lift_by_conversation(ranked, conv, 0.5))
    assert whole["a3"] == pytest.approx(0.9)


def test_ties_that_are_not_near_duplicates_keep_their_order() -> None:
    # "gc" is newer than "old" and scores the same, but restates nothing: the order of
    # equal scores is the ranking's, not the clock's.
    ranked = [("yday", 1.0), ("old", 0.5), ("gc", 0.5)]
    ts = {"yday": T0 + timedelta(days=39), "old": T0, "gc": T0 + timedelta(days=39)}
    similar = {"old": [("yday", 1.0)], "yday": [("old", 1.0)]}
    assert newest_first(ranked, similar, ts) == ranked
