"""Whether the embedder works right now, as the calls that reached it last saw it.

Every call that reaches the model (a recall's query, an indexer sweep, segmentation, the
probe of ``doctor`` or ``/healthz``) goes through ``WatchedEmbedder``, which tells
``EmbedderState`` how it went: an answer means recall runs with vectors, an
``EmbedderError`` means sparse-only. ``/healthz`` reads that state instead of calling
the model per request, so it follows an outage that starts (or ends) after boot.

A change of state is logged once: a warning when recall becomes sparse-only (seed 000:
the degraded mode is never silent, at boot included) and a warning too when vectors come
back (an operator who saw the first line at the default level must see the second). The
lines go to the ``episodic.mode`` logger, which a server's recall processes silence: the
server learns each recall's mode from its result and logs for the whole process group.
While the embedder stays down, the failures of every sweep and every recall say nothing
more here; each caller still learns its own (a recall's ``warnings``, a sweep's
``error``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from episodic import metrics, tracing
from episodic.embed.base import Embedder, Matrix
from episodic.errors import EmbedderError
from episodic.recall.engine import MODE_SPARSE_ONLY, MODE_VECTOR

log = logging.getLogger("episodic.mode")


class EmbedderState:
    """The recall mode as last observed (None until something has observed it), why,
    and when (``time.monotonic``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.mode: str | None = None
        self.why = ""
        self._seen_at = float("-inf")

    def saw(self, mode: str, why: str) -> None:
        """Record what a call found; log only when the mode changes."""
        with self._lock:
            before = self.mode
            self.mode, self.why, self._seen_at = mode, why, time.monotonic()
        if mode == before:
            return
        if mode == MODE_SPARSE_ONLY:
            log.warning(
                "episodic is running sparse-only (keyword recall, no vectors): %s. "
                "Run `episodic doctor` for how to fix it.",
                why,
            )
        elif before == MODE_SPARSE_ONLY:
            log.warning("the embedder answers again, recall uses vectors: %s", why)

    def older_than(self, seconds: float) -> bool:
        """True when nothing has been observed for ``seconds``."""
        with self._lock:
            return time.monotonic() - self._seen_at > seconds


class WatchedEmbedder:
    """An ``Embedder`` that reports the outcome of each call to the model to ``state``,
    and times it for the metrics and the trace by what it was for (``purpose``: ``query``
    for a recall's, ``index`` for memories' vectors, ``probe`` for a health check)."""

    def __init__(self, inner: Embedder, state: EmbedderState, purpose: str = "index") -> None:
        self.inner = inner
        self.state = state
        self.purpose = purpose

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        # A remote embedder that has not answered yet asks the server for its dimension.
        try:
            return self.inner.dim
        except EmbedderError as exc:
            self.state.saw(MODE_SPARSE_ONLY, str(exc))
            raise

    def embed_batch(self, texts: Sequence[str]) -> Matrix:
        started = time.perf_counter()
        try:
            with tracing.span(
                "embed", {"episodic.purpose": self.purpose, "episodic.texts": len(texts)}
            ):
                matrix = self.inner.embed_batch(texts)
        except EmbedderError as exc:
            metrics.embedder_call(self.purpose, time.perf_counter() - started, failed=True)
            self.state.saw(MODE_SPARSE_ONLY, str(exc))
            raise
        metrics.embedder_call(self.purpose, time.perf_counter() - started, failed=False)
        if len(texts):
            self.state.saw(MODE_VECTOR, f"{self.inner.model_id} ({self.inner.dim}-d)")
        return matrix
