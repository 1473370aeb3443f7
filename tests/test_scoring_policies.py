"""Pure pieces behind the seed policies: blend, MMR, FSRS retrievability, scope levels."""

from __future__ import annotations

import math

import pytest

from episodic.scoring.blend import blend, min_max
from episodic.scoring.mmr import jaccard, mmr, tokens
from episodic.scoring.retrievability import (
    INITIAL_STABILITY_GOOD_DAYS,
    initial_stability,
    retrievability,
)
from episodic.scoring.scope import GLOBAL, PROJECT, TEAM, scope_level, scope_multiplier


def test_min_max() -> None:
    assert min_max({"a": 2.0, "b": 4.0, "c": 3.0}) == {"a": 0.0, "b": 1.0, "c": 0.5}
    assert min_max({"a": 7.0, "b": 7.0}) == {"a": 1.0, "b": 1.0}
    assert min_max({}) == {}


def test_min_max_from_zero_keeps_near_equal_matches_near_equal() -> None:
    # Two matches 10% apart in BM25: plain min-max puts them a whole share apart; when
    # they are every match there is, each keeps its share of the best.
    close = {"short": 10.0, "long": 9.0}
    assert min_max(close) == {"short": 1.0, "long": 0.0}
    assert min_max(close, from_zero=True) == pytest.approx({"short": 1.0, "long": 0.9})


def test_keyword_only_blend_keeps_the_weaker_matchs_share() -> None:
    # Seed 001's BM25-only fallback: no cosine to share a scale with, so the weaker
    # match keeps its share of the best for importance or prominence to weigh.
    assert dict(blend({}, {"x": 6.0, "y": 7.0})) == pytest.approx({"y": 1.0, "x": 6.0 / 7.0})


def test_blend_is_seven_tenths_cosine_three_tenths_bm25() -> None:
    ranked = dict(blend({"a": 0.9, "b": 0.5}, {"b": 10.0, "c": 4.0, "d": 7.0}))
    assert ranked["a"] == pytest.approx(0.7 * 0.9)
    assert ranked["b"] == pytest.approx(0.7 * 0.5 + 0.3 * 1.0)
    assert ranked["c"] == pytest.approx(0.0)
    assert ranked["d"] == pytest.approx(0.3 * 0.5)
    assert [i for i, _ in blend({}, {"x": 1.0, "y": 3.0})] == ["y", "x"]  # BM25-only fallback
    # BM25 candidates that are every match in scope keep their share of the best.
    every = dict(blend({"a": 0.5, "b": 0.5}, {"a": 10.0, "b": 9.0}, every_match=True))
    assert every["b"] == pytest.approx(0.7 * 0.5 + 0.3 * 0.9)
    assert dict(blend({"a": 0.5, "b": 0.5}, {"a": 10.0, "b": 9.0}))["b"] == pytest.approx(0.35)


def test_tokens_and_jaccard() -> None:
    assert tokens("OOM in Checkout_API, v2!") == {"oom", "in", "checkout_api", "v2"}
    assert jaccard(frozenset({"a", "b"}), frozenset({"b", "c"})) == pytest.approx(1 / 3)
    assert jaccard(frozenset(), frozenset()) == 1.0


def test_mmr_passes_over_a_near_duplicate() -> None:
    ranked = [("a", 1.0), ("a2", 0.9), ("b", 0.6)]
    sets = {
        "a": tokens("checkout oom after cache change"),
        "a2": tokens("checkout oom after cache change again"),
        "b": tokens("dns outage in staging"),
    }
    chosen, dropped = mmr(ranked, sets, 2, lam=0.7)
    assert [i for i, _ in chosen] == ["a", "b"]
    assert chosen[0] == ("a", 1.0)  # original scores are kept
    assert [(d.memory_id, d.similar_to) for d in dropped] == [("a2", "a")]
    assert mmr(ranked, sets, 2, lam=1.0)[0] == [("a", 1.0), ("a2", 0.9)]  # pure relevance


@pytest.mark.parametrize(
    ("days", "stability", "expected"),
    [(0, 2.3065, 1.0), (2.3065, 2.3065, 0.9), (10, 10, 0.9), (30, 2.3065, 0.667526)],
)
def test_fsrs_retrievability(days: float, stability: float, expected: float) -> None:
    assert retrievability(days, stability) == pytest.approx(expected, abs=1e-6)


def test_initial_stability_is_boosted_by_surprise() -> None:
    assert pytest.approx(2.3065) == INITIAL_STABILITY_GOOD_DAYS
    assert initial_stability(0.0) == pytest.approx(2.3065)
    assert initial_stability(1.0) == pytest.approx(2.3065 * 1.5)
    assert initial_stability(0.4) == pytest.approx(2.3065 * 1.2)
    assert math.isclose(initial_stability(7.0), initial_stability(1.0))  # clamped


@pytest.mark.parametrize(
    ("memory", "query", "level", "multiplier"),
    [
        (("a1", "c1"), ("a9", "c1"), TEAM, 1.5),
        (("a1", None), ("a1", None), TEAM, 1.5),
        (("a2", "c2"), ("a1", "c1"), PROJECT, 1.2),
        ((None, None), ("a1", "c1"), GLOBAL, 1.0),
        (("a2", "c2"), (None, None), PROJECT, 1.2),
    ],
)
def test_scope_levels(
    memory: tuple[str | None, str | None],
    query: tuple[str | None, str | None],
    level: str,
    multiplier: float,
) -> None:
    got = scope_level(memory[0], memory[1], query[0], query[1])
    assert got == level and scope_multiplier(got) == multiplier


def test_spread_to_neighbours_lifts_the_turn_next_to_a_strong_match() -> None:
    from episodic.scoring.context import spread_to_neighbours

    ranked = [("q", 1.0), ("far", 0.6)]
    adjacency = {"q": [("before", -1), ("after", 1), ("after2", 2)], "far": [("after", -1)]}
    spread = dict(spread_to_neighbours(ranked, adjacency, weight=0.5))
    assert spread["q"] == 1.0 and spread["far"] == 0.6
    assert spread["after"] == 0.5  # the max lift (from q), not the sum with far's 0.3
    assert spread["before"] == 0.5 and spread["after2"] == 0.25  # halves per step away
    assert spread_to_neighbours(ranked, {}, 0.5) == ranked


@pytest.mark.parametrize(
    ("weight", "expected"),
    [
        # a (0.9) and c (0.2) share c1; b (0.3) is alone in c2; d (0.25) has no conversation.
        (0.5, [("a", 1.35), ("c", 0.65), ("b", 0.45), ("d", 0.375)]),
        (0.0, [("a", 0.9), ("b", 0.3), ("d", 0.25), ("c", 0.2)]),
    ],
)
def test_lift_by_conversation_adds_a_share_of_the_conversations_best(
    weight: float, expected: list[tuple[str, float]]
) -> None:
    from episodic.scoring.context import lift_by_conversation

    ranked = [("a", 0.9), ("b", 0.3), ("d", 0.25), ("c", 0.2)]
    conversations = {"a": "c1", "b": "c2", "c": "c1", "d": None}
    got = lift_by_conversation(ranked, conversations, weight)
    assert [i for i, _ in got] == [i for i, _ in expected]
    assert [s for _, s in got] == pytest.approx([s for _, s in expected])


def test_memories_outside_conversations_are_not_grouped_together() -> None:
    from episodic.scoring.context import lift_by_conversation

    # Two memories with no conversation each keep their own best: x does not lift y.
    got = dict(lift_by_conversation([("x", 1.0), ("y", 0.1)], {}, 0.5))
    assert got == pytest.approx({"x": 1.5, "y": 0.15})
