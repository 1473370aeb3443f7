"""The length prior: a memory longer than one passage pays for its many chances to match."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from episodic import Episodic
from episodic.bench.folds import parse_tune, variant
from episodic.embed.fake import FakeEmbedder
from episodic.recall.policies import DEFAULT, RecallPolicy, get_policy
from episodic.scoring.passages import PASSAGE_CHARS
from episodic.scoring.prior import (
    head_gap,
    length_prior,
    length_prior_floor,
    length_share_for,
    long_margin,
    mix_length_prior,
)
from long_memories import long_workspace, note

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
# The prior alone: no fusion with the plain ranking, never lifted per query.
ALONE = {"length_share": 1.0, "length_gate": 0.0}

# The user's one-line standing instruction, and a long answer that talks around the same
# words (as an assistant's answers do) without stating it.
INSTRUCTION = "Always include error status codes when I ask about API error handling."
FILLER = (
    "Here is a walkthrough of the deployment checklist, the build cache, the staging "
    "servers, the release notes and the rollback plan for the weather dashboard. "
)
ANSWER = (
    "API error responses: wrap each API call, log the API error and its responses, retry "
    "the request with backoff, and keep error handling in one place. "
) * 8 + FILLER * 15
# Unrelated notes, so that the words of the two memories are rare in the workspace, as
# they are in a real one (BM25 gives words most memories hold no weight).
OTHERS = [
    f"note {i}: lunch at noon, the {colour} meeting moved to friday"
    for i, colour in enumerate(
        [
            "red",
            "blue",
            "green",
            "amber",
            "violet",
            "teal",
            "pink",
            "gray",
            "gold",
            "silver",
            "jade",
            "ruby",
            "onyx",
            "pearl",
        ]
    )
]


def test_short_memories_are_untouched_and_long_ones_pay_with_their_length() -> None:
    assert length_prior(80, 0.4) == 1.0
    assert length_prior(PASSAGE_CHARS, 0.4) == 1.0
    assert length_prior(50_000, 0.0) == 1.0
    assert length_prior(4 * PASSAGE_CHARS, 0.2) == pytest.approx(4**-0.2)
    # the longer, the more it pays, and a stronger prior asks more of it
    assert length_prior(16_000, 0.2) < length_prior(4_000, 0.2) < 1.0
    assert length_prior(4_000, 0.4) < length_prior(4_000, 0.2)
    # the floor is what the longest memory keeps
    assert length_prior_floor(0.2, 1_048_576) == pytest.approx(length_prior(1_048_576, 0.2))


@pytest.fixture
def mem(db_url: str) -> Iterator[Episodic]:
    texts = [ANSWER, INSTRUCTION, *OTHERS]
    notes = [
        note(f"e{i}", t, NOW - timedelta(hours=30 - i), type="chat.turn")
        for i, t in enumerate(texts)
    ]
    m = long_workspace(db_url, notes, embedder=FakeEmbedder(dim=1024), clock=lambda: NOW)
    yield m
    m.close()


def test_the_users_short_instruction_outranks_a_long_answer_repeating_its_words(
    mem: Episodic,
) -> None:
    query = "how should API error handling responses look"
    off = dataclasses.replace(DEFAULT, length_prior=0.0, **ALONE)
    without = mem.recall(query, workspace="w", k=3, mark=False, policy=off)
    assert len(ANSWER) > 3 * PASSAGE_CHARS
    # without the prior the long answer's repeated words put it first
    assert without.hits[0].memory.content == ANSWER
    policy = dataclasses.replace(DEFAULT, length_prior=0.4, **ALONE)
    with_prior = mem.recall(query, workspace="w", k=3, mark=False, policy=policy, explain=True)
    assert with_prior.hits[0].memory.content == INSTRUCTION
    assert with_prior.hits[1].memory.content == ANSWER
    # the trace shows what the prior took, beside the policy's factors
    assert with_prior.trace is not None
    stage = with_prior.trace.stages["rerank:importance_priorxscope_levelxlength"]
    rows = {row.memory_id: row.detail for row in stage}
    assert rows[with_prior.hits[1].id]["length"] == pytest.approx(length_prior(len(ANSWER), 0.4))
    assert rows[with_prior.hits[0].id]["length"] == 1.0


def test_a_policy_with_no_factors_still_pays_the_prior(mem: Episodic) -> None:
    # `dense` re-ranks nothing of its own: the prior alone must still be applied
    policy = dataclasses.replace(get_policy("dense"), length_prior=0.4)
    assert policy.factors == ()
    query = "how should API error handling responses look"
    plain = mem.recall(query, workspace="w", k=20, mark=False, policy="dense")
    priced = mem.recall(query, workspace="w", k=20, mark=False, policy=policy)
    before = {h.memory.content: h.score for h in plain.hits}
    after = {h.memory.content: h.score for h in priced.hits}
    assert after[ANSWER] == pytest.approx(before[ANSWER] * length_prior(len(ANSWER), 0.4))
    assert after[INSTRUCTION] == pytest.approx(before[INSTRUCTION])


def test_the_fusion_of_both_rankings_keeps_a_long_memory_both_place_high() -> None:
    # scored with the prior: the short "s1".."s3" lead, the long "long" is fourth; without
    # the prior "long" (4 passages at 0.8: factor 4^-0.8) is first by far
    chars = {"s1": 200, "s2": 200, "s3": 200, "long": 4 * PASSAGE_CHARS, "s4": 200}
    factor = length_prior(4 * PASSAGE_CHARS, 0.8)
    ranked = [("s1", 0.50), ("s2", 0.45), ("s3", 0.40), ("long", 0.9 * factor), ("s4", 0.10)]
    assert ranked[3][1] < ranked[2][1]
    # the prior's ranking alone (share 1) and no prior leave the ranking as it is
    assert mix_length_prior(ranked, chars, 0.8, 1.0) == ranked
    assert mix_length_prior(ranked, chars, 0.0, 0.3) == ranked
    # the ranking without the prior alone (share 0) puts the long memory first
    plain = mix_length_prior(ranked, chars, 0.8, 0.0)
    assert [i for i, _ in plain] == ["long", "s1", "s2", "s3", "s4"]
    # a share of the prior's ranking moves it between the two
    mixed = mix_length_prior(ranked, chars, 0.8, 0.3, k=5)
    assert [i for i, _ in mixed].index("long") in (1, 2)
    # the places keep their scores: only which memory holds each one changes
    assert [s for _, s in mixed] == sorted((s for _, s in ranked), reverse=True)
    assert sorted(i for i, _ in mixed) == sorted(chars)


def test_a_share_of_the_prior_keeps_the_long_answer_above_where_the_prior_puts_it(
    mem: Episodic,
) -> None:
    query = "how should API error handling responses look"
    prior = dataclasses.replace(DEFAULT, length_prior=2.0, **ALONE)
    alone = [
        h.memory.content
        for h in mem.recall(query, workspace="w", k=5, mark=False, policy=prior).hits
    ]
    shared = dataclasses.replace(prior, length_share=0.3, length_rank_k=1)
    mixed = [
        h.memory.content
        for h in mem.recall(query, workspace="w", k=5, mark=False, policy=shared).hits
    ]
    assert alone.index(ANSWER) > alone.index(INSTRUCTION)
    # the ranking without the prior puts the answer first: with a share of it the answer
    # climbs back above the places the prior alone gives it
    assert mixed.index(ANSWER) < alone.index(ANSWER)
    assert sorted(mixed) == sorted(alone)


def test_the_margin_compares_the_best_long_and_the_best_short_matches() -> None:
    long, short = 3 * PASSAGE_CHARS, 200
    chars = {"l1": long, "l2": long, "l3": long, "s1": short, "s2": short, "s3": short}
    cosines = {"l1": 0.8, "l2": 0.7, "l3": 0.1, "s1": 0.5, "s2": 0.4, "s3": 0.0}
    assert long_margin(cosines, chars, 2) == pytest.approx(0.75 - 0.45)
    assert long_margin(cosines, chars, 1) == pytest.approx(0.8 - 0.5)
    # a memory whose length is not known, or one kind missing, gives no margin
    assert long_margin({**cosines, "x": 0.99}, chars, 1) == pytest.approx(0.3)
    assert long_margin({"l1": 0.8}, chars, 3) == 0.0
    assert long_margin({"s1": 0.8}, chars, 3) == 0.0


def test_the_gate_lifts_the_prior_only_when_the_long_matches_stand_out() -> None:
    chars = {"s1": 200, "long": 4 * PASSAGE_CHARS}
    factor = length_prior(4 * PASSAGE_CHARS, 0.8)
    ranked = [("s1", 0.5), ("long", 0.9 * factor)]
    # the long answer matches 0.3 better than the short message: a gate of 0.2 lifts the
    # prior (share 0: the ranking without it, where its plain score 0.9 leads), one of 0.4
    # keeps the share given, 0 never lifts it
    cosines = {"s1": 0.4, "long": 0.7}
    assert length_share_for(chars, cosines, share=1.0, gate=0.2, top=3) == 0.0
    lifted = mix_length_prior(ranked, chars, 0.8, 0.0)
    assert [i for i, _ in lifted] == ["long", "s1"]
    for gate in (0.4, 0.0):
        assert length_share_for(chars, cosines, share=1.0, gate=gate, top=3) == 1.0


def test_a_question_its_long_answers_match_best_is_answered_without_the_prior(
    mem: Episodic,
) -> None:
    query = "API error responses: wrap each API call, log the API error and its responses"
    prior = dataclasses.replace(DEFAULT, length_prior=2.0, **ALONE)
    alone = mem.recall(query, workspace="w", k=3, mark=False, policy=prior, explain=True)
    assert alone.hits[0].memory.content != ANSWER
    gated = dataclasses.replace(prior, length_gate=0.01)
    lifted = mem.recall(query, workspace="w", k=3, mark=False, policy=gated)
    assert lifted.hits[0].memory.content == ANSWER


def test_the_head_gap_is_how_far_the_best_match_stands_above_the_rest() -> None:
    cosines = {"a": 0.62, "b": 0.60, "c": 0.59, "d": 0.20}
    assert head_gap(cosines, 3) == pytest.approx(0.03)
    assert head_gap(cosines, 2) == pytest.approx(0.02)
    assert head_gap(cosines, 4) == pytest.approx(0.42)
    # too few matches to call the head level: never level
    assert head_gap(cosines, 5) == math.inf
    assert head_gap({"a": 0.9}, 1) == math.inf
    assert head_gap({}, 3) == math.inf


def test_a_level_head_takes_the_priors_ranking_alone_unless_the_gate_lifts_it() -> None:
    chars = {"s1": 200, "long": 4 * PASSAGE_CHARS, "s2": 200, "s3": 200}
    level = {"s1": 0.61, "long": 0.60, "s2": 0.59, "s3": 0.3}
    peaked = {"s1": 0.61, "long": 0.45, "s2": 0.40, "s3": 0.3}

    def share(cosines: dict[str, float], *, level: float, gate: float = 0.0) -> float:
        return length_share_for(
            chars, cosines, share=0.3, gate=gate, top=1, level=level, level_depth=3
        )

    # a level head (best over third 0.02 < 0.1): the prior's ranking alone
    assert share(level, level=0.1) == 1.0
    # a peaked head (0.21), or no level rule, keeps the share given
    assert share(peaked, level=0.1) == 0.3
    assert share(level, level=0.0) == 0.3
    # a query whose long memory matches it clearly better is lifted first: no prior at all
    long_best = {"long": 0.85, "s2": 0.80, "s1": 0.78, "s3": 0.3}
    assert share(long_best, level=0.1) == 1.0
    assert share(long_best, level=0.1, gate=0.04) == 0.0
    # what the shares do: with the prior the short "s1" leads; without it the long answer
    # does by far, and fused at 0.3 (rank constant 1) it climbs back to the first place
    factor = length_prior(4 * PASSAGE_CHARS, 0.8)
    ranked = [("s1", 0.5), ("s2", 0.45), ("s3", 0.4), ("long", 0.9 * factor)]
    assert mix_length_prior(ranked, chars, 0.8, 1.0)[0][0] == "s1"
    assert mix_length_prior(ranked, chars, 0.8, 0.3, k=1)[0][0] == "long"


def test_the_level_rule_is_a_policy_field_the_bench_can_sweep() -> None:
    # off in `default` (it costs summaries on conversation ingest) and every preset
    assert DEFAULT.length_level == 0.0
    assert get_policy("dense").length_level == 0.0
    sweep = parse_tune(["length_level=0,0.04", "length_level_depth=3,5"])
    assert sweep["length_level"] == (0.0, 0.04)
    assert sweep["length_level_depth"] == (3, 5)
    assert isinstance(sweep["length_level_depth"][0], int)
    tuned = variant(DEFAULT, {"length_level": 0.04, "length_level_depth": 5})
    assert (tuned.length_level, tuned.length_level_depth) == (0.04, 5)


# Three long answers about API errors, each matching the question about as well as the
# user's one-line instruction does (a level head: no memory stands out), then walking
# through a deployment; and the instruction itself.
API_SENTENCES = (
    "API responses and error handling: validate the API input, return clear error "
    "responses, and document how errors look. ",
    "API error handling and responses: check the API input, send clear error responses, "
    "and describe how errors look. ",
    "Error handling for API responses: test the API input, give clear error responses, and "
    "show how errors look. ",
)
LEVEL_ANSWERS = [s * 6 + FILLER * 5 for s in API_SENTENCES]


@pytest.fixture
def level_mem(db_url: str) -> Iterator[Episodic]:
    texts = [*LEVEL_ANSWERS, INSTRUCTION, *OTHERS]
    notes = [
        note(f"e{i}", t, NOW - timedelta(hours=30 - i), type="chat.turn")
        for i, t in enumerate(texts)
    ]
    m = long_workspace(db_url, notes, embedder=FakeEmbedder(dim=1024), clock=lambda: NOW)
    yield m
    m.close()


def test_a_fact_query_with_a_level_head_gets_the_message_and_a_summary_keeps_the_answers(
    level_mem: Episodic,
) -> None:
    fact = "how should API error handling responses look"
    summary = "walk me through the deployment checklist, the build cache and the staging servers"
    level = dataclasses.replace(DEFAULT, length_level=0.04, length_level_depth=3)
    fused = DEFAULT
    assert all(len(a) > PASSAGE_CHARS for a in LEVEL_ANSWERS)

    def first(query: str, policy: RecallPolicy) -> str:
        return (
            level_mem.recall(query, workspace="w", k=3, mark=False, policy=policy)
            .hits[0]
            .memory.content
        )

    # `default`'s fused ranking keeps a long answer first for the fact question too
    assert first(fact, fused) in LEVEL_ANSWERS
    # the level rule gives the question whose head is level the user's message first
    assert first(fact, level) == INSTRUCTION
    # a question its long answers match clearly best keeps them first
    assert first(summary, level) in LEVEL_ANSWERS
    # `--explain` names the ranking each question took
    for query, policy, stage in (
        (fact, level, "length:prior"),
        (fact, fused, "length:fused"),
        (summary, level, "length:plain"),
    ):
        result = level_mem.recall(
            query, workspace="w", k=3, mark=False, policy=policy, explain=True
        )
        assert result.trace is not None
        assert [n for n in result.trace.stages if n.startswith("length:")] == [stage]
