"""Query embeddings shared across concurrent callers: same vectors, fewer model calls."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import numpy as np
import pytest

from episodic.embed.base import Matrix
from episodic.embed.batching import BatchingEmbedder
from episodic.embed.fake import FakeEmbedder
from episodic.errors import EmbedderUnavailable


class SlowFake(FakeEmbedder):
    """The fake, taking 20 ms a call like a busy model; records batch sizes."""

    def __init__(self) -> None:
        super().__init__(dim=32)
        self.sizes: list[int] = []

    def embed_batch(self, texts: Sequence[str]) -> Matrix:
        self.sizes.append(len(texts))
        time.sleep(0.02)
        return super().embed_batch(texts)


def run_concurrently(emb: BatchingEmbedder, texts: list[str]) -> dict[str, object]:
    out: dict[str, object] = {}
    start = threading.Barrier(len(texts))

    def one(text: str) -> None:
        start.wait()
        try:
            out[text] = emb.embed_batch([text])[0]
        except Exception as exc:
            out[text] = exc

    threads = [threading.Thread(target=one, args=(t,)) for t in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    return out


def test_concurrent_queries_share_model_calls_and_get_their_own_vectors() -> None:
    inner = SlowFake()
    emb = BatchingEmbedder(inner)
    texts = [f"query number {i} about checkout" for i in range(16)]
    got = run_concurrently(emb, texts)
    reference = FakeEmbedder(dim=32)
    for text in texts:
        assert np.allclose(got[text], reference.embed_batch([text])[0])  # type: ignore[arg-type]
    assert sum(inner.sizes) == 16 and len(inner.sizes) < 16 and max(inner.sizes) > 1


def test_a_lone_query_is_embedded_at_once() -> None:
    inner = SlowFake()
    emb = BatchingEmbedder(inner)
    t0 = time.perf_counter()
    emb.embed_batch(["just me"])
    assert time.perf_counter() - t0 < 0.5 and inner.sizes == [1]
    emb.embed_batch(["a", "b"])  # several texts pass straight through
    assert inner.sizes == [1, 2]


def test_every_waiter_gets_the_embedders_error() -> None:
    inner = SlowFake()
    inner.fail = True
    got = run_concurrently(BatchingEmbedder(inner), [f"q{i}" for i in range(6)])
    assert all(isinstance(v, EmbedderUnavailable) for v in got.values())
    with pytest.raises(EmbedderUnavailable):
        BatchingEmbedder(inner).embed_batch(["alone"])
