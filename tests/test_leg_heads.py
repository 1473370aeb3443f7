"""Each leg's best few keep a place near the top of the final ranking (policy.leg_keep), and
each leg's best few long ones (policy.long_keep)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from episodic import Episodic
from episodic.bench.folds import parse_tune, variant
from episodic.embed.fake import FakeEmbedder
from episodic.recall import leg_keep
from episodic.recall.leg_keep import keeps
from episodic.recall.policies import DEFAULT, POLICIES
from episodic.scoring.leg_heads import keep_leg_heads, keep_long_heads, leads_long, leg_heads
from long_memories import long_workspace, note

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
KEEP_STAGE = "keep:legs"
RANKED = [("a", 0.9), ("b", 0.8), ("c", 0.7), ("d", 0.6), ("e", 0.5), ("f", 0.4)]


def ids(pairs: list[tuple[str, float]]) -> list[str]:
    return [i for i, _ in pairs]


def test_each_legs_first_few_are_taken_in_turn_and_once() -> None:
    dense, sparse = ["d1", "both", "d3"], ["both", "s2"]
    assert leg_heads([dense, sparse], 1) == ["d1", "both"]
    assert leg_heads([dense, sparse], 2) == ["d1", "both", "s2"]
    assert leg_heads([dense, sparse], 3) == ["d1", "both", "s2", "d3"]
    assert leg_heads([dense, []], 2) == ["d1", "both"]
    assert leg_heads([dense, sparse], 0) == []


def test_a_leg_head_below_the_place_moves_up_to_it_and_scores_stay_ordered() -> None:
    kept, moved = keep_leg_heads(RANKED, ["e"], 3)
    assert ids(kept) == ["a", "b", "e", "c", "d", "f"]
    assert moved == {"e": 5}
    scores = [s for _, s in kept]
    assert scores == sorted(scores, reverse=True)
    assert 0.7 < dict(kept)["e"] < 0.8  # between the two it now sits between
    # everyone else keeps its score
    assert {i: s for i, s in kept if i != "e"} == {i: s for i, s in RANKED if i != "e"}


def test_several_moved_keep_their_order_and_one_already_there_stays() -> None:
    kept, moved = keep_leg_heads(RANKED, ["f", "c", "e"], 3)
    assert ids(kept) == ["a", "b", "c", "e", "f", "d"]
    assert moved == {"e": 5, "f": 6}  # c held place 3 already
    scores = [s for _, s in kept]
    assert scores == sorted(scores, reverse=True)
    # at place 1 the moved one goes above the first
    top, moved = keep_leg_heads(RANKED, ["d"], 1)
    assert ids(top)[:2] == ["d", "a"] and moved == {"d": 4}
    assert top[0][1] > top[1][1]


def test_heads_at_or_above_the_place_and_heads_not_ranked_move_nothing() -> None:
    for heads, rank in ((["a", "c"], 3), (["b"], 2), (["x"], 2), (["c", "d"], 3)):
        kept, moved = keep_leg_heads(RANKED, heads, rank)
        assert kept == RANKED and moved == {}, (heads, rank)
    # off: no heads, or no place
    assert keep_leg_heads(RANKED, [], 2) == (RANKED, {})
    assert keep_leg_heads(RANKED, ["f"], 0) == (RANKED, {})


# A short note the dense leg finds best, and notes that repeat the query's rare word many
# times: BM25 and the blend put all of them above the short note.
DENSE_BEST = "my weekly plan"
WORDY = [
    f"{'zephyr ' * (2 + n)}plan {w} meeting notes and the {w} agenda"
    for n, w in enumerate(["red", "blue", "green", "amber", "violet", "teal"])
]
OTHERS = [
    f"weekly plan {w}: call the bank, pay rent, book the {w} dentist"
    for w in ["one", "two", "three", "four", "five", "six", "seven", "eight"]
]
QUERY = "my weekly plan zephyr"


@pytest.fixture
def mem(db_url: str) -> Iterator[Episodic]:
    texts = [DENSE_BEST, *WORDY, *OTHERS]
    notes = [note(f"e{i}", t, NOW - timedelta(hours=30 - i)) for i, t in enumerate(texts)]
    m = long_workspace(db_url, notes, embedder=FakeEmbedder(dim=1024), clock=lambda: NOW)
    yield m
    m.close()


def test_the_dense_legs_best_keeps_a_place_near_the_top_whatever_k(mem: Episodic) -> None:
    dense = mem.recall(QUERY, workspace="w", k=8, mark=False, policy="dense")
    assert dense.hits[0].memory.content == DENSE_BEST
    plain = dataclasses.replace(DEFAULT, leg_keep=0)
    off = mem.recall(QUERY, workspace="w", k=8, mark=False, policy=plain, explain=True)
    contents = [h.memory.content for h in off.hits]
    assert contents.index(DENSE_BEST) == 6  # below every wordy note
    assert off.trace is not None and KEEP_STAGE not in off.trace.stages
    keep = dataclasses.replace(DEFAULT, leg_keep=1, leg_keep_rank=3, leg_keep_chars=0)
    for k in (3, 8, 20):
        on = mem.recall(QUERY, workspace="w", k=k, mark=False, policy=keep, explain=True)
        assert on.hits[2].memory.content == DENSE_BEST, k
        assert [h.score for h in on.hits] == sorted((h.score for h in on.hits), reverse=True)
        # --explain names the step and where the candidate came from
        assert on.trace is not None
        stage = on.trace.stages[KEEP_STAGE]
        assert stage[2].memory_id == on.hits[2].id
        assert stage[2].detail == {"from": 7.0}
        assert all(row.detail == {} for row in stage if row.rank != 3)
        assert list(on.trace.stages).index(KEEP_STAGE) > list(on.trace.stages).index(
            "rerank:importance_priorxscope_levelxlength"
        )


def test_short_memories_alone_move_nothing_read_no_heads_and_still_show_the_stage(
    mem: Episodic, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every note is short: under `default` (short memories pass long ones only) nothing
    # can pass anything, and the step ends before it gathers the legs' heads or weighs
    # the length gate; --explain still shows it, with nothing moved.
    assert DEFAULT.leg_keep_chars == 1000
    plain = dataclasses.replace(DEFAULT, leg_keep=0)
    before = mem.recall(QUERY, workspace="w", k=8, mark=False, policy=plain)

    def not_reached(*args: object, **kwargs: object) -> None:
        raise AssertionError("no memory is long: the step has nothing to weigh")

    monkeypatch.setattr(leg_keep, "keep_leg_heads", not_reached)
    monkeypatch.setattr(leg_keep, "long_margin", not_reached)
    result = mem.recall(QUERY, workspace="w", k=8, mark=False, explain=True)
    assert [h.id for h in result.hits] == [h.id for h in before.hits]
    assert result.trace is not None
    stage = result.trace.stages[KEEP_STAGE]
    names = list(result.trace.stages)
    before_keep = result.trace.stages[names[names.index(KEEP_STAGE) - 1]]
    assert [row.memory_id for row in stage] == [row.memory_id for row in before_keep]
    assert all(row.detail == {} for row in stage)
    assert "keep:long" not in result.trace.stages


def test_the_keep_is_a_policy_field_the_bench_can_sweep_and_on_in_default_only() -> None:
    # on in `default` (its 6 best short memories to place 3), off in every other preset
    assert (DEFAULT.leg_keep, DEFAULT.leg_keep_rank, DEFAULT.leg_keep_chars) == (6, 3, 1000)
    assert all(p.leg_keep == 0 for p in POLICIES.values() if p is not DEFAULT)
    sweep = parse_tune(["leg_keep=0,1,2", "leg_keep_rank=3,5", "leg_keep_chars=0,1000"])
    assert sweep["leg_keep_chars"] == (0, 1000)
    assert sweep["leg_keep"] == (0, 1, 2) and sweep["leg_keep_rank"] == (3, 5)
    assert isinstance(sweep["leg_keep_rank"][0], int)
    tuned = variant(DEFAULT, {"leg_keep": 2, "leg_keep_rank": 5})
    assert (tuned.leg_keep, tuned.leg_keep_rank) == (2, 5)


def test_with_passable_a_head_passes_only_those_and_stops_below_the_rest() -> None:
    # "e" may pass "d" only: it stops below "c"
    kept, moved = keep_leg_heads(RANKED, ["e"], 1, passable={"d", "b"})
    assert ids(kept) == ["a", "b", "c", "e", "d", "f"] and moved == {"e": 5}
    # nothing it may pass directly above it: it stays
    assert keep_leg_heads(RANKED, ["e"], 1, passable={"a", "b"}) == (RANKED, {})


# Long notes that repeat the query's rare word, a short one that repeats it more, and the
# short note the dense leg finds best.
SHORT_WORDY = "zephyr zephyr zephyr zephyr plan"
SHORT_WORDY_2 = "zephyr zephyr zephyr plan"
LONG = [
    (
        f"zephyr plan {w} meeting notes and the {w} agenda, " * 4
        + f"then the {w} budget review, the {w} hiring round and the {w} office move. "
    )
    * 10
    for w in ["red", "blue", "green", "amber"]
]
LONG_QUERY = "zephyr plan meeting notes agenda budget review hiring round office move"
# The length prior off, so that the long notes outrank the short one the dense leg prefers.
NO_PRIOR = dataclasses.replace(DEFAULT, length_prior=0.0, leg_keep=0)
SHORT_ONLY = dataclasses.replace(NO_PRIOR, leg_keep=1, leg_keep_rank=1, leg_keep_chars=1000)


@pytest.fixture
def long_mem(db_url: str) -> Iterator[Episodic]:
    texts = [DENSE_BEST, SHORT_WORDY, SHORT_WORDY_2, *LONG, *OTHERS]
    notes = [note(f"e{i}", t, NOW - timedelta(hours=30 - i)) for i, t in enumerate(texts)]
    m = long_workspace(db_url, notes, embedder=FakeEmbedder(dim=1024), clock=lambda: NOW)
    yield m
    m.close()


def test_a_legs_best_short_memory_passes_the_long_ones_and_no_short_one(
    long_mem: Episodic,
) -> None:
    assert all(len(t) > 1000 for t in LONG)
    off = long_mem.recall(QUERY, workspace="w", k=8, mark=False, policy=NO_PRIOR)
    contents = [h.memory.content for h in off.hits]
    assert set(contents[:2]) == {SHORT_WORDY, SHORT_WORDY_2}
    assert contents.index(DENSE_BEST) == 6  # below four long notes
    on = long_mem.recall(QUERY, workspace="w", k=8, mark=False, policy=SHORT_ONLY, explain=True)
    # place 1 is asked for, but it passes only the long notes: the short ones the ranking
    # put first stay above it
    assert [h.memory.content for h in on.hits][:3] == [*contents[:2], DENSE_BEST]
    assert on.trace is not None
    assert on.trace.stages[KEEP_STAGE][2].detail == {"from": 7.0}


def test_a_query_its_long_memories_match_best_keeps_no_short_one(long_mem: Episodic) -> None:
    on = long_mem.recall(
        LONG_QUERY, workspace="w", k=8, mark=False, policy=SHORT_ONLY, explain=True
    )
    off = long_mem.recall(LONG_QUERY, workspace="w", k=8, mark=False, policy=NO_PRIOR)
    assert [h.id for h in on.hits] == [h.id for h in off.hits]
    assert {h.memory.content for h in on.hits[4:6]} == {SHORT_WORDY, SHORT_WORDY_2}
    assert on.trace is not None and "keep:long" in on.trace.stages
    # without the length gate the same query lifts its leg's best short memory
    ungated = dataclasses.replace(SHORT_ONLY, length_gate=0.0)
    lifted = long_mem.recall(LONG_QUERY, workspace="w", k=8, mark=False, policy=ungated)
    assert lifted.hits[0].memory.content in (SHORT_WORDY, SHORT_WORDY_2)


def test_default_lifts_the_dense_legs_best_short_memory_over_long_ones(long_mem: Episodic) -> None:
    plain = dataclasses.replace(DEFAULT, leg_keep=0)
    before = [
        h.memory.content
        for h in long_mem.recall(QUERY, workspace="w", k=8, mark=False, policy=plain).hits
    ]
    result = long_mem.recall(QUERY, workspace="w", k=8, mark=False, explain=True)
    after = [h.memory.content for h in result.hits]
    assert result.trace is not None and KEEP_STAGE in result.trace.stages
    # the length prior alone leaves it below two long notes; kept, it rises to place 3
    assert before.index(DENSE_BEST) == 4
    assert after.index(DENSE_BEST) == 2
    assert after[:2] == before[:2]


# "c", "e" and "f" are long (over 1,000 characters), the rest short.
LENGTHS = {"a": 500, "b": 500, "c": 2000, "d": 500, "e": 3000, "f": 4000}
LONG_LEGS = [["a", "e", "c"], ["f"]]  # the dense leg's best first, the keyword leg's


def test_a_legs_best_long_memory_passes_short_ones_only_with_a_limit() -> None:
    # each leg's first long one: "e" (the dense leg's "a" is short) and "f"
    kept, moved = keep_long_heads(RANKED, LONG_LEGS, LENGTHS, 1000, 1, 2, 1000)
    # "e" passes the short "d", stops below the long "c"; "f" stops below "e"
    assert ids(kept) == ["a", "b", "c", "e", "f", "d"] and moved == {"e": 5, "f": 6}
    scores = [s for _, s in kept]
    assert scores == sorted(scores, reverse=True)
    # two each: "c" counts too, rises to place 2 past "b", and the others follow it
    kept, moved = keep_long_heads(RANKED, LONG_LEGS, LENGTHS, 1000, 2, 2, 1000)
    assert ids(kept) == ["a", "c", "e", "f", "b", "d"] and moved == {"c": 3, "e": 5, "f": 6}
    # a memory of unknown length is passed by none
    unknown = {i: n for i, n in LENGTHS.items() if i != "d"}
    assert keep_long_heads(RANKED, LONG_LEGS, unknown, 1000, 1, 2, 1000) == (RANKED, {})
    # off
    assert keep_long_heads(RANKED, LONG_LEGS, LENGTHS, 1000, 0, 2) == (RANKED, {})
    # long is over the limit: at 2,500 only "e" and "f" are long, and "c" may be passed
    kept, moved = keep_long_heads(RANKED, LONG_LEGS, LENGTHS, 2500, 1, 1, 2500)
    assert ids(kept)[:2] == ["e", "f"] and moved == {"e": 5, "f": 6}


def test_by_default_a_legs_best_long_memory_passes_any_memory_but_another_kept_one() -> None:
    # passing short ones only, the long "c" held "e" back; passing any, it does not
    kept, moved = keep_long_heads(RANKED, LONG_LEGS, LENGTHS, 1000, 1, 2)
    assert ids(kept) == ["a", "e", "f", "b", "c", "d"] and moved == {"e": 5, "f": 6}
    assert keep_long_heads(RANKED, LONG_LEGS, LENGTHS, 1000, 1, 2, 1000)[0] != kept


# The length prior taken whole: every long note sinks below the short ones.
WHOLE_PRIOR = dataclasses.replace(DEFAULT, length_share=1.0)
LONG_KEPT = dataclasses.replace(WHOLE_PRIOR, long_keep=1, long_keep_rank=3)


def test_a_legs_best_long_memory_keeps_a_place_under_the_whole_prior(long_mem: Episodic) -> None:
    off = long_mem.recall(QUERY, workspace="w", k=10, mark=False, policy=WHOLE_PRIOR)
    assert not any(len(h.memory.content) > 1000 for h in off.hits)
    for k in (3, 10):
        on = long_mem.recall(QUERY, workspace="w", k=k, mark=False, policy=LONG_KEPT, explain=True)
        contents = [h.memory.content for h in on.hits]
        # it passes the short note below place 3, not the two above it
        assert contents[:3] == [*[h.memory.content for h in off.hits][:2], LONG[0]], k
        assert [h.score for h in on.hits] == sorted((h.score for h in on.hits), reverse=True)
        # --explain names where it came from and its length
        assert on.trace is not None
        stage = on.trace.stages[KEEP_STAGE]
        assert stage[2].memory_id == on.hits[2].id
        assert stage[2].detail == {"from": 4.0, "chars": float(len(LONG[0]))}


def test_a_leg_leads_long_when_one_of_its_first_few_is_long() -> None:
    assert leads_long(["a", "b", "c"], LENGTHS, 1000, 3)
    assert not leads_long(["a", "b", "c"], LENGTHS, 1000, 2)
    assert leads_long(["a", "b"], LENGTHS, 1000, 0)  # 0: always
    assert not leads_long(["x", "c"], LENGTHS, 2000, 2)  # unknown, and not over the limit
    assert not leads_long([], LENGTHS, 1000, 1)


def test_with_a_lead_only_a_query_the_dense_leg_finds_long_answers_for_keeps_them(
    long_mem: Episodic,
) -> None:
    # the dense leg's first three for this query are short, its fourth long
    dense = long_mem.recall("zephyr plan", workspace="w", k=4, mark=False, policy="dense")
    assert [len(h.memory.content) > 1000 for h in dense.hits] == [False, False, False, True]
    for lead, kept in ((0, True), (3, False), (4, True)):
        policy = dataclasses.replace(LONG_KEPT, long_keep_lead=lead)
        on = long_mem.recall("zephyr plan", workspace="w", k=10, mark=False, policy=policy)
        assert (on.hits[2].memory.content == LONG[0]) is kept, lead
        assert any(len(h.memory.content) > 1000 for h in on.hits) is kept, lead


def test_a_query_the_gate_lifts_keeps_no_long_memory_either(long_mem: Episodic) -> None:
    only_long = dataclasses.replace(LONG_KEPT, leg_keep=0, leg_keep_chars=0)
    assert keeps(only_long) and not keeps(dataclasses.replace(only_long, long_keep=0))
    on = long_mem.recall(LONG_QUERY, workspace="w", k=8, mark=False, policy=only_long, explain=True)
    assert on.trace is not None and "keep:long" in on.trace.stages
    # the query the gate does not lift runs the step
    other = long_mem.recall(QUERY, workspace="w", k=8, mark=False, policy=only_long, explain=True)
    assert other.trace is not None and KEEP_STAGE in other.trace.stages
    assert other.hits[2].memory.content == LONG[0]


def test_the_long_keep_is_a_policy_field_the_bench_can_sweep_and_off_in_every_preset() -> None:
    assert all(p.long_keep == 0 for p in POLICIES.values())
    sweep = parse_tune(["long_keep=0,2,3", "long_keep_rank=3,6", "long_keep_lead=0,1"])
    assert sweep["long_keep"] == (0, 2, 3) and sweep["long_keep_rank"] == (3, 6)
    assert sweep["long_keep_lead"] == (0, 1)
    assert isinstance(sweep["long_keep"][0], int)
    tuned = variant(DEFAULT, {"long_keep": 2, "long_keep_rank": 6})
    assert (tuned.long_keep, tuned.long_keep_rank) == (2, 6)
