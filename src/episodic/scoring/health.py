"""The memory health score (seed 000): five metrics, each 0-100, and their weighted sum.

Every metric is computed over the *active* memories a snapshot looks at (a workspace, or
the memories of one crew in it):

- **freshness** = ``100 x max(0, 1 - median_age_days / 180)``: how recent the content
  is. The median age of the memories (``now - ts``), on seed 000's 180-day horizon:
  a median of 45 days gives 75, of 180 days or more 0. No memories: 0.
- **coverage** = ``100 x vectored / active``: the share of memories the indexer has
  embedded (every admitted memory is embeddable). No memories: 0.
- **coherence** = ``100 x clamp01((nn - g) / (1 - g))``: how tightly the embeddings
  group around shared themes. ``nn`` is the mean cosine between each sampled memory and
  its ``NEIGHBOURS`` nearest other memories; ``g`` the mean cosine over all pairs of
  distinct memories (``(|sum v|^2 - n) / (n (n - 1))`` for unit vectors). A memory's
  neighbours being much closer to it than memories in general is what clean themes
  look like; a uniform cloud (nn = g) scores 0, tight clusters far apart approach 100.
  When all pairs are equally close (g = 1), ``100 x nn``. Fewer than 2 vectors: 0.
- **efficiency** = ``100 x mean over recalls of (mean cosine of the recall's hits)``:
  the average cosine of the top-K hit distribution, from the recalls recorded over the
  last ``EFFICIENCY_WINDOW_DAYS`` days (hits without a dense score left out, negative
  cosines counted as 0). With no recorded recall, the sampled memories serve as probe
  queries: ``100 x nn`` (the mean cosine of their top ``NEIGHBOURS`` hits, themselves
  excluded). Nothing to measure: 0.
- **reachability** = ``100 x linked / vectored``: the share of embedded memories with at
  least one relations edge (either direction). No vectors: 0.

``score = 0.25 freshness + 0.25 coverage + 0.20 coherence + 0.15 efficiency + 0.15
reachability``; bands red < 50, yellow 50-75, green >= 75.

The sample is ``SAMPLE_ROWS`` evenly spaced rows (all rows when there are fewer), so a
snapshot is deterministic and costs one ``sample x n`` matrix product.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

WEIGHTS: dict[str, float] = {
    "freshness": 0.25,
    "coverage": 0.25,
    "coherence": 0.20,
    "efficiency": 0.15,
    "reachability": 0.15,
}
FRESHNESS_HORIZON_DAYS = 180.0
NEIGHBOURS = 5
SAMPLE_ROWS = 256
EFFICIENCY_WINDOW_DAYS = 30
RED_BELOW = 50.0
GREEN_FROM = 75.0

Matrix = npt.NDArray[np.float32]


def freshness(median_age_days: float | None) -> float:
    if median_age_days is None:
        return 0.0
    return 100.0 * max(0.0, 1.0 - max(0.0, median_age_days) / FRESHNESS_HORIZON_DAYS)


def coverage(vectored: int, active: int) -> float:
    return 0.0 if active <= 0 else 100.0 * min(vectored, active) / active


def reachability(linked: int, vectored: int) -> float:
    return 0.0 if vectored <= 0 else 100.0 * min(linked, vectored) / vectored


def sample_rows(n: int, limit: int = SAMPLE_ROWS) -> npt.NDArray[np.int64]:
    """``limit`` evenly spaced row numbers of ``n`` (all of them when n <= limit)."""
    if n <= limit:
        return np.arange(n, dtype=np.int64)
    return np.unique(np.linspace(0, n - 1, limit).round().astype(np.int64))


def neighbour_cosine(matrix: Matrix, k: int = NEIGHBOURS, limit: int = SAMPLE_ROWS) -> float:
    """Mean cosine between each sampled row and its ``k`` nearest other rows (rows are
    unit vectors). 0 with fewer than 2 rows."""
    n = int(matrix.shape[0])
    if n < 2:
        return 0.0
    k = min(k, n - 1)
    rows = sample_rows(n, limit)
    sims = matrix[rows] @ matrix.T  # sample x n
    sims[np.arange(rows.size), rows] = -np.inf  # a memory is not its own neighbour
    top = np.partition(sims, n - k, axis=1)[:, n - k :]
    return float(top.mean())


def mean_pair_cosine(matrix: Matrix) -> float:
    """Mean cosine over all pairs of distinct rows (unit vectors); 0 with fewer than 2."""
    n = int(matrix.shape[0])
    if n < 2:
        return 0.0
    total = matrix.sum(axis=0, dtype=np.float64)
    return float((float(total @ total) - n) / (n * (n - 1)))


def coherence(nn: float, g: float, rows: int) -> float:
    """From ``neighbour_cosine`` and ``mean_pair_cosine`` (see the module docstring)."""
    if rows < 2:
        return 0.0
    if g >= 1.0 - 1e-9:
        return 100.0 * _clamp01(nn)
    return 100.0 * _clamp01((nn - g) / (1.0 - g))


def efficiency(recalls: Sequence[Sequence[float]], probe_nn: float | None) -> float:
    """From recorded recalls' hit cosines, else the probe's neighbour cosine."""
    means = [sum(max(0.0, c) for c in hits) / len(hits) for hits in recalls if hits]
    if means:
        return 100.0 * _clamp01(sum(means) / len(means))
    if probe_nn is None:
        return 0.0
    return 100.0 * _clamp01(probe_nn)


def score(
    freshness: float, coverage: float, coherence: float, efficiency: float, reachability: float
) -> float:
    parts = {
        "freshness": freshness,
        "coverage": coverage,
        "coherence": coherence,
        "efficiency": efficiency,
        "reachability": reachability,
    }
    return sum(WEIGHTS[name] * value for name, value in parts.items())


def band(value: float) -> str:
    """red < 50 <= yellow < 75 <= green."""
    if value < RED_BELOW:
        return "red"
    if value < GREEN_FROM:
        return "yellow"
    return "green"


_BLOCKS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float], low: float = 0.0, high: float = 100.0) -> str:
    """One block character per value, oldest first, on a fixed 0-100 scale (so a flat
    line at 90 and one at 20 look different)."""
    span = high - low
    out = []
    for v in values:
        share = 0.0 if span <= 0 else (min(high, max(low, v)) - low) / span
        out.append(_BLOCKS[min(len(_BLOCKS) - 1, int(share * len(_BLOCKS)))])
    return "".join(out)


def _clamp01(x: float) -> float:
    return min(1.0, max(0.0, x))
