"""The models behind the service: the embedder and the LLM, each created on first use,
and what is built on them (the query-vector cache and the indexer).

No embedder is not an error: recall runs sparse-only (keyword recall, no vectors), and
says so in ``doctor``, in ``/healthz`` (``recall_mode``) and in the log, once per change
of state (``episodic.service.embedder_state``): every call that reaches the model goes
through one ``WatchedEmbedder``. No LLM runs the offline fallbacks of every LLM step.
"""

from __future__ import annotations

import enum
import logging
import os
import threading
import time
from collections.abc import Callable

from episodic.config import Settings
from episodic.embed import CachedEmbedder, make_embedder
from episodic.embed.base import Embedder
from episodic.embed.pull import (
    FIRST_USE_DEADLINE_S,
    OFFLINE_REASON,
    TOTAL_BYTES,
    HubUnreachable,
    ModelMissing,
    failed_pull,
    hub_offline,
    pull,
    snapshot_dir,
    waited,
    without_the_hub,
)
from episodic.errors import EmbedderError, ModelMismatch
from episodic.extras import require
from episodic.llm.base import LLM
from episodic.priority import HEAVY_NICE, MAX_NICE
from episodic.recall.engine import MODE_SPARSE_ONLY, MODE_VECTOR
from episodic.recall.legs import QueryVectors
from episodic.service.embedder_state import EmbedderState, WatchedEmbedder
from episodic.store.base import Store
from episodic.write.indexer import Indexer

log = logging.getLogger("episodic")

# How old the last observation of the embedder may be for ``/healthz`` to answer it as
# the mode of the next recall; past it, a probe, waited for this long at most.
MODE_FRESH_S = 1.0
MODE_PROBE_WAIT_S = 1.0


class _Unset(enum.Enum):
    UNSET = "UNSET"


UNSET = _Unset.UNSET  # "not given": take it from the settings (None means "off")


class Models:
    """The embedder, the LLM, the query-vector cache and the indexer of one service."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        *,
        embedder: Embedder | _Unset | None,
        llm: LLM | _Unset | None,
        after_sweep: Callable[[], None],
    ) -> None:
        self.store = store
        self.settings = settings
        # As given (UNSET: made from the settings), for recall processes to open the same.
        self.given: tuple[Embedder | _Unset | None, LLM | _Unset | None] = (embedder, llm)
        self._embedder: Embedder | _Unset | None = embedder
        self._embedder_error: str | None = None
        self._creating = threading.Lock()
        self.state = EmbedderState()
        self._watched: dict[str, WatchedEmbedder] = {}  # by purpose
        self._probing = threading.Lock()
        self._llm: LLM | _Unset | None = llm
        self._after_sweep = after_sweep
        self._query_vectors: QueryVectors | None = None
        self._indexer: Indexer | None = None
        self._indexer_nice = HEAVY_NICE
        self._model_checked = False

    # -- the embedder --------------------------------------------------------------
    @property
    def embedder(self) -> Embedder | None:
        """The configured embedder, created on first use; None means sparse-only."""
        with self._creating:
            if self._embedder is UNSET:
                try:
                    self._embedder = make_embedder(self.settings)
                except ModelMissing as exc:
                    self._embedder = self._download_model(exc)
                except EmbedderError as exc:
                    self._embedder = None
                    self._no_embedder(str(exc))
            return self._embedder

    def _no_embedder(self, why: str, fix: str = "") -> None:
        # The log line (every one-shot command prints it) says why in one sentence and
        # points to `episodic doctor`; the status doctor shows carries how to fix it.
        self._embedder_error = f"{why}; {fix}" if fix else why
        self.state.saw(MODE_SPARSE_ONLY, f"no embedder available: {why}")

    def _download_model(self, missing: ModelMissing) -> Embedder | None:
        """The local model is nowhere on this machine: fetch it once, now, within
        ``FIRST_USE_DEADLINE_S``. Here rather than in the background indexer so that the
        first recall (or a one-shot CLI command) gets vectors instead of a keyword-only
        answer; a server reaches this while it starts (``warn_if_sparse_only``), before it
        takes requests, and the deadline and per-read timeouts bound the wait."""
        if hub_offline(os.environ):
            self._no_embedder(OFFLINE_REASON, without_the_hub())
            return None
        failed = failed_pull(self.settings.cache_dir)
        if failed is not None:
            # Every command would otherwise wait on a hub this machine cannot reach.
            self._no_embedder(
                f"the local embedder has no model and downloading it failed "
                f"{waited(time.time() - failed.at)} ago ({failed.error})",
                f"{missing}; first use tries again in "
                f"{waited(failed.retry_in(time.time()))}, `episodic model pull` tries now",
            )
            return None
        target = snapshot_dir(self.settings.cache_dir)
        log.warning(
            "the local embedder has no model yet: downloading all-MiniLM-L6-v2 (%d MB) "
            "once into %s",
            TOTAL_BYTES // 1_000_000,
            target,
        )
        try:
            pull(self.settings.cache_dir, deadline_s=FIRST_USE_DEADLINE_S)
            return make_embedder(self.settings)
        except EmbedderError as exc:
            # A hub out of reach: ``pull``'s error adds every way round the hub to the
            # reason, which ``missing`` (and doctor's fix) say already; the reason alone.
            cause = exc.__cause__
            reason = cause if isinstance(exc, HubUnreachable) and cause is not None else exc
            self._no_embedder(
                f"the local embedder has no model and downloading it failed: {reason}",
                str(missing),
            )
            return None

    def _calls(self, purpose: str = "index") -> Embedder | None:
        """The embedder every call to the model goes through (it reports to ``state``),
        timed by ``purpose`` (query, index, probe); None means sparse-only."""
        embedder = self.embedder
        if embedder is None:
            return None
        watched = self._watched.get(purpose)
        if watched is None or watched.inner is not embedder:
            watched = self._watched[purpose] = WatchedEmbedder(embedder, self.state, purpose)
        return watched

    @property
    def llm(self) -> LLM | None:
        """The configured LLM (EPISODIC_LLM_URL/MODEL), created on first use; None = the
        offline fallbacks run."""
        if self._llm is UNSET:
            if not (self.settings.llm_url or self.settings.llm_model):
                self._llm = None  # nothing configured: no need for the [llm] extra's SDK
            else:
                require("llm", "an LLM (EPISODIC_LLM_URL)")
                from episodic.llm import make_llm

                self._llm = make_llm(self.settings)
        return self._llm

    def embedder_status(self) -> tuple[str, str]:
        """("vector" | "sparse-only", why), from one probe of the embedder now. What
        ``doctor`` reports; it logs nothing and leaves ``state`` alone."""
        return self._probe(self.embedder)

    def _probe(self, embedder: Embedder | None) -> tuple[str, str]:
        if embedder is None:
            return MODE_SPARSE_ONLY, self._embedder_error or "EPISODIC_EMBEDDER=none"
        self._expect_stored_dim(embedder)
        try:
            embedder.embed_batch(["episodic health probe"])
        except EmbedderError as exc:
            return MODE_SPARSE_ONLY, str(exc)
        return MODE_VECTOR, f"{embedder.model_id} ({embedder.dim}-d)"

    def _observed_probe(self) -> str:
        """A probe whose outcome goes into ``state`` (and the log, on a change)."""
        embedder = self._calls("probe")
        mode, why = self._probe(embedder)
        if embedder is None:
            self.state.saw(mode, why)  # nothing to call: the configuration is the state
        return mode

    def warn_if_sparse_only(self) -> str:
        """Called when a long-running interface starts: probes the embedder, so that a
        sparse-only start is logged (once: ``EmbedderState`` logs changes only). Returns
        the mode."""
        return self._observed_probe()

    def recall_mode(self) -> str:
        """The mode the next recall would use ("vector" | "sparse-only"), for
        ``/healthz``: what the last call to the embedder saw, when that was under
        ``MODE_FRESH_S`` ago; else one probe (shared by the requests that come while it
        runs), waited for at most ``MODE_PROBE_WAIT_S`` (a model that hangs does not hold
        the request: the last state is answered). An outage, or a recovery, shows at the
        next request, with or without recall traffic."""
        if self.embedder is None or self.state.mode is None:
            return self._observed_probe()
        if self.state.older_than(MODE_FRESH_S):
            self._probe_in_background()
            if self._probing.acquire(timeout=MODE_PROBE_WAIT_S):
                self._probing.release()
        return self.state.mode

    def observed(self, mode: str, why: str) -> None:
        """What a recall run elsewhere (a recall process) found the embedder to be: the
        next ``recall_mode`` answers it, and a change is logged here, once for the
        server and its recall processes."""
        self.state.saw(mode, why)

    def _probe_in_background(self) -> None:
        if not self._probing.acquire(blocking=False):
            return  # one probe at a time

        def probe() -> None:
            try:
                self._observed_probe()
            except Exception as exc:  # the probe must never take the server down
                log.debug("embedder probe failed: %s", exc)
            finally:
                self._probing.release()

        threading.Thread(target=probe, name="episodic-embedder-probe", daemon=True).start()

    def _check_model(self, embedder: Embedder) -> None:
        if self._model_checked:
            return
        stored = self.store.vector_model()
        if stored is not None and stored[0] != embedder.model_id:
            raise ModelMismatch(stored[0], stored[1], embedder.model_id, embedder.dim)
        self._expect_stored_dim(embedder)
        self._model_checked = True

    def _expect_stored_dim(self, embedder: Embedder) -> None:
        """Tell a remote embedder the dimension of the vectors stored for its model: left
        to learn it from its first answer, a server that comes up answering garbage would
        teach it a wrong one, and every good answer after would be refused."""
        if isinstance(embedder, WatchedEmbedder):
            embedder = embedder.inner
        expect = getattr(embedder, "expect_dim", None)
        stored = self.store.vector_model()
        if callable(expect) and stored is not None and stored[0] == embedder.model_id:
            expect(stored[1])

    # -- what is built on it ---------------------------------------------------------
    def query_vectors(self) -> QueryVectors | None:
        """The recall's query embeddings (a small cache by text); None when sparse-only."""
        embedder = self._calls("query")
        if embedder is None:
            return None
        self._check_model(embedder)
        if self._query_vectors is None:
            self._query_vectors = QueryVectors(embedder)
        return self._query_vectors

    def embedder_for_writes(self) -> Embedder | None:
        # Not cached: what segmentation embeds (messages the sweep has not reached, new
        # entries) is stored as those memories' vectors at once.
        embedder = self._calls()
        if embedder is None:
            return None
        self._check_model(embedder)
        return embedder

    def indexer(self) -> Indexer | None:
        """The background indexer (created on first use, not started); None when
        sparse-only. ``ModelMismatch`` when the store holds another model's vectors."""
        embedder = self._calls()
        if embedder is None:
            return None
        self._check_model(embedder)
        if self._indexer is None:
            self._indexer = Indexer(
                self.store,
                CachedEmbedder(embedder, self.store),
                batch=self.settings.sweep_batch,
                interval_s=self.settings.sweep_interval_s,
                after_sweep=self._after_sweep,
                nice=self._indexer_nice,
            )
        return self._indexer

    def lower_indexing(self, nice: int) -> None:
        """Run the indexer's embedding at least ``nice`` lower in CPU priority (from its
        next model thread on: call before the indexer starts)."""
        self._indexer_nice = max(self._indexer_nice, min(nice, MAX_NICE))
        if self._indexer is not None:
            self._indexer.nice = max(self._indexer.nice, self._indexer_nice)

    def vectors_cleared(self, embedder: Embedder) -> None:
        """Every vector was dropped (a reindex): the next store decides the model again."""
        expect = getattr(embedder, "expect_dim", None)
        if callable(expect):
            expect(None)  # nothing stored: the model's next answer says its dimension
        self._model_checked = False
        self._query_vectors = None

    def batch_query_embeddings(self) -> None:
        """Let concurrent recalls share model calls for their query embeddings (a server
        with many clients; see ``episodic.embed.batching``). Off with
        EPISODIC_QUERY_BATCHING=0."""
        from episodic.embed.batching import BatchingEmbedder

        embedder = self._calls("query")
        if embedder is None or os.environ.get("EPISODIC_QUERY_BATCHING", "1") == "0":
            return
        self._query_vectors = QueryVectors(BatchingEmbedder(embedder))

    def forget_query_cache(self) -> None:
        # Recent query embeddings are keyed by query text: drop them with the data.
        if self._query_vectors is not None:
            old = self._query_vectors
            self._query_vectors = type(old)(old.embedder, old.size)

    def stop(self) -> None:
        if self._indexer is not None:
            self._indexer.stop()
            self._indexer = None
