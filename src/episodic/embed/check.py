"""The one validation every adapter's output goes through before anyone else sees it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from episodic.embed.base import Matrix
from episodic.errors import BadEmbedding

if TYPE_CHECKING:
    import numpy as np
else:
    from episodic.lazy import np

# Rows whose norm is this far from 1 are renormalised; a zero row has no direction at all.
_MIN_NORM = 1e-12


def check_matrix(m: Any, n: int, dim: int, *, source: str = "embedder") -> Matrix:
    """Return ``m`` as a C-contiguous float32 (n, dim) matrix with unit-length rows.

    Raises BadEmbedding, naming ``source``, for a wrong count or dimension, NaN/inf, or an
    all-zero row: those are answers no caller can use, and storing them would poison recall.
    """
    try:
        arr = np.asarray(m, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise BadEmbedding(f"{source} returned something that is not a matrix of numbers") from exc
    if arr.ndim != 2:
        raise BadEmbedding(f"{source} returned a {arr.ndim}-d array, expected ({n}, {dim})")
    if arr.shape[0] != n:
        raise BadEmbedding(f"{source} returned {arr.shape[0]} vectors for {n} texts")
    if arr.shape[1] != dim:
        raise BadEmbedding(f"{source} returned {arr.shape[1]}-d vectors, expected {dim}-d")
    if not np.isfinite(arr).all():
        bad = int((~np.isfinite(arr)).any(axis=1).sum())
        raise BadEmbedding(f"{source} returned NaN/inf values in {bad} of {n} vectors")
    if n == 0:
        return np.zeros((0, dim), dtype=np.float32)
    # Norms in float64: squaring large float32 components could overflow to inf.
    norms = np.linalg.norm(arr.astype(np.float64), axis=1, keepdims=True)
    if (norms < _MIN_NORM).any():
        raise BadEmbedding(f"{source} returned an all-zero vector")
    out: Matrix = np.ascontiguousarray(arr / norms, dtype=np.float32)
    return out
