"""The context steps can read a long source's score after the length price
(policy.neighbour_length_prior, policy.conversation_length_prior): a short turn beside a
long answer, or in its conversation, inherits what the answer is worth once charged for
its many passages."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from episodic import Episodic
from episodic.bench.folds import parse_tune, variant
from episodic.embed.fake import FakeEmbedder
from episodic.recall.policies import DEFAULT, POLICIES, RecallPolicy
from episodic.scoring.context import lift_by_conversation, spread_to_neighbours
from episodic.scoring.passages import PASSAGE_CHARS
from episodic.scoring.prior import length_prices, length_prior
from long_memories import long_workspace, note


def order(pairs: list[tuple[str, float]]) -> list[str]:
    return [i for i, _ in pairs]


# A long answer both legs rank first, its short neighbour, and a short message that
# matched on its own.
RANKED = [("answer", 1.0), ("message", 0.3)]
ADJACENT = {"answer": [("beside", 1)]}


def test_a_priced_long_source_lifts_its_neighbour_less() -> None:
    plain = spread_to_neighbours(RANKED, ADJACENT, 0.5)
    assert order(plain) == ["answer", "beside", "message"]  # 0.5 inherited, free
    priced = spread_to_neighbours(RANKED, ADJACENT, 0.5, price={"answer": 0.2})
    assert order(priced) == ["answer", "message", "beside"]
    assert dict(priced)["beside"] == 0.5 * 0.2
    # the source keeps its own score: the re-rank charges it once, later
    assert dict(priced)["answer"] == 1.0 and dict(priced)["message"] == 0.3


def test_a_source_without_a_price_spreads_its_whole_score() -> None:
    assert spread_to_neighbours(RANKED, ADJACENT, 0.5, price={"other": 0.1}) == (
        spread_to_neighbours(RANKED, ADJACENT, 0.5)
    )
    assert spread_to_neighbours(RANKED, ADJACENT, 0.5, price={}) == (
        spread_to_neighbours(RANKED, ADJACENT, 0.5)
    )


def test_a_conversations_strength_is_read_from_its_priced_scores() -> None:
    ranked = [("answer", 1.0), ("there", 0.3), ("elsewhere", 0.4)]
    conversation = {"answer": "c1", "there": "c1", "elsewhere": "c2"}
    plain = dict(lift_by_conversation(ranked, conversation, 0.5))
    assert plain["there"] > plain["elsewhere"]  # 0.3 + 0.5 x 1.0 against 0.4 + 0.2
    priced = dict(lift_by_conversation(ranked, conversation, 0.5, price={"answer": 0.1}))
    # c1's best priced score is now its short turn's 0.3, not the answer's 0.1
    assert priced["there"] == 0.3 + 0.5 * 0.3
    assert priced["elsewhere"] == 0.4 + 0.5 * 0.4
    assert priced["elsewhere"] > priced["there"]
    assert priced["answer"] == 1.0 + 0.5 * 0.3  # its own score is not priced here


def test_the_priced_strength_takes_the_best_priced_scores_of_several() -> None:
    ranked = [("answer", 1.0), ("a", 0.5), ("b", 0.4), ("other", 0.45)]
    conversation = {"answer": "c1", "a": "c1", "b": "c1", "other": "c2"}
    got = dict(lift_by_conversation(ranked, conversation, 1.0, top=2, price={"answer": 0.1}))
    assert got["b"] == 0.4 + (0.5 + 0.4) / 2  # the two best priced: a and b, not the answer


def test_only_memories_over_one_passage_are_priced() -> None:
    chars = {"short": PASSAGE_CHARS, "long": 4 * PASSAGE_CHARS}
    assert length_prices(chars, 1.5) == {"long": length_prior(4 * PASSAGE_CHARS, 1.5)}
    assert length_prices(chars, 1.5)["long"] == 0.125
    assert length_prices(chars, 0.0) == {}


def test_the_price_is_a_policy_field_the_bench_can_sweep_and_off_in_every_preset() -> None:
    assert all(p.neighbour_length_prior == 0 for p in POLICIES.values())
    assert all(p.conversation_length_prior == 0 for p in POLICIES.values())
    tune = parse_tune(["neighbour_length_prior=1.5", "conversation_length_prior=0.75"])
    swept = variant(DEFAULT, {k: v[0] for k, v in tune.items()})
    assert swept.neighbour_length_prior == 1.5 and swept.conversation_length_prior == 0.75


# A chat: a long answer that repeats the query's words, the short turns around it, and in
# another sitting a short message that says what was asked.
NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
ANSWER = (
    "zephyr plan meeting notes and the agenda, then the budget review and the office move. " * 20
)
CHAT = [
    ("s1", "could you help me with something"),
    ("s1", ANSWER),
    ("s1", "thanks, that helps a lot"),
    ("s2", "my zephyr plan is the weekly one"),
    ("s2", "sure, noted"),
]


@pytest.fixture
def chat(db_url: str) -> Iterator[Episodic]:
    notes = [
        note(f"t{i}", text, NOW - timedelta(hours=10 - i)) | {"conversation": sitting}
        for i, (sitting, text) in enumerate(CHAT)
    ]
    m = long_workspace(db_url, notes, embedder=FakeEmbedder(dim=1024), clock=lambda: NOW)
    yield m
    m.close()


def test_a_long_answers_neighbour_inherits_its_priced_score_in_a_recall(chat: Episodic) -> None:
    assert len(ANSWER) > 1000
    query = "zephyr plan meeting"
    scores = {}
    for strength in (0.0, 1.5):
        policy = dataclasses.replace(DEFAULT, neighbour_length_prior=strength)
        got = chat.recall(query, workspace="w", k=5, mark=False, policy=policy, explain=True)
        assert got.trace is not None
        fused = {r.memory_id: r.score for r in got.trace.stages["fusion:blend"]}
        spread = {r.memory_id: r.score for r in got.trace.stages["context:neighbours"]}
        inherited = spread["t2"] - fused.get("t2", 0.0)
        scores[strength] = inherited / (DEFAULT.neighbour_weight * fused["t1"])
    assert scores[0.0] == pytest.approx(1.0)
    assert scores[1.5] == pytest.approx(length_prior(len(ANSWER), 1.5))


def test_a_sittings_lift_is_read_from_its_priced_scores_in_a_recall(chat: Episodic) -> None:
    query = "zephyr plan meeting"
    for strength in (0.0, 1.5):
        policy = dataclasses.replace(DEFAULT, conversation_length_prior=strength)
        got = chat.recall(query, workspace="w", k=5, mark=False, policy=policy, explain=True)
        assert got.trace is not None
        spread = {r.memory_id: r.score for r in got.trace.stages["context:neighbours"]}
        lifted = {r.memory_id: r.score for r in got.trace.stages["context:conversation"]}
        price = {"t1": length_prior(len(ANSWER), strength)}
        worth = max(spread[i] * price.get(i, 1.0) for i in ("t0", "t1", "t2") if i in spread)
        assert lifted["t0"] - spread["t0"] == pytest.approx(DEFAULT.conversation_weight * worth)
        if strength:  # priced, the sitting's best is no longer the long answer's score
            assert worth < spread["t1"]


def test_a_query_the_length_gate_lifts_reads_whole_scores(chat: Episodic) -> None:
    # Its long answer matches it far better than any short turn: it asks for the answer
    # whole, and the context steps leave the prices out, as the length step does.
    query = "zephyr plan meeting notes agenda budget review office move"

    def stage(policy: RecallPolicy) -> list[tuple[str, float]]:
        got = chat.recall(query, workspace="w", k=5, mark=False, policy=policy, explain=True)
        assert got.trace is not None
        return [(r.memory_id, r.score) for r in got.trace.stages["context:conversation"]]

    priced = dataclasses.replace(DEFAULT, conversation_length_prior=3.0)
    assert DEFAULT.length_gate > 0
    assert stage(priced) == stage(DEFAULT)
    # without the gate the same query is priced
    ungated = dataclasses.replace(DEFAULT, length_gate=0.0)
    assert stage(dataclasses.replace(ungated, conversation_length_prior=3.0)) != stage(ungated)


def fusion(mem: Episodic, query: str, policy: RecallPolicy) -> list[tuple[str, float]]:
    got = mem.recall(query, workspace="w", k=5, mark=False, policy=policy, explain=True)
    assert got.trace is not None
    return [(r.memory_id, r.score) for r in got.trace.stages["fusion:blend"]]


def test_with_a_long_memory_found_the_blend_leans_to_the_share_asked_for(chat: Episodic) -> None:
    lean = dataclasses.replace(DEFAULT, long_blend_dense=0.9)
    query = "zephyr plan meeting"
    as_set = dataclasses.replace(DEFAULT, blend_dense=0.9, blend_sparse=0.1)
    assert fusion(chat, query, lean) == fusion(chat, query, as_set)
    assert fusion(chat, query, lean) != fusion(chat, query, DEFAULT)
    # a query the length gate lifts (it asks for the long answer whole) keeps the blend
    gated = "zephyr plan meeting notes agenda budget review office move"
    assert fusion(chat, gated, lean) == fusion(chat, gated, DEFAULT)


def test_without_a_long_memory_found_the_blend_is_kept(db_url: str) -> None:
    notes = [
        note(f"t{i}", text, NOW - timedelta(hours=10 - i)) | {"conversation": sitting}
        for i, (sitting, text) in enumerate(c for c in CHAT if c[1] != ANSWER)
    ]
    m = long_workspace(db_url, notes, embedder=FakeEmbedder(dim=1024), clock=lambda: NOW)
    try:
        lean = dataclasses.replace(DEFAULT, long_blend_dense=0.9)
        assert fusion(m, "zephyr plan weekly", lean) == fusion(m, "zephyr plan weekly", DEFAULT)
    finally:
        m.close()


def test_the_long_blend_is_a_policy_field_the_bench_can_sweep_and_off_in_every_preset() -> None:
    assert all(p.long_blend_dense == 0 for p in POLICIES.values())
    swept = variant(DEFAULT, {k: v[0] for k, v in parse_tune(["long_blend_dense=0.6"]).items()})
    assert swept.long_blend_dense == 0.6
