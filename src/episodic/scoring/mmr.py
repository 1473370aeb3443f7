"""Maximal marginal relevance with Jaccard similarity over word tokens (seed 001).

MMR picks, one at a time, the candidate maximising
``lambda x relevance - (1 - lambda) x max similarity to anything already picked``,
so near-duplicates give way to the next distinct memory.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MMR_LAMBDA = 0.7
_TOKEN = re.compile(r"[a-z0-9_]+")


def tokens(text: str) -> frozenset[str]:
    """Seed 001's token set: ``[a-z0-9_]+`` runs of the lowercased text."""
    return frozenset(_TOKEN.findall(text.lower()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """``|a & b| / |a | b|``; two empty sets are identical (1.0)."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


@dataclass(frozen=True, slots=True)
class MmrDrop:
    """A candidate MMR passed over, and the picked memory it most resembled."""

    memory_id: str
    similar_to: str
    similarity: float


def mmr(
    ranked: Sequence[tuple[str, float]],
    token_sets: Mapping[str, frozenset[str]],
    k: int,
    *,
    lam: float = MMR_LAMBDA,
) -> tuple[list[tuple[str, float]], list[MmrDrop]]:
    """Select up to ``k`` of ``ranked`` ((id, relevance) best first). Relevance is divided
    by the best score first, so lambda weighs like against like whatever the score's scale
    (RRF scores are ~0.03, blends ~0.7) while keeping the ratios between candidates.

    Returns the picked (id, original relevance) in pick order, and for each candidate not
    picked whose similarity to a picked one beat its relevance share, why it was dropped."""
    if k <= 0 or not ranked:
        return [], []
    top = max(score for _, score in ranked)
    scale = top if top > 0 else 1.0
    relevance = {i: s / scale for i, s in ranked}
    original = dict(ranked)
    remaining = [i for i, _ in ranked]
    picked: list[str] = []
    best_sim: dict[str, tuple[float, str]] = {i: (0.0, "") for i in remaining}
    while remaining and len(picked) < k:
        choice = max(
            remaining,
            key=lambda i: lam * relevance[i] - (1 - lam) * best_sim[i][0],
        )
        picked.append(choice)
        remaining.remove(choice)
        chosen_tokens = token_sets.get(choice, frozenset())
        for i in remaining:
            sim = jaccard(token_sets.get(i, frozenset()), chosen_tokens)
            if sim > best_sim[i][0]:
                best_sim[i] = (sim, choice)
    # Report as "merged" only the candidates that would have made the cut on relevance alone.
    by_relevance = [i for i, _ in ranked][: len(picked)]
    dropped = [
        MmrDrop(i, best_sim[i][1], best_sim[i][0])
        for i in by_relevance
        if i not in picked and best_sim[i][1]
    ]
    return [(i, original[i]) for i in picked], dropped
