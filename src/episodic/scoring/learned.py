"""The head of a ranking ordered again by a linear model over what the legs and the
ranking already know of each candidate: its cosine and BM25 score and their ranks, its
place in the ranking, its length, and three things about the query (how many of the
ranking's first memories are long, how long the question is, how well its best memory
matches). Each candidate feature also enters times each query feature, so one model
weighs a long answer differently where long answers fill the head (a task chat with an
assistant) than where they are rare (two people chatting).

The weights are fitted by ``benchmarks/bench_learned_rank.py`` (logistic regression,
each data set weighing the same, every question the same within its set) on LoCoMo and
BEAM together; that script reports the method's held-out folds. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

# A memory longer than this is "long" (one passage: scoring/passages.py).
LONG_CHARS = 1000
# How many of the ranking's first memories tell whether long ones fill the head.
CONTEXT_DEPTH = 20
# A long memory the ranking put among its first ``long_keep`` stays among this many first
# places, whatever the number of hits asked for: the places the model was judged on.
LONG_PLACES = 10

CANDIDATE_FEATURES = (
    "cosine",
    "cosine below the best",
    "1 / dense rank",
    "in the dense leg",
    "BM25 / the best BM25",
    "1 / BM25 rank",
    "in the BM25 leg",
    "1 / place",
    "log place",
    "log length",
    "long",
    "in both legs",
)
QUERY_FEATURES = ("long share of the head", "log question words", "best cosine")


@dataclass(frozen=True, slots=True)
class Model:
    """A fitted linear model: each feature's mean and spread (to standardise it), its
    weight, and the bias. Features in ``feature_row``'s order."""

    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float


@dataclass(frozen=True, slots=True)
class Legs:
    """What the legs said of a query: each candidate's cosine and BM25 score, with their
    ranks (1 is the best)."""

    cosine: Mapping[str, float]
    dense_rank: Mapping[str, int]
    bm25: Mapping[str, float]
    bm25_rank: Mapping[str, int]


def query_features(
    head: Sequence[str], chars: Mapping[str, int], question: str, best_cosine: float
) -> tuple[float, float, float]:
    """The three query features: the share of long memories among the ranking's first
    ``CONTEXT_DEPTH`` (``head`` best first), the log of the question's word count, and
    the best cosine (0 without a dense leg)."""
    first = head[:CONTEXT_DEPTH]
    long_share = (
        sum(1 for i in first if chars.get(i, 0) > LONG_CHARS) / len(first) if first else 0.0
    )
    return long_share, math.log(1 + len(question.split())), best_cosine


def candidate_features(
    memory_id: str, place: int, chars: int, legs: Legs, best_cosine: float, best_bm25: float
) -> list[float]:
    """The candidate features of one memory at ``place`` (1 is the first) of the
    ranking, ``chars`` long."""
    dense = legs.dense_rank.get(memory_id, 0)
    sparse = legs.bm25_rank.get(memory_id, 0)
    cosine = legs.cosine.get(memory_id, 0.0)
    return [
        cosine,
        cosine - best_cosine if dense else -1.0,
        1.0 / dense if dense else 0.0,
        1.0 if dense else 0.0,
        legs.bm25.get(memory_id, 0.0) / best_bm25 if sparse and best_bm25 > 0 else 0.0,
        1.0 / sparse if sparse else 0.0,
        1.0 if sparse else 0.0,
        1.0 / place,
        math.log(place),
        math.log(1 + chars),
        1.0 if chars > LONG_CHARS else 0.0,
        1.0 if dense and sparse else 0.0,
    ]


def feature_row(candidate: Sequence[float], query: Sequence[float]) -> list[float]:
    """A candidate's features, then each of them times each query feature, then the query
    features: what the model weighs."""
    row = list(candidate)
    for q in query:
        row.extend(c * q for c in candidate)
    row.extend(query)
    return row


def feature_rows(
    head: Sequence[str], chars: Mapping[str, int], legs: Legs, question: str
) -> list[list[float]]:
    """``feature_row`` for each of ``head`` (the ranking's first memories, best first)."""
    best_cosine = max(legs.cosine.values(), default=0.0)
    query = query_features(head, chars, question, best_cosine)
    best_bm25 = max(legs.bm25.values(), default=0.0)
    return [
        feature_row(
            candidate_features(i, place, chars.get(i, 0), legs, best_cosine, best_bm25), query
        )
        for place, i in enumerate(head, start=1)
    ]


def model_scores(model: Model, rows: Sequence[Sequence[float]]) -> list[float]:
    """The model's score (a logit) for each row."""
    coefficients, offset = _unscaled(model)
    return [offset + sum(c * x for c, x in zip(coefficients, row, strict=True)) for row in rows]


@lru_cache(maxsize=4)
def _unscaled(model: Model) -> tuple[tuple[float, ...], float]:
    """The model's weights on the raw features and its bias with the means taken out:
    one product per feature on every recall."""
    coefficients = tuple(w / s for w, s in zip(model.weights, model.scale, strict=True))
    offset = model.bias - sum(c * m for c, m in zip(coefficients, model.mean, strict=True))
    return coefficients, offset


def learned_order(
    head: Sequence[str],
    scores: Sequence[float],
    chars: Mapping[str, int],
    *,
    protect: int,
    long_keep: int,
) -> list[str]:
    """``head`` (best first) in the order of the model's ``scores``, but for its first
    ``protect``, which keep their places, and a long memory the ranking put among its
    first ``long_keep``, which stays among the first ``LONG_PLACES`` (the lowest of the
    others there gives its place up): a long answer the legs agreed on is not pushed out
    by the model's lean towards short ones."""
    fixed = list(head[:protect])
    by_model = sorted(range(protect, len(head)), key=lambda n: -scores[n])
    order = fixed + [head[n] for n in by_model]
    keepers = [i for i in head[:long_keep] if chars.get(i, 0) > LONG_CHARS]
    top = order[:LONG_PLACES]
    for i in keepers:
        if i in top:
            continue
        for n in range(len(top) - 1, -1, -1):
            if top[n] not in keepers and top[n] not in fixed:
                top[n] = i
                break
    chosen = set(top)
    return [i for i in order if i in chosen] + [i for i in order if i not in chosen]


# Fitted on every question of LoCoMo and BEAM (turn ingest) with the settings the fit chose
# (head 30, no protected places, long memories of the first 8 kept, L2 100), as
# `--tune learned_head=30` runs it; `default` leaves the step off. `python
# benchmarks/bench_learned_rank.py fit locomo=... beam=...` prints it. Features in
# ``feature_row``'s order.
MODEL = Model(
    mean=(
        0.320636,
        -0.425127,
        0.0780633,
        0.699829,
        0.3202,
        0.10114,
        0.534461,
        0.133166,
        2.48861,
        5.15606,
        0.080508,
        0.431321,
        0.0289057,
        -0.0254263,
        0.00716396,
        0.0643643,
        0.0368624,
        0.00891405,
        0.0527255,
        0.0103523,
        0.193464,
        0.54281,
        0.0438841,
        0.0487229,
        0.790835,
        -1.03691,
        0.192222,
        1.72489,
        0.793763,
        0.249149,
        1.32104,
        0.326831,
        6.10781,
        12.8066,
        0.23463,
        1.0721,
        0.207103,
        -0.267453,
        0.0499687,
        0.445592,
        0.203906,
        0.0639599,
        0.339319,
        0.0841076,
        1.5718,
        3.25596,
        0.0507649,
        0.276229,
        0.0777397,
        2.45431,
        0.631599,
    ),
    scale=(
        0.227894,
        0.385389,
        0.175271,
        0.458332,
        0.34451,
        0.200708,
        0.498811,
        0.18975,
        0.836142,
        1.07129,
        0.272078,
        0.495261,
        0.0838841,
        0.0911774,
        0.0409531,
        0.178643,
        0.121066,
        0.0468708,
        0.165135,
        0.0471323,
        0.51111,
        1.40447,
        0.1554,
        0.159398,
        0.582635,
        0.954535,
        0.436036,
        1.17086,
        0.874934,
        0.499505,
        1.26171,
        0.473074,
        2.25799,
        4.09729,
        0.801259,
        1.25557,
        0.155787,
        0.242714,
        0.113394,
        0.299994,
        0.223602,
        0.128107,
        0.322514,
        0.12138,
        0.57128,
        0.817318,
        0.17461,
        0.321833,
        0.193104,
        0.358781,
        0.0829855,
    ),
    weights=(
        0.372749,
        0.630752,
        0.21181,
        0.148198,
        0.439498,
        0.298248,
        -0.0165942,
        0.0533253,
        -0.773673,
        0.0484066,
        -1.39148,
        -0.112081,
        0.205597,
        -0.0733154,
        0.0442143,
        0.0121991,
        -0.199008,
        -0.0219733,
        0.335085,
        0.122295,
        0.699179,
        -2.53115,
        0.835721,
        0.0743712,
        -0.3232,
        0.114978,
        -0.224222,
        -0.646523,
        -0.739655,
        0.117562,
        -0.36026,
        0.0828323,
        0.228253,
        0.697641,
        0.573048,
        0.343431,
        -0.0750971,
        0.285672,
        0.070026,
        -0.300718,
        0.645684,
        -0.326713,
        0.41385,
        -0.353775,
        -0.622044,
        0.266518,
        -0.287689,
        -0.564466,
        1.08678,
        0.144013,
        0.178072,
    ),
    bias=-1.06897,
)
