"""Finding near-duplicates and clusters among many memories, as plain math.

- ``near_duplicates``: every pair of token sets with Jaccard above a threshold (seed 001's
  compaction merges entries with Jaccard > 0.8 on ``[a-z0-9_]+`` tokens). All pairs would
  be n^2 comparisons; *prefix filtering* compares only sets that share a rare token:
  with the tokens of every set ordered rarest first, two sets with Jaccard >= t share at
  least one of the first ``|x| - ceil(t |x|) + 1`` tokens of each (Chaudhuri et al.,
  2006). Sets whose sizes differ by more than the threshold allows are skipped too.
- ``leader_clusters``: greedy clustering of a similarity graph: the first row (in the
  order given) not yet taken leads a cluster of the untaken rows it is linked to.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from episodic.scoring.mmr import jaccard


def near_duplicates(
    token_sets: Sequence[frozenset[str]], threshold: float
) -> list[tuple[int, int, float]]:
    """Pairs ``(i, j, jaccard)`` with ``i < j`` and Jaccard strictly above ``threshold``
    (0 < threshold < 1). Empty sets match nothing: text the tokens cannot see is not
    evidence of being the same."""
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"threshold must be in (0, 1), got {threshold}")
    frequency: Counter[str] = Counter(t for s in token_sets for t in s)
    ordered = [sorted(s, key=lambda t: (frequency[t], t)) for s in token_sets]
    index: dict[str, list[int]] = {}
    pairs: list[tuple[int, int, float]] = []
    # Shortest sets first: a set's candidates were all indexed before it, and the size
    # filter only has to look one way.
    for i in sorted(range(len(token_sets)), key=lambda n: (len(ordered[n]), n)):
        tokens = ordered[i]
        size = len(tokens)
        if size == 0:
            continue
        prefix = size - math.ceil(threshold * size) + 1
        seen: set[int] = set()
        for token in tokens[:prefix]:
            for j in index.get(token, ()):
                if j in seen:
                    continue
                seen.add(j)
                if len(ordered[j]) < threshold * size:
                    continue
                sim = jaccard(token_sets[i], token_sets[j])
                if sim > threshold:
                    pairs.append((min(i, j), max(i, j), sim))
        for token in tokens[:prefix]:
            index.setdefault(token, []).append(i)
    pairs.sort()
    return pairs


def leader_clusters(
    linked: npt.NDArray[np.bool_], order: Sequence[int], max_size: int
) -> list[list[int]]:
    """Clusters of the symmetric boolean matrix ``linked`` (n x n): walking ``order``,
    each row not yet taken leads a cluster with up to ``max_size - 1`` untaken rows
    linked to it (in ``order``). Clusters of one are left out."""
    n = int(linked.shape[0])
    rank = np.empty(n, dtype=np.int64)
    rank[np.asarray(order, dtype=np.int64)] = np.arange(n)
    taken = np.zeros(n, dtype=bool)
    clusters: list[list[int]] = []
    for leader in order:
        if taken[leader]:
            continue
        taken[leader] = True
        peers = np.flatnonzero(linked[leader] & ~taken)
        peers = peers[np.argsort(rank[peers], kind="stable")][: max_size - 1]
        if peers.size == 0:
            continue
        taken[peers] = True
        clusters.append([int(leader), *(int(p) for p in peers)])
    return clusters
