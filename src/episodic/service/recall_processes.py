"""Recalls in processes of their own, for a server.

A recall is most of a server's CPU: embedding the query, two searches and the ranking,
much of it Python holding the GIL. In the server's own process, every write waited
behind that for the GIL and the cores, and a write's few milliseconds of work stretched
to tens or hundreds under load (benchmarks/README.md, "Recalls in processes of their
own"). Here recalls run in worker processes over the same database, each with the same
settings and models; the server's process keeps the HTTP, the writes and the background
jobs, and writes the reference marks and reviews the recalls leave (a worker writes
nothing, so no write ever waits on another process's lock).

Workers run at a lower CPU priority (``nice``): a worker holds no lock a write needs,
so a write that wants a core gets it first, and the workers take every cycle left.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from episodic import tracing
from episodic.config import Settings
from episodic.embed.base import Embedder
from episodic.heap import HeapTrimmer
from episodic.llm.base import LLM
from episodic.logs import configure_logging, log_format
from episodic.model import utcnow
from episodic.priority import env_nice
from episodic.store import open_store

if TYPE_CHECKING:
    from episodic.recall.engine import RecallResult
    from episodic.service.models import _Unset

log = logging.getLogger("episodic")

# How much lower a worker's CPU priority is than the server's threads
# (``EPISODIC_RECALL_NICE``, 0-19). Unlike niced threads of the server's own
# (episodic.priority), a niced worker holds no lock or GIL the writes wait for, so it
# only yields cores. SQLite, 64 clients, 300 s (benchmarks/README.md, "Recalls in
# processes of their own"): at 10 the writes' p95 was 59 ms and 77.3 requests/s; at 5,
# 79 ms and 81.8 requests/s, with half the reads shed.
RECALL_NICE = env_nice("EPISODIC_RECALL_NICE", 5)
# How much lower still the server's indexer embeds while recalls run in workers
# (``Episodic.recall_in_processes``): under a load that takes every cycle, recalls first,
# and the backlog after (SQLite, 64 clients, 300 s: with the indexer at the workers'
# priority reads lost a fifth of their throughput to it).
INDEXING_BELOW_RECALLS = 5
# Pools broken in a row after which recalls stay in the server's process for good.
MAX_DEATHS = 3
# The local model's threads in a worker (unless ``EPISODIC_EMBED_THREADS`` says): a query
# is a few tokens, and a second thread shortened its embedding by a tenth on an idle
# machine (3.3 -> 3.0 ms) for a third more CPU (3.3 -> 4.4 ms), the cycles a saturated
# server lacks (benchmarks/README.md, "Where a read's CPU goes").
WORKER_EMBED_THREADS = 1


class ProcessesDown(RuntimeError):
    """The recall processes could not answer (one died); the caller recalls in-process."""


class RecallService(Protocol):
    """What a worker runs: the service (``Episodic``), made by ``WorkerSpec.service``."""

    @property
    def recall(self) -> Callable[..., RecallResult]: ...

    @property
    def warn_if_sparse_only(self) -> Callable[[], object]: ...


@dataclass(frozen=True)
class WorkerSpec:
    """What a worker opens: the same database, settings and models as the server's
    (an embedder or LLM given to the server as an object travels pickled; UNSET ones
    are made from the settings, as the server made its own). ``service`` is the
    service's class, called as ``Episodic`` is."""

    service: Callable[..., RecallService]
    db_url: str
    settings: Settings
    embedder: Embedder | _Unset | None
    llm: LLM | _Unset | None
    nice: int


class RecallProcesses:
    """``count`` worker processes that answer ``recall`` calls (spawned, so that no lock
    or thread of the server is copied into them). ``close`` ends them."""

    def __init__(self, spec: WorkerSpec, count: int) -> None:
        self.spec = spec
        self.count = count
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        self._closed = False
        self._deaths = 0  # pools broken in a row, without an answer between

    def start(self) -> list[Future[int]]:
        """Spawn the workers now and have each open the store and load its model (not at
        the first recall, which would wait for it); returns the warm-ups' futures (each a
        worker's pid)."""
        pool = self._executor()
        return [pool.submit(_warm) for _ in range(self.count)]

    def recall(self, query: str, now: datetime, kwargs: Mapping[str, Any]) -> RecallResult:
        """``Episodic.recall(query, **kwargs)`` in a worker, as of ``now`` (the server's
        clock). Errors the recall raises are raised here; ``ProcessesDown`` when a worker
        died (the pool is made again for the next call)."""
        pool = self._executor()
        try:
            with tracing.span("recall.process_hop", {"episodic.recall_processes": self.count}):
                # The trace's context goes with the call: the worker's spans are its children.
                call = pool.submit(_recall, query, now, dict(kwargs), tracing.carrier())
                result = call.result()
        except BrokenProcessPool as exc:
            with self._lock:
                # The recalls in flight all see the one death: the first says it.
                first = self._pool is pool
                if first:
                    self._pool = None
                    self._deaths += 1
                # Workers that cannot even start (the database or the model gone) would
                # die again at every recall, each time after a spawn: give up on them.
                gave_up = first and self._deaths >= MAX_DEATHS
                self._closed = self._closed or gave_up
            pool.shutdown(wait=False, cancel_futures=True)
            if gave_up:
                log.error(
                    "recall processes died %d times in a row (%s); recalls stay in the "
                    "server's process",
                    MAX_DEATHS,
                    exc,
                )
            elif first:
                log.warning("a recall process died (%s); starting them again", exc)
            raise ProcessesDown(str(exc)) from exc
        self._deaths = 0
        return result

    def close(self) -> None:
        with self._lock:
            pool, self._pool, self._closed = self._pool, None, True
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def _executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._closed:
                raise ProcessesDown("the recall processes were closed")
            if self._pool is None:
                self._pool = ProcessPoolExecutor(
                    self.count,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_open_worker,
                    initargs=(self.spec,),
                )
            return self._pool


# -- in the worker -------------------------------------------------------------------
_worker: RecallService | None = None
_now: datetime | None = None
# A query's embedding takes scratch memory for a moment; handed back now and then, as
# the server's indexer does (episodic.heap), so a worker's RSS stays flat.
_trimmer = HeapTrimmer()


def _clock() -> datetime:
    # The server's time of the call being answered: a server with its own clock (a
    # simulation, a test) recalls as of that clock, not the worker's.
    return _now if _now is not None else utcnow()


def _open_worker(spec: WorkerSpec) -> None:
    global _worker
    # Ctrl-C in a terminal reaches the whole process group, and so does a SIGTERM from
    # systemd (KillMode=control-group) or `kill -- -<pgid>`: the server ends its workers
    # once its recalls in flight are answered. A worker that died at once failed those
    # recalls over to the server's process, which started new workers while stopping.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if spec.nice > 0 and hasattr(os, "nice"):
        os.nice(spec.nice)  # before the model's threads start: they inherit it
    os.environ.setdefault("EPISODIC_EMBED_THREADS", str(WORKER_EMBED_THREADS))
    # The server logs the recall mode's changes for its whole process group (it learns
    # each recall's mode from the result): a worker saying it too doubled every line.
    logging.getLogger("episodic.mode").disabled = True
    if log_format() == "json":  # a spawned process starts with no handler of its own
        configure_logging(logging.WARNING)
    tracing.start_from_env()  # the server's OTEL_* variables: its spans go where the server's do
    _worker = spec.service(
        store=open_store(spec.db_url),
        embedder=spec.embedder,
        settings=spec.settings,
        clock=_clock,
        llm=spec.llm,
    )


def _warm() -> int:
    assert _worker is not None
    _worker.warn_if_sparse_only()  # loads the embedder
    return os.getpid()


def _recall(
    query: str, now: datetime, kwargs: dict[str, Any], trace: dict[str, str] | None = None
) -> RecallResult:
    global _now
    assert _worker is not None
    _now = now
    try:
        with tracing.attached(trace), tracing.span("recall.worker", {"process.pid": os.getpid()}):
            return _worker.recall(query, **kwargs)
    finally:
        _now = None
        _trimmer.maybe_trim()
