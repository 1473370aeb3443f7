"""A benchmark's first run embeds thousands of texts: what it embedded before it stopped
stays cached, and it says how far it got."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from episodic.bench.cache import SqliteEmbeddingCache
from episodic.bench.harness import EMBED_CHUNK, precompute_vectors
from episodic.embed.base import Matrix
from episodic.embed.cache import content_hash
from episodic.embed.fake import FakeEmbedder
from episodic.errors import EmbedderError


class StopsAfter(FakeEmbedder):
    """Embeds ``limit`` texts, then fails as a stopped run would."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def embed_batch(self, texts: Sequence[str]) -> Matrix:
        if self.texts_embedded + len(texts) > self.limit:
            raise EmbedderError("stopped")
        return super().embed_batch(texts)


def test_a_stopped_first_run_keeps_what_it_embedded(tmp_path: Path) -> None:
    texts = [f"turn number {n} about the garden" for n in range(EMBED_CHUNK * 2 + 10)]
    said: list[str] = []
    with SqliteEmbeddingCache(tmp_path / "vectors.db") as cache, pytest.raises(EmbedderError):
        precompute_vectors(StopsAfter(EMBED_CHUNK * 2), cache, texts, said.append)
    assert said[-1] == f"embedded {EMBED_CHUNK * 2} of {len(texts)}"
    with SqliteEmbeddingCache(tmp_path / "vectors.db") as cache:
        model = FakeEmbedder().model_id
        kept = cache.cache_get(model, [content_hash(t) for t in texts])
        assert len(kept) == EMBED_CHUNK * 2
        # The next run embeds only the rest, and every vector is the same as one run's.
        again = StopsAfter(10)
        vectors = precompute_vectors(again, cache, texts, said.append)
    assert again.texts_embedded == 10
    assert said[-1] == (
        f"embedding {len(texts)} distinct texts with {model}: {EMBED_CHUNK * 2} cached in "
        f"{tmp_path / 'vectors.db'}, 10 to embed"
    )
    whole = FakeEmbedder().embed_batch(texts)
    assert all((vectors.vectors[t] == whole[n]).all() for n, t in enumerate(texts))
