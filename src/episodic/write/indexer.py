"""The indexer: embeds memories that have no vector yet.

A background sweeper polls every ``interval_s`` seconds and embeds up to ``batch`` memories
per sweep; ``index_one`` is for hot paths that want a memory searchable by vector before
the next sweep. An embedder failure is logged and the same rows are retried on the next
sweep: nothing is marked done until its vector is stored.

Each memory indexed (by a sweep or ``index_one``) is then linked by ``similar`` edges to
the most alike memories of its workspace (``episodic.upkeep.relations``); a failure there
is logged and never undoes the embedding.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from episodic.embed.base import Embedder
from episodic.errors import (
    EmbedderError,
    EpisodicError,
    ModelMismatch,
    StoreBusy,
    StoreUnavailable,
)
from episodic.heap import HeapTrimmer
from episodic.priority import HEAVY_NICE, lower_priority
from episodic.scoring.passages import extra_spans
from episodic.store.vectors import Vector, VectorStore
from episodic.upkeep import relations

log = logging.getLogger("episodic.indexer")

SWEEP_INTERVAL_S = 30.0
SWEEP_BATCH = 64
# The longest wait between sweeps while the database is down.
MAX_BACKOFF_S = 60.0


@dataclass(frozen=True, slots=True)
class SweepResult:
    embedded: int
    failed: int
    error: str | None = None


class Indexer:
    def __init__(
        self,
        store: VectorStore,
        embedder: Embedder,
        *,
        batch: int = SWEEP_BATCH,
        interval_s: float = SWEEP_INTERVAL_S,
        nice: int = HEAVY_NICE,
        after_sweep: Callable[[], None] | None = None,
        link_similar: bool = True,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.batch = batch
        self.interval_s = interval_s
        self.nice = nice  # the embedding's lower CPU priority (episodic.priority)
        # Work that follows the embedding in the background loop (segmenting
        # conversations), once the pending vectors are drained.
        self.after_sweep = after_sweep
        # Seed 000's LinkSimilarOnIndex: `similar` edges for every memory indexed.
        self.link_similar = link_similar
        self.heap = HeapTrimmer()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._model: ThreadPoolExecutor | None = None
        self._model_lock = threading.Lock()

    def sweep_once(self) -> SweepResult:
        """Embed up to one batch of pending memories. Never raises for embedder outages."""
        attempted = 0
        passages: dict[str, list[tuple[int, int, Vector]]] = {}

        def embed(texts: list[str]) -> Vector:
            nonlocal attempted
            attempted = len(texts)
            # A long memory's later passages are embedded in the same batch as the
            # memories: one call to the model, and no memory stored without them.
            spans = [(text, span) for text in texts for span in extra_spans(text)]
            batch = texts + [text[s.start : s.stop] for text, s in spans]
            if self.nice <= 0:  # the default: no thread hop for nothing
                vectors = self.embedder.embed_batch(batch)
            else:
                vectors = self._model_thread().submit(self.embedder.embed_batch, batch).result()
            for i, (text, span) in enumerate(spans, start=len(texts)):
                passages.setdefault(text, []).append((span.start, span.stop, vectors[i]))
            return vectors[: len(texts)]

        try:
            done = self.store.index_pending(
                self.batch, self.embedder.model_id, self.embedder.dim, embed
            )
        except ModelMismatch:
            raise
        except EmbedderError as exc:
            # Info, not a warning: the service logs the embedder going down once
            # (episodic.service.embedder_state), not once per sweep while it stays down.
            log.info("embedding %d memories failed, retrying next sweep: %s", attempted, exc)
            return SweepResult(0, attempted, str(exc))
        self._put_passages(
            [(p.memory_id, passages[p.content]) for p, _ in done if p.content in passages]
        )
        self._link([(p.memory_id, p.workspace_id, vector) for p, vector in done])
        return SweepResult(len(done), 0)

    def _put_passages(self, rows: list[tuple[str, list[tuple[int, int, Vector]]]]) -> None:
        """Store the passages of the long memories just indexed. (Those a memory had go
        with its old vector, when its content changes.)"""
        if rows:
            self.store.put_passages(self.embedder.dim, rows)

    def drain(self) -> SweepResult:
        """Sweep until nothing is pending or a sweep fails (``index --once``, ``reindex``)."""
        total = 0
        while True:
            result = self.sweep_once()
            total += result.embedded
            if result.failed or result.embedded == 0:
                return SweepResult(total, result.failed, result.error)

    def index_one(self, workspace_id: str, memory_id: str) -> bool:
        """Embed one memory now. Returns False (and logs) when the embedder failed; the
        sweeper will pick it up later."""
        memory = self.store.get_memory(workspace_id, memory_id)
        spans = extra_spans(memory.content)
        texts = [memory.content] + [memory.content[s.start : s.stop] for s in spans]
        try:
            vectors = self.embedder.embed_batch(texts)
        except EmbedderError as exc:
            log.info("index_one(%s) failed, the sweeper will retry: %s", memory_id, exc)
            return False
        vector = vectors[0]
        self.store.put_vectors(self.embedder.model_id, self.embedder.dim, [(memory_id, vector)])
        passages = [(s.start, s.stop, vectors[i]) for i, s in enumerate(spans, start=1)]
        if passages:
            self._put_passages([(memory_id, passages)])
        self._link([(memory_id, workspace_id, vector)])
        return True

    def _model_thread(self) -> ThreadPoolExecutor:
        """The thread a sweep's embedding runs on, at the heavy work's lower CPU priority
        (``episodic.priority``): a backlog of embedding yields to writes. The sweep's
        store writes stay on the sweeper's own thread, at normal priority: a niced thread
        holding the store's write lock would keep writes waiting while it waits for CPU."""
        with self._model_lock:
            if self._model is None:
                self._model = ThreadPoolExecutor(
                    1,
                    thread_name_prefix="episodic-embed",
                    initializer=lower_priority,
                    initargs=(self.nice,),
                )
            return self._model

    def _link(self, rows: list[tuple[str, str, Vector]]) -> None:
        if self.link_similar:
            link_indexed(self.store, rows)

    # -- background loop -------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self.run, name="episodic-indexer", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        with self._model_lock:
            model, self._model = self._model, None
        if model is not None:
            model.shutdown(wait=False)

    def run(self) -> None:
        """Sweep until stopped; a full batch sweeps again at once, otherwise wait. While
        the database is unreachable the wait doubles (up to ``MAX_BACKOFF_S``), and the
        first sweep that gets through resumes the normal pace."""
        outages = 0
        after_at = time.monotonic()
        while not self._stop.is_set():
            try:
                result = self.sweep_once()
            except ModelMismatch as exc:
                log.error("indexer stopped: %s", exc)
                return
            except StoreUnavailable as exc:
                outages += 1
                wait = backoff_s(self.interval_s, outages)
                log.warning("database unreachable, next sweep in %.1f s: %s", wait, exc)
                self._stop.wait(wait)
                continue
            except StoreBusy as exc:
                # Busy is not down: no backoff, the next sweep comes at the normal pace.
                log.info("database busy, next sweep in %.1f s: %s", self.interval_s, exc)
                self._stop.wait(self.interval_s)
                continue
            except Exception:  # the loop must survive anything one sweep hits
                log.exception("indexer sweep failed; retrying after the poll interval")
                result = SweepResult(0, 1)
            outages = 0
            if result.embedded:
                self.heap.maybe_trim()  # the batch's scratch memory goes back to the OS
            full = result.embedded >= self.batch and not result.failed
            # A backlog that outlasts the interval still lets the work after the sweep run
            # once per interval: under a steady stream of writes the indexer may not drain
            # for minutes, and conversations must still be segmented meanwhile.
            due = time.monotonic() - after_at >= self.interval_s
            if full and not due:
                continue
            if self.after_sweep is not None:
                try:
                    self.after_sweep()
                except Exception:  # as above: the loop outlives one bad run
                    log.exception("work after the sweep failed; retrying after the interval")
            after_at = time.monotonic()
            if not full:
                self._stop.wait(self.interval_s)


def link_indexed(store: VectorStore, rows: list[tuple[str, str, Vector]]) -> None:
    """Seed 000's LinkSimilarOnIndex for memories whose vectors were just stored: ``rows``
    of (memory id, workspace id, vector). A failure is logged and never undoes the
    embedding."""
    if not rows:
        return
    try:
        relations.link_similar(store, rows)
    except EpisodicError as exc:
        log.warning("linking %d indexed memories failed (still indexed): %s", len(rows), exc)


def backoff_s(interval_s: float, outages: int) -> float:
    """The wait after ``outages`` failed sweeps in a row: from a second (or the poll
    interval, if shorter) doubling each time, never past ``MAX_BACKOFF_S``."""
    first = min(1.0, interval_s)
    return float(min(MAX_BACKOFF_S, first * 2 ** max(0, outages - 1)))
