"""The benchmark's metric functions against values worked out by hand."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence

import pytest

from episodic.bench.metrics import (
    DEPTH,
    METRIC_KEYS,
    all_at_k,
    dedupe,
    mean_scores,
    ndcg_at_k,
    parse_evidence,
    percentile,
    recall_at_k,
    score_ranking,
    to_sessions,
)

# 1/log2(rank + 1) for ranks 2, 3 and 4: the discounts the NDCG cases below add up.
D2 = 0.6309297535714575
D3 = 0.5
D4 = 0.43067655807339306

Metric = Callable[[Sequence[str], Collection[str], int], float]

KNOWN = {"D1:1", "D1:2", "D4:4", "D4:6", "D8:6", "D9:1", "D9:17", "D11:26", "D30:5"}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (["D1:1"], ["D1:1"]),
        (["D8:6; D9:17"], ["D8:6", "D9:17"]),  # two ids in one entry, ';' between
        (["D9:1 D4:4 D4:6"], ["D9:1", "D4:4", "D4:6"]),  # space-separated
        (["D"], []),  # a bare letter names no turn
        (["D:11:26"], []),  # not repaired to D11:26: no guessing
        (["D30:05"], []),  # not repaired to D30:5 either
        (["D1:1", "D1:1", "D1:2;D1:1"], ["D1:1", "D1:2"]),  # deduplicated, first-seen order
        (["D10:19"], []),  # well-formed but not a turn of this conversation
        (["D8:6; D", "", "  D1:2  "], ["D8:6", "D1:2"]),
        ([], []),
    ],
)
def test_parse_evidence_keeps_only_ids_that_name_a_turn(
    raw: list[str], expected: list[str]
) -> None:
    assert parse_evidence(raw, KNOWN) == expected


@pytest.mark.parametrize(
    ("ranking", "relevant", "k", "expected"),
    [
        (["a", "b", "c"], {"a", "c"}, 1, 0.5),
        (["a", "b", "c"], {"a", "c"}, 2, 0.5),
        (["a", "b", "c"], {"a", "c"}, 3, 1.0),
        (["a", "b", "c"], {"a", "c"}, 20, 1.0),  # k beyond the ranking
        (["d", "c", "b"], {"a", "b", "c", "d"}, 2, 0.5),
        (["x", "y"], {"a", "b", "c", "d"}, 2, 0.0),
        ([], {"a"}, 5, 0.0),
        (["b", "a"], ["a", "a"], 1, 0.0),  # a repeated relevant id counts once
        (["b", "a"], ["a", "a"], 2, 1.0),
    ],
)
def test_recall_at_k(ranking: list[str], relevant: set[str], k: int, expected: float) -> None:
    assert recall_at_k(ranking, relevant, k) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("ranking", "relevant", "k", "expected"),
    [
        (["a", "b"], {"a", "b"}, 10, 1.0),
        (["a", "x", "b"], {"a", "b"}, 2, 0.0),
        (["a", "x", "b"], {"a", "b"}, 3, 1.0),
        (["x"] * 9 + ["a"], {"a"}, 10, 1.0),
        (["x"] * 10 + ["a"], {"a"}, 10, 0.0),
        ([], {"a"}, 10, 0.0),
    ],
)
def test_all_at_k(ranking: list[str], relevant: set[str], k: int, expected: float) -> None:
    assert all_at_k(ranking, relevant, k) == expected


@pytest.mark.parametrize(
    ("ranking", "relevant", "k", "expected"),
    [
        (["a", "b", "x"], {"a", "b"}, 10, 1.0),
        (["b", "a"], {"a", "b"}, 10, 1.0),  # order among relevant ids does not matter
        (["x", "a", "y", "b"], {"a", "b"}, 10, (D2 + D4) / (1 + D2)),  # 0.650921
        (["x", "a"], {"a", "b"}, 10, D2 / (1 + D2)),  # 0.386853
        (["x", "y", "a"], {"a"}, 2, 0.0),  # relevant id below the cut
        (["x", "y", "a"], {"a"}, 3, D3),
        # three relevant ids but k=2: the ideal ranking has only two places
        (["a", "x", "b"], {"a", "b", "c"}, 2, 1 / (1 + D2)),  # 0.613147
        (["a", "a", "b"], {"a", "b"}, 10, 1.0),  # a repeat is not a second gain
        ([], {"a"}, 10, 0.0),
    ],
)
def test_ndcg_at_k(ranking: list[str], relevant: set[str], k: int, expected: float) -> None:
    assert ndcg_at_k(ranking, relevant, k) == pytest.approx(expected, abs=1e-12)


def test_ndcg_values_written_out() -> None:
    # The same numbers as above, as decimals, so a wrong discount cannot hide in D2..D4.
    assert ndcg_at_k(["x", "a", "y", "b"], {"a", "b"}, 10) == pytest.approx(0.650921, abs=1e-6)
    assert ndcg_at_k(["x", "a"], {"a", "b"}, 10) == pytest.approx(0.386853, abs=1e-6)
    assert ndcg_at_k(["a", "x", "b"], {"a", "b", "c"}, 2) == pytest.approx(0.613147, abs=1e-6)
    assert math.isclose(D2, 1 / math.log2(3)) and math.isclose(D4, 1 / math.log2(5))


@pytest.mark.parametrize("metric", [recall_at_k, all_at_k, ndcg_at_k])
def test_metrics_refuse_questions_without_evidence_and_bad_k(metric: Metric) -> None:
    with pytest.raises(ValueError, match="no relevant"):
        metric(["a"], set(), 5)
    with pytest.raises(ValueError, match="k must"):
        metric(["a"], {"a"}, 0)


def test_score_ranking_has_every_key() -> None:
    scores = score_ranking(["x", "a", "y", "b"], {"a", "b"})
    assert tuple(scores) == METRIC_KEYS
    assert METRIC_KEYS == ("recall@1", "recall@5", "recall@10", "recall@20", "all@10", "ndcg@10")
    assert scores["recall@1"] == 0.0
    assert scores["recall@5"] == scores["recall@10"] == scores["recall@20"] == 1.0
    assert scores["all@10"] == 1.0
    assert scores["ndcg@10"] == pytest.approx(0.650921, abs=1e-6)
    assert DEPTH == 20


def test_score_ranking_ignores_repeats_before_cutting() -> None:
    # "a" twice must not push "b" out of the top 2.
    assert score_ranking(["a", "a", "b"] + ["x"] * 20, {"a", "b"})["recall@1"] == 0.5
    assert recall_at_k(dedupe(["a", "a", "b"]), {"a", "b"}, 2) == 1.0


def test_mean_scores() -> None:
    rows = [score_ranking(["a"], {"a"}), score_ranking(["x"], {"a"})]
    means = mean_scores(rows)
    assert means["recall@1"] == 0.5 and means["ndcg@10"] == 0.5 and means["all@10"] == 0.5
    with pytest.raises(ValueError):
        mean_scores([])


SESSION_OF = {
    "D1:1": "session_1",
    "D1:3": "session_1",
    "D2:1": "session_2",
    "D2:5": "session_2",
    "D3:2": "session_3",
}


@pytest.mark.parametrize(
    ("turns", "expected"),
    [
        (["D2:1", "D1:3", "D2:5", "D3:2"], ["session_2", "session_1", "session_3"]),
        (["D1:1", "D1:3"], ["session_1"]),  # a session counts once, at its best turn
        (["D9:9", "D3:2"], ["session_3"]),  # an unknown turn has no session
        ([], []),
    ],
)
def test_to_sessions_dedupes_in_rank_order(turns: list[str], expected: list[str]) -> None:
    assert to_sessions(turns, SESSION_OF) == expected


def test_session_level_recall_cuts_after_dedupe() -> None:
    # 20 turns of session 1 and then one of session 2: at turn level the session-2 turn is
    # rank 21 and lost; at session level it is rank 2.
    turns = ["D1:1"] * 10 + ["D1:3"] * 10 + ["D2:1"]
    assert recall_at_k(turns, {"D2:1"}, 20) == 0.0
    assert recall_at_k(to_sessions(turns, SESSION_OF), {"session_2"}, 2) == 1.0


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        ([1.0, 2.0, 3.0, 4.0], 50, 2.5),  # mean of the middle two
        ([1.0, 2.0, 3.0, 4.0], 95, 3.85),  # position 2.85: 3 + 0.85 x (4 - 3)
        ([4.0, 1.0, 3.0, 2.0], 95, 3.85),  # input order does not matter
        ([10.0, 20.0, 30.0, 40.0, 50.0], 95, 48.0),  # position 3.8
        ([10.0, 20.0, 30.0, 40.0, 50.0], 50, 30.0),
        ([1.0, 2.0, 3.0, 4.0], 0, 1.0),
        ([1.0, 2.0, 3.0, 4.0], 100, 4.0),
        ([7.0], 95, 7.0),
    ],
)
def test_percentile(values: list[float], q: float, expected: float) -> None:
    assert percentile(values, q) == pytest.approx(expected)


def test_percentile_refuses_nothing_and_out_of_range() -> None:
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1.0], 101)
