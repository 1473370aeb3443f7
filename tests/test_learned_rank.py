"""The ranking's head ordered again by the fitted model (policy.learned_head,
recall/learned_rank.py; the model and its features in scoring/learned.py)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta

import pytest

from episodic import Episodic
from episodic.bench.folds import parse_tune, variant
from episodic.embed.local import MiniLMEmbedder
from episodic.model import Candidate
from episodic.recall.learned_rank import STAGE, learned_head
from episodic.recall.policies import DEFAULT, POLICIES, Leg
from episodic.recall.trace import Trace
from episodic.scoring.learned import (
    CANDIDATE_FEATURES,
    LONG_PLACES,
    MODEL,
    QUERY_FEATURES,
    Legs,
    Model,
    candidate_features,
    feature_rows,
    learned_order,
    model_scores,
    query_features,
)
from episodic.store import open_store

T = datetime(2026, 3, 2, tzinfo=UTC)
# `default` with the step on, as `--tune learned_head=30` measures it.
LEARNED = dataclasses.replace(DEFAULT, learned_head=30)

WIDTH = len(CANDIDATE_FEATURES) * (1 + len(QUERY_FEATURES)) + len(QUERY_FEATURES)
LEGS = Legs(
    cosine={"a": 0.6, "b": 0.5},
    dense_rank={"a": 1, "b": 2},
    bm25={"b": 8.0, "c": 4.0},
    bm25_rank={"b": 1, "c": 2},
)


def only(name: str, weight: float) -> Model:
    """A model that weighs one candidate feature alone, unscaled."""
    weights = [0.0] * WIDTH
    weights[CANDIDATE_FEATURES.index(name)] = weight
    return Model((0.0,) * WIDTH, (1.0,) * WIDTH, tuple(weights), 0.0)


def test_what_each_candidate_says_to_the_model() -> None:
    # in both legs, second in each, third in the ranking, short
    b = candidate_features("b", 3, 200, LEGS, best_cosine=0.6, best_bm25=8.0)
    assert b == pytest.approx(
        [0.5, -0.1, 0.5, 1.0, 1.0, 1.0, 1.0, 1 / 3, math.log(3), math.log(201), 0.0, 1.0]
    )
    # found by BM25 alone, long: the dense features say it is missing
    c = candidate_features("c", 1, 5000, LEGS, best_cosine=0.6, best_bm25=8.0)
    assert c[:4] == [0.0, -1.0, 0.0, 0.0]
    assert c[4:7] == [0.5, 0.5, 1.0]
    assert c[10:] == [1.0, 0.0]


def test_the_query_features_and_every_row_the_model_reads() -> None:
    chars = {"a": 5000, "b": 200, "c": 300, "d": 1200}
    long_share, words, best = query_features(["a", "b", "c", "d"], chars, "what is it", 0.6)
    assert (long_share, best) == (0.5, 0.6)
    assert words == pytest.approx(math.log(4))
    rows = feature_rows(["a", "b"], chars, LEGS, "what is it")
    assert len(rows) == 2 and all(len(row) == WIDTH == len(MODEL.weights) for row in rows)
    # each candidate feature again times each query feature, then the query features
    first = rows[0][: len(CANDIDATE_FEATURES)]
    assert rows[0][len(CANDIDATE_FEATURES) : 2 * len(CANDIDATE_FEATURES)] == pytest.approx(
        [f * long_share for f in first]
    )
    assert rows[0][-3:] == pytest.approx([long_share, words, best])


def test_the_model_orders_the_head_by_its_scores() -> None:
    head = ["long", "short", "mid"]
    chars = {"long": 4000, "short": 120, "mid": 900}
    rows = feature_rows(head, chars, LEGS, "q")
    scores = model_scores(only("log length", -1.0), rows)
    assert learned_order(head, scores, chars, protect=0, long_keep=0) == [
        "short",
        "mid",
        "long",
    ]


def test_the_first_places_it_is_told_to_protect_keep_their_places() -> None:
    head = ["a", "b", "c", "d"]
    scores = [0.0, 1.0, 2.0, 3.0]
    assert learned_order(head, scores, {}, protect=0, long_keep=0) == ["d", "c", "b", "a"]
    assert learned_order(head, scores, {}, protect=2, long_keep=0) == ["a", "b", "d", "c"]


def test_a_long_memory_the_ranking_put_first_stays_among_the_first_ten() -> None:
    head = ["answer", *(f"q{n}" for n in range(1, 12))]
    chars = {i: 100 for i in head} | {"answer": 3000}
    scores = [-5.0, *(float(n) for n in range(1, 12))]
    # the model alone would push the long answer out of the first ten
    alone = learned_order(head, scores, chars, protect=0, long_keep=0)
    assert alone.index("answer") == 11
    kept = learned_order(head, scores, chars, protect=0, long_keep=8)
    assert kept.index("answer") == LONG_PLACES - 1 and sorted(kept) == sorted(head)
    assert kept[: LONG_PLACES - 1] == alone[: LONG_PLACES - 1]
    # only one the ranking put among its first long_keep
    late = [*head[1:9], "answer", *head[9:]]
    late_scores = [scores[head.index(i)] for i in late]
    assert learned_order(late, late_scores, chars, protect=0, long_keep=8).index("answer") == 11


def test_the_step_reorders_only_the_head_and_scores_still_fall() -> None:
    policy = variant(DEFAULT, {"learned_head": 3, "learned_protect": 0, "learned_long_keep": 0})
    ranked = [("a", 0.9), ("b", 0.8), ("c", 0.7), ("d", 0.6)]
    legs = {
        Leg.DENSE.value: [Candidate("a", 0.6, 1), Candidate("b", 0.5, 2), Candidate("c", 0.4, 3)],
        Leg.SPARSE.value: [Candidate("c", 9.0, 1)],
    }
    trace = Trace("default", "q", "q")
    out = learned_head(ranked, legs, policy, "q", lambda ids: {i: 100 for i in ids}, trace)
    assert [s for _, s in out] == [0.9, 0.8, 0.7, 0.6]
    assert out[3] == ("d", 0.6) and sorted(i for i, _ in out[:3]) == ["a", "b", "c"]
    assert [row.memory_id for row in trace.stages[STAGE]] == [i for i, _ in out]
    assert all("model" in row.detail for row in trace.stages[STAGE][:3])
    off = variant(DEFAULT, {"learned_head": 0})
    assert learned_head(ranked, legs, off, "q", lambda ids: {}, None) == ranked


def test_the_step_is_a_policy_field_the_bench_can_sweep_and_off_everywhere() -> None:
    # Measured, not kept (benchmarks/README.md): no preset runs it.
    assert all(p.learned_head == 0 for p in POLICIES.values())
    assert DEFAULT.learned_long_keep == 8 and DEFAULT.learned_protect == 0
    assert parse_tune(["learned_head=0,30"])["learned_head"] == (0, 30)
    assert variant(DEFAULT, {"learned_head": 30}).learned_head == 30


def test_without_a_dense_leg_the_step_reads_nothing_and_moves_nothing() -> None:
    """The model was fitted with both legs; keyword-only recall keeps its own order."""
    policy = variant(DEFAULT, {"learned_head": 3})
    ranked = [("a", 0.9), ("b", 0.8), ("c", 0.7)]
    asked: list[list[str]] = []

    def lengths(ids: Sequence[str]) -> dict[str, int]:
        asked.append(list(ids))
        return {i: 5000 if i == "a" else 100 for i in ids}

    sparse_only = {Leg.SPARSE.value: [Candidate("c", 9.0, 1), Candidate("b", 3.0, 2)]}
    assert learned_head(ranked, sparse_only, policy, "q", lengths) == ranked
    assert asked == []
    both = {**sparse_only, Leg.DENSE.value: [Candidate("b", 0.5, 1)]}
    learned_head(ranked, both, policy, "q", lengths)
    assert asked == [["a", "b", "c"]]


def test_a_ranking_shorter_than_the_head_keeps_its_order() -> None:
    """The model reads each place against a full head: a small workspace is left alone."""
    asked: list[list[str]] = []

    def lengths(ids: Sequence[str]) -> dict[str, int]:
        asked.append(list(ids))
        return {i: 100 for i in ids}

    ranked = [(f"m{n}", 1.0 - n / 100) for n in range(29)]
    legs = {Leg.DENSE.value: [Candidate(i, 0.5, n) for n, (i, _) in enumerate(ranked, 1)]}
    policy = variant(DEFAULT, {"learned_head": 30})
    assert learned_head(ranked, legs, policy, "q", lengths) == ranked and asked == []
    full = [*ranked, ("m29", 0.5)]
    assert sorted(learned_head(full, legs, policy, "q", lengths)) == sorted(full)
    assert len(asked) == 1 and len(asked[0]) == 30


# A trip planned with an assistant: the user's short messages hold the facts, the
# assistant's long answers repeat the question's words.
PLAN = (
    "Here is a fuller plan for the trip budget. Flights from Lisbon to Tokyo in October run "
    "from 700 to 1,100 euros return if you book eight weeks ahead; hotels near Shinjuku cost "
    "120-180 euros a night, business hotels less; a 7-day rail pass is about 330 euros and "
    "pays off if you go to Kyoto and Hiroshima. Food can be cheap: convenience stores and "
    "ramen shops keep lunch under 10 euros. Keep a buffer of ten percent for surprises. "
)
TRIP = [
    ("user", "I'm planning a trip to Japan in October and want to keep the budget under 3,000."),
    ("assistant", PLAN * 3),
    ("user", "My sister Ana is coming with me, she is vegetarian."),
    (
        "assistant",
        "For a vegetarian traveller in Japan, look for shojin ryori temple food, ask for no "
        "dashi (fish stock), and use apps that list vegetarian places. " * 8,
    ),
    ("user", "We land at Haneda on October 12 at 6 in the morning."),
    (
        "assistant",
        "From Haneda to Shinjuku the Keikyu line and a change at Shinagawa takes about forty "
        "minutes; the limousine bus is simpler with luggage. " * 8,
    ),
    ("user", "I booked the hotel in Shinjuku for five nights."),
    ("assistant", PLAN * 2),
    ("user", "Can you suggest a day trip from Tokyo?"),
    (
        "assistant",
        "Nikko, Kamakura and Hakone are easy day trips from Tokyo; Hakone has the views of "
        "Mount Fuji and the hot springs. " * 8,
    ),
]
# More of the same trip: enough candidates for the model's head of 30.
QUESTIONS = [
    "Should I get a pocket wifi or a SIM card in Japan?",
    "What's the weather like in Kyoto in late October?",
    "Do I need to carry cash in Japan or are cards fine?",
    "Which temples in Kyoto are worth an early start?",
    "How do I use the IC card on trains and buses?",
    "Is tipping expected at restaurants in Japan?",
    "What should I pack for walking all day in the city?",
    "Are there lockers at the big train stations for luggage?",
    "Can we see the autumn leaves in Nikko in October?",
    "How early should we book the sumo tickets?",
    "What's a good area for dinner near Shinjuku station?",
    "Do we need an adapter for the plugs in Japan?",
]
MORE = [
    turn
    for asked in QUESTIONS
    for turn in (
        ("user", asked),
        (
            "assistant",
            f"Good question about the trip. {asked.replace('?', '.')} In short: plan ahead, "
            "check the official sites, and keep some flexibility in the itinerary. " * 4,
        ),
    )
]
JOINING = "Is anyone joining me on the trip?"
ARRIVAL = "What time does our flight arrive?"


def planned(db_url: str, turns: Sequence[tuple[str, str]]) -> Iterator[Episodic]:
    """``turns`` as a chat on the backend with the real model, read forty days later."""
    mem = Episodic(
        store=open_store(db_url), embedder=MiniLMEmbedder(), clock=lambda: T + timedelta(days=40)
    )
    for n, (who, text) in enumerate(turns):
        mem.remember(
            f"{who}: {text}", workspace="w", id=f"t{n}", conversation=f"s{n // 4}", agent=who
        )
    mem.index_once()
    yield mem
    mem.close()


@pytest.fixture
def trip(db_url: str) -> Iterator[Episodic]:
    """The whole trip chat: more candidates than the head."""
    yield from planned(db_url, [*TRIP, *MORE])


@pytest.fixture
def short_trip(db_url: str) -> Iterator[Episodic]:
    """Its first ten messages alone: fewer candidates than the head."""
    yield from planned(db_url, TRIP)


@pytest.mark.model
def test_the_step_orders_a_full_head_by_the_model_and_shows_its_scores(trip: Episodic) -> None:
    plain = [h.id for h in trip.recall(JOINING, workspace="w", k=5, mark=False).hits]
    result = trip.recall(JOINING, workspace="w", k=5, mark=False, explain=True, policy=LEARNED)
    ids = [h.id for h in result.hits]
    assert ids != plain
    assert result.trace is not None
    stage = result.trace.stages[STAGE]
    assert [row.memory_id for row in stage[:5]] == ids
    assert sum(1 for row in stage if "model" in row.detail) == LEARNED.learned_head


@pytest.mark.model
def test_a_small_workspace_keeps_the_rankings_order(short_trip: Episodic) -> None:
    for question in (ARRIVAL, JOINING):
        plain = short_trip.recall(question, workspace="w", k=5, mark=False)
        result = short_trip.recall(
            question, workspace="w", k=5, mark=False, explain=True, policy=LEARNED
        )
        assert [h.id for h in result.hits] == [h.id for h in plain.hits]
        assert result.trace is not None and STAGE not in result.trace.stages
