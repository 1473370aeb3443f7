"""Query embeddings batched across concurrent requests (the server's recall path).

A server answering many recalls at once embeds one short query per request; the model
does a batch of 8 short queries in about half the time per query of 8 single calls
(measured here: 6.4 vs 12.4 ms per query on a busy 2-core machine). ``BatchingEmbedder``
batches without waiting for anything: the first caller to find the model idle embeds every
query queued so far in one batch, and callers that arrive meanwhile queue up for the next
one (group commit). A lone request therefore pays nothing extra.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future

import numpy as np

from episodic.embed.base import Embedder, Matrix, Vector

MAX_BATCH = 32


class BatchingEmbedder:
    """Wraps ``inner``; single-text calls from concurrent threads share model calls."""

    def __init__(self, inner: Embedder, max_batch: int = MAX_BATCH) -> None:
        self.inner = inner
        self.max_batch = max_batch
        self._cond = threading.Condition()
        self._queue: list[tuple[str, Future[Vector]]] = []
        self._busy = False
        self.batches = 0  # model calls made (for tests and benchmarks)

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed_batch(self, texts: Sequence[str]) -> Matrix:
        if len(texts) != 1:
            return self.inner.embed_batch(texts)
        return np.stack([self._one(texts[0])])

    def _one(self, text: str) -> Vector:
        mine: Future[Vector] = Future()
        with self._cond:
            self._queue.append((text, mine))
        while True:
            with self._cond:
                while self._busy and not mine.done():
                    self._cond.wait()
                if mine.done():
                    return mine.result()
                self._busy = True
                batch = self._queue[: self.max_batch]
                del self._queue[: self.max_batch]
            try:
                self._run(batch)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _run(self, batch: list[tuple[str, Future[Vector]]]) -> None:
        self.batches += 1
        try:
            vectors = self.inner.embed_batch([text for text, _ in batch])
        except BaseException as exc:  # every waiter gets the embedder's own error
            for _, future in batch:
                future.set_exception(exc)
            return
        for row, (_, future) in enumerate(batch):
            future.set_result(vectors[row])
