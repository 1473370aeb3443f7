"""Retrieval-quality metrics for the benchmarks: plain functions over ranked id lists.

A ranking is a sequence of ids, best first; the relevant ids are a set. Nothing here knows
about stores, embedders or LoCoMo's file format beyond the shape of its evidence ids.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence

# The cut-offs every benchmark report carries, in this order.
RECALL_KS: tuple[int, ...] = (1, 5, 10, 20)
ALL_K = 10
NDCG_K = 10
METRIC_KEYS: tuple[str, ...] = (
    *(f"recall@{k}" for k in RECALL_KS),
    f"all@{ALL_K}",
    f"ndcg@{NDCG_K}",
)
# The deepest cut-off any metric looks at: how many hits a benchmark must retrieve.
DEPTH = max(*RECALL_KS, ALL_K, NDCG_K)

# LoCoMo writes several ids in one string now and then ("D8:6; D9:17", "D9:1 D4:4").
_EVIDENCE_SEPARATORS = re.compile(r"[;\s]+")


def parse_evidence(raw: Iterable[str], known: Collection[str]) -> list[str]:
    """The evidence ids that name a real turn, deduplicated, in first-seen order.

    Entries are split on ``;`` and whitespace; pieces that match no turn of the
    conversation (``"D"``, ``"D:11:26"``, ``"D30:05"``) are dropped rather than repaired,
    so the metric never credits a retrieval against a guessed id."""
    found: dict[str, None] = {}
    for entry in raw:
        for piece in _EVIDENCE_SEPARATORS.split(entry):
            if piece and piece in known:
                found.setdefault(piece, None)
    return list(found)


def dedupe(ranking: Iterable[str]) -> list[str]:
    """The ranking with repeats removed, each id kept at its best (first) rank."""
    return list(dict.fromkeys(ranking))


def to_sessions(ranking: Iterable[str], session_of: Mapping[str, str]) -> list[str]:
    """The sessions of a ranked list of turns, best first, each session once.

    A session ranks where its best turn ranks. Ids with no known session are left out: they
    cannot be relevant, and keeping them would not change any session's rank."""
    return dedupe(session_of[turn] for turn in ranking if turn in session_of)


def _check(relevant: Collection[str], k: int) -> None:
    if not relevant:
        raise ValueError("no relevant ids: the metric is undefined (skip the question)")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")


def recall_at_k(ranking: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Fraction of the relevant ids found among the first ``k`` of ``ranking``."""
    _check(relevant, k)
    top = set(ranking[:k])
    return sum(1 for r in set(relevant) if r in top) / len(set(relevant))


def all_at_k(ranking: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1.0 when every relevant id is among the first ``k`` of ``ranking``, else 0.0."""
    _check(relevant, k)
    top = set(ranking[:k])
    return 1.0 if all(r in top for r in relevant) else 0.0


def ndcg_at_k(ranking: Sequence[str], relevant: Collection[str], k: int) -> float:
    """NDCG with binary relevance: sum of 1/log2(rank+1) over the relevant ids in the
    first ``k`` (each id counted once), divided by the same sum for a perfect ranking."""
    _check(relevant, k)
    wanted = set(relevant)
    dcg = sum(
        1.0 / math.log2(rank + 1)
        for rank, item in enumerate(dedupe(ranking)[:k], start=1)
        if item in wanted
    )
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(wanted), k) + 1))
    return dcg / ideal


def score_ranking(ranking: Sequence[str], relevant: Collection[str]) -> dict[str, float]:
    """Every metric of ``METRIC_KEYS`` for one question."""
    ranked = dedupe(ranking)
    scores = {f"recall@{k}": recall_at_k(ranked, relevant, k) for k in RECALL_KS}
    scores[f"all@{ALL_K}"] = all_at_k(ranked, relevant, ALL_K)
    scores[f"ndcg@{NDCG_K}"] = ndcg_at_k(ranked, relevant, NDCG_K)
    return scores


def update_order(
    ranking: Sequence[str], before: Collection[str], after: Collection[str], k: int = 10
) -> dict[str, float]:
    """Whether the later statement of a changed fact (``after``) ranks above the earlier
    one (``before``) in the first ``k``, or is found there when the earlier is not; and
    the recall@k of each."""
    top = list(ranking[:k])
    first_after = next((n for n, r in enumerate(top) if r in after), None)
    first_before = next((n for n, r in enumerate(top) if r in before), None)
    above = first_after is not None and (first_before is None or first_after < first_before)
    return {
        "updated_above": float(above),
        "recall@10_updated": recall_at_k(ranking, after, k),
        "recall@10_original": recall_at_k(ranking, before, k),
    }


def mean_scores(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """The per-key mean of per-question scores (each key of ``METRIC_KEYS``)."""
    if not rows:
        raise ValueError("no scores to average")
    return {key: sum(row[key] for row in rows) / len(rows) for key in METRIC_KEYS}


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) with linear interpolation between closest ranks
    (numpy's default), so p50 of an even-sized sample is the mean of the middle two."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile must be within 0..100, got {q}")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    lower = math.floor(position)
    upper = min(lower + 1, len(ordered) - 1)
    fraction = position - lower
    return ordered[lower] + (ordered[upper] - ordered[lower]) * fraction
