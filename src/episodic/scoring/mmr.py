"""Maximal marginal relevance with Jaccard similarity over word tokens (seed 001).

MMR picks, one at a time, the candidate maximising
``lambda x relevance - (1 - lambda) x max similarity to anything already picked``,
so near-duplicates give way to the next distinct memory.
"""

from __future__ import annotations

import heapq
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MMR_LAMBDA = 0.7
_TOKEN = re.compile(r"[a-z0-9_]+")


def tokens(text: str) -> frozenset[str]:
    """Seed 001's token set: ``[a-z0-9_]+`` runs of the lowercased text."""
    return frozenset(_TOKEN.findall(text.lower()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """``|a & b| / |a | b|``; two empty sets are identical (1.0). The union is counted,
    not built: one pass over the smaller set instead of a copy of both."""
    if not a and not b:
        return 1.0
    shared = len(a & b)
    return shared / (len(a) + len(b) - shared)


class TokenSets:
    """Each memory's token set, made once and kept for the next queries (the most recent
    ``size``): MMR compares every candidate with every pick, and re-reading a long memory's
    text on every query cost more than the rest of the recall. Keyed by the memory's id and
    its text's hash, so an edited memory is read again; the text itself is not held."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._sets: OrderedDict[tuple[str, int], frozenset[str]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, memory_id: str, text: str) -> frozenset[str]:
        key = (memory_id, hash(text))
        with self._lock:
            found = self._sets.get(key)
            if found is not None:
                self._sets.move_to_end(key)
                return found
        made = tokens(text)
        with self._lock:
            self._sets[key] = made
            if len(self._sets) > self._size:
                self._sets.popitem(last=False)
        return made


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
    # How many of the picks each candidate's best_sim has seen. A candidate is compared
    # with a pick only when it is about to be chosen (or reported): until then its stale
    # best_sim can only be lower, so its stale score bounds its true one from above, and
    # the first candidate with the best stale score that is up to date is exactly the
    # one comparing everyone after every pick would choose. Long memories' token sets
    # hold thousands of words, and most candidates never come near the top.
    seen = dict.fromkeys(remaining, 0)
    empty: frozenset[str] = frozenset()

    def catch_up(i: str) -> None:
        own = token_sets.get(i, empty)
        for choice in picked[seen[i] :]:
            sim = jaccard(own, token_sets.get(choice, empty))
            if sim > best_sim[i][0]:
                best_sim[i] = (sim, choice)
        seen[i] = len(picked)

    def score(i: str) -> float:
        return lam * relevance[i] - (1 - lam) * best_sim[i][0]

    # Best (stale) score first, ties by rank: what max() over the remaining in rank
    # order would choose.
    heap = [(-score(i), at, i) for at, i in enumerate(remaining)]
    heapq.heapify(heap)
    while heap and len(picked) < k:
        _, at, choice = heapq.heappop(heap)
        if seen[choice] != len(picked):
            catch_up(choice)
            heapq.heappush(heap, (-score(choice), at, choice))
            continue
        picked.append(choice)
    # Report as "merged" only the candidates that would have made the cut on relevance alone.
    by_relevance = [i for i, _ in ranked][: len(picked)]
    chosen = set(picked)
    for i in by_relevance:
        if i not in chosen:
            catch_up(i)
    dropped = [
        MmrDrop(i, best_sim[i][1], best_sim[i][0])
        for i in by_relevance
        if i not in chosen and best_sim[i][1]
    ]
    return [(i, original[i]) for i in picked], dropped
