"""Embedding cache keyed by (sha256 of the text, model id).

Re-embedding identical text is the most common waste in an agent's memory (the same tool
output or status line recurs constantly), and a remote embedder makes it costly.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from episodic.embed.base import Embedder, Matrix, Vector
from episodic.embed.check import check_matrix

if TYPE_CHECKING:
    import numpy as np
else:
    from episodic.lazy import np


def content_hash(text: str) -> str:
    """sha256 hex digest of the UTF-8 text: the cache key, independent of the model."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@runtime_checkable
class EmbeddingCache(Protocol):
    """Where vectors are remembered: every store (``VectorStore.cache_get``, ``cache_put``)."""

    def cache_get(self, model_id: str, content_hashes: Sequence[str]) -> dict[str, Vector]:
        """The cached vectors among ``content_hashes`` for ``model_id``; misses are absent."""
        ...

    def cache_put(self, model_id: str, items: Mapping[str, Vector]) -> None:
        """Remember vectors by content hash for ``model_id``."""
        ...


class DictCache:
    """In-memory EmbeddingCache, for tests and short-lived processes."""

    def __init__(self) -> None:
        self._data: dict[tuple[str, str], Vector] = {}
        self._lock = threading.Lock()

    def cache_get(self, model_id: str, content_hashes: Sequence[str]) -> dict[str, Vector]:
        with self._lock:
            return {
                h: self._data[(model_id, h)] for h in content_hashes if (model_id, h) in self._data
            }

    def cache_put(self, model_id: str, items: Mapping[str, Vector]) -> None:
        with self._lock:
            for h, vec in items.items():
                # Copies, so a caller mutating its result cannot corrupt the cache.
                self._data[(model_id, h)] = np.array(vec, dtype=np.float32, copy=True)

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)


class CachedEmbedder:
    """An Embedder that only asks ``inner`` for texts it has not seen with this model."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache) -> None:
        self.inner = inner
        self.cache = cache

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed_batch(self, texts: Sequence[str]) -> Matrix:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model_id = self.inner.model_id
        hashes = [content_hash(t) for t in texts]
        # dict keeps first-seen order, so duplicates within a batch are embedded once.
        unique = dict(zip(hashes, texts, strict=True))
        vectors: dict[str, Vector] = {}
        for h, vec in self.cache.cache_get(model_id, list(unique)).items():
            arr = np.asarray(vec, dtype=np.float32)
            if h in unique and arr.ndim == 1 and np.isfinite(arr).all():
                vectors[h] = arr
        missing = [h for h in unique if h not in vectors]
        if missing:
            self._fill(missing, unique, vectors)
        dim = self._expected_dim(vectors, asked=bool(missing))
        # Rows of another size (a dim change under the same model id) are misses, not answers.
        stale = [h for h, v in vectors.items() if v.shape != (dim,)]
        if stale:
            self._fill(stale, unique, vectors)
        return check_matrix(
            np.stack([vectors[h] for h in hashes]), len(texts), dim, source=model_id
        )

    def _fill(self, keys: list[str], texts: Mapping[str, str], into: dict[str, Vector]) -> None:
        fresh = check_matrix(
            self.inner.embed_batch([texts[h] for h in keys]),
            len(keys),
            self.inner.dim,
            source=self.inner.model_id,
        )
        new = {h: fresh[i] for i, h in enumerate(keys)}
        self.cache.cache_put(self.inner.model_id, new)
        into.update(new)

    def _expected_dim(self, vectors: Mapping[str, Vector], *, asked: bool) -> int:
        if not asked:
            # Everything came from the cache: trust it when consistent, so a remote embedder
            # whose dimension is not known yet is not contacted just to learn it.
            dims = {int(v.shape[0]) for v in vectors.values()}
            if len(dims) == 1:
                return dims.pop()
        return self.inner.dim
