"""What every benchmark run stands on: a throwaway memory on a clock the run moves, with
its texts embedded (and cached across runs) before any recall is timed."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from episodic.bench.cache import SqliteEmbeddingCache
from episodic.config import Settings
from episodic.embed import CachedEmbedder, content_hash, make_embedder
from episodic.embed.base import Embedder, Matrix, Vector
from episodic.service import Episodic
from episodic.store import open_store

CACHE_FILE = "bench-embeddings.db"


class BenchClock:
    """The service's clock, moved to each conversation's end before its questions."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


class Precomputed:
    """An embedder answering from vectors computed before the clock starts, so the timed
    recalls measure retrieval, not the model. Unknown texts go to ``inner``."""

    def __init__(self, inner: Embedder, vectors: dict[str, Vector]) -> None:
        self.inner = inner
        self.vectors = vectors
        self.misses = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed_batch(self, texts: Sequence[str]) -> Matrix:
        missing = list(dict.fromkeys(t for t in texts if t not in self.vectors))
        if missing:
            self.misses += len(missing)
            self.vectors.update(zip(missing, self.inner.embed_batch(missing), strict=True))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.vectors[t] for t in texts])


# How many new texts a benchmark embeds between saving them to its cache.
EMBED_CHUNK = 256


def precompute_vectors(
    inner: Embedder,
    cache: SqliteEmbeddingCache,
    texts: Iterable[str],
    say: Callable[[str], None],
) -> Precomputed:
    unique = list(dict.fromkeys(t for t in texts if t))
    known = cache.cache_get(inner.model_id, [content_hash(t) for t in unique])
    missing = [t for t in unique if content_hash(t) not in known]
    say(
        f"embedding {len(unique)} distinct texts with {inner.model_id}: "
        f"{len(known)} cached in {cache.path}, {len(missing)} to embed"
    )
    cached = CachedEmbedder(inner, cache)
    # In chunks, each cached as it is done: a first run embeds thousands of long texts
    # for half an hour, and one that is stopped keeps what it embedded.
    for start in range(0, len(missing), EMBED_CHUNK):
        cached.embed_batch(missing[start : start + EMBED_CHUNK])
        done = min(start + EMBED_CHUNK, len(missing))
        if done < len(missing):
            say(f"embedded {done} of {len(missing)}")
    matrix = cached.embed_batch(unique)
    return Precomputed(cached, dict(zip(unique, matrix, strict=True)))


@contextmanager
def bench_memory(
    settings: Settings,
    texts: Sequence[str],
    say: Callable[[str], None],
    *,
    db_url: str | None = None,
) -> Iterator[tuple[Episodic, BenchClock, str | None]]:
    """A memory for one benchmark run: over ``db_url`` (an empty database) or a throwaway
    SQLite file, on a clock the run moves, with ``texts`` embedded before it starts (the
    embeddings cached across runs). Yields it, its clock and the embedder's model id
    (None when sparse-only)."""
    inner = make_embedder(settings)
    with tempfile.TemporaryDirectory(prefix="episodic-bench-") as tmp, ExitStack() as stack:
        embedder: Precomputed | None = None
        if inner is not None:
            cache = stack.enter_context(SqliteEmbeddingCache(settings.cache_dir / CACHE_FILE))
            embedder = precompute_vectors(inner, cache, texts, say)
        clock = BenchClock()
        mem = stack.enter_context(
            Episodic(
                store=open_store(db_url or f"sqlite:///{Path(tmp) / 'bench.db'}"),
                embedder=embedder,
                settings=settings,
                clock=clock,
            )
        )
        yield mem, clock, inner.model_id if inner is not None else None
