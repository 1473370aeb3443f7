"""Prometheus metrics: what the server counts and times (requests, recalls, sheds,
supersessions, admissions and drops, upkeep jobs, waits for a database connection) and
their exposition for ``GET /metrics``.

The metrics are made on first use, not on import: ``prometheus_client`` picks its
multiprocess mode from ``PROMETHEUS_MULTIPROC_DIR`` when the first one is made, and
``episodic serve`` sets that variable (to a directory it owns) before anything records,
so that the recall worker processes and ``--workers`` server processes all write their
figures where one scrape reads them. Without ``prometheus-client`` (the ``server`` extra)
every function here does nothing.

No label takes values from users' data: no workspace, no memory id, no path (routes are
templates). Names carry their unit (seconds, bytes) and counters end in ``_total``."""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

# Seconds: from a fast lookup to a slow recall under load.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass(frozen=True)
class _Metrics:
    http_requests: Any
    http_seconds: Any
    recalls: Any
    recall_seconds: Any
    shed: Any
    supersessions: Any
    upkeep_runs: Any
    upkeep_seconds: Any
    upkeep_failures: Any
    embedder_seconds: Any
    stage_seconds: Any
    embedder_errors: Any
    pool_waits: Any
    admitted: Any
    not_admitted: Any
    duplicate_events: Any
    entries_dropped: Any


_lock = threading.Lock()
_made: _Metrics | None = None
_absent = False


def turn_off() -> None:
    """Record nothing in this process from now on: a one-shot command (``episodic
    recall``) has no scrape to serve, and loading prometheus_client would cost it more
    than its recall."""
    global _absent
    with _lock:
        if _made is None:
            _absent = True


def _metrics() -> _Metrics | None:
    global _made, _absent
    if _made is not None or _absent:
        return _made
    with _lock:
        if _made is None and not _absent:
            try:
                from prometheus_client import Counter, Histogram
            except ImportError:
                _absent = True
                return None
            _made = _Metrics(
                http_requests=Counter(
                    "episodic_http_requests_total",
                    "HTTP requests answered, by route template, method and status.",
                    ["route", "method", "status"],
                ),
                http_seconds=Histogram(
                    "episodic_http_request_duration_seconds",
                    "Time from a request's arrival to its response's end, by route template "
                    "and method.",
                    ["route", "method"],
                    buckets=LATENCY_BUCKETS,
                ),
                recalls=Counter(
                    "episodic_recalls_total",
                    "Recalls run, by policy and mode (vector or sparse-only).",
                    ["policy", "mode"],
                ),
                recall_seconds=Histogram(
                    "episodic_recall_duration_seconds",
                    "Time one recall took where it ran (a recall process, or the server's), "
                    "by policy and mode.",
                    ["policy", "mode"],
                    buckets=LATENCY_BUCKETS,
                ),
                shed=Counter(
                    "episodic_http_shed_total",
                    "Requests refused with 503 by admission control, by lane (recall, write).",
                    ["lane"],
                ),
                supersessions=Counter(
                    "episodic_supersessions_total",
                    "Memories marked superseded by a newer one, by who decided.",
                    ["decided_by"],
                ),
                upkeep_runs=Counter(
                    "episodic_upkeep_runs_total",
                    "Upkeep jobs run by the scheduler, by job.",
                    ["job"],
                ),
                upkeep_seconds=Histogram(
                    "episodic_upkeep_duration_seconds",
                    "Time one scheduled upkeep job took, by job.",
                    ["job"],
                    buckets=(0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0),
                ),
                upkeep_failures=Counter(
                    "episodic_upkeep_failures_total",
                    "Scheduled upkeep jobs that failed (they run again when next due), by job.",
                    ["job"],
                ),
                stage_seconds=Histogram(
                    "episodic_recall_stage_duration_seconds",
                    "Time one stage of a recall took: query_embedding, dense, sparse, "
                    "recency (the legs), ranking (fusion to the hits).",
                    ["stage"],
                    buckets=LATENCY_BUCKETS,
                ),
                embedder_seconds=Histogram(
                    "episodic_embedder_call_duration_seconds",
                    "Time one call to the embedding model took, by what it was for: query "
                    "(a recall's), index (memories' vectors), probe (a health check).",
                    ["purpose"],
                    buckets=LATENCY_BUCKETS,
                ),
                embedder_errors=Counter(
                    "episodic_embedder_errors_total",
                    "Calls to the embedding model that failed (recall goes sparse-only), by "
                    "what they were for.",
                    ["purpose"],
                ),
                pool_waits=Histogram(
                    "episodic_db_pool_wait_seconds",
                    "Time a database call waited for a connection (or SQLite's writer) "
                    "that was busy, by pool: read, write, search (the connections recalls' "
                    "searches may hold). Only calls that waited are counted.",
                    ["pool"],
                    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
                ),
                admitted=Counter(
                    "episodic_memories_admitted_total",
                    "Events ingested that became memories.",
                ),
                not_admitted=Counter(
                    "episodic_events_not_admitted_total",
                    "Events ingested (and kept as events) that admission did not make "
                    "memories, by the rule that decided.",
                    ["rule"],
                ),
                duplicate_events=Counter(
                    "episodic_events_duplicate_total",
                    "Events ingested again with an id already stored (dropped: ingest is "
                    "idempotent).",
                ),
                entries_dropped=Counter(
                    "episodic_entries_dropped_total",
                    "Entries extraction drew from conversations and then dropped, by reason "
                    "(a failed check, one of the exclusions, or a duplicate: known_hash, "
                    "similar).",
                    ["reason"],
                ),
            )
    return _made


def http_request(route: str | None, method: str, status: int, seconds: float) -> None:
    m = _metrics()
    if m is None:
        return
    template = route or "unmatched"  # no path: a path holds ids
    m.http_requests.labels(template, method, str(status)).inc()
    m.http_seconds.labels(template, method).observe(seconds)


def recall_done(policy: str, mode: str, seconds: float) -> None:
    m = _metrics()
    if m is not None:
        m.recalls.labels(policy, mode).inc()
        m.recall_seconds.labels(policy, mode).observe(seconds)


def recall_stage(stage: str, seconds: float) -> None:
    m = _metrics()
    if m is not None:
        m.stage_seconds.labels(stage).observe(seconds)


def embedder_call(purpose: str, seconds: float, *, failed: bool) -> None:
    m = _metrics()
    if m is not None:
        m.embedder_seconds.labels(purpose).observe(seconds)
        if failed:
            m.embedder_errors.labels(purpose).inc()


# A wait for a connection shorter than this is the pool's own bookkeeping, not a wait
# (taking an idle PostgreSQL connection from psycopg's pool takes microseconds).
POOL_WAIT_FLOOR_S = 0.001


def pool_wait(pool: str, seconds: float) -> None:
    """A database call waited ``seconds`` for a connection of ``pool``: counted when it
    is at least ``POOL_WAIT_FLOOR_S``."""
    if seconds < POOL_WAIT_FLOOR_S:
        return
    m = _metrics()
    if m is not None:
        m.pool_waits.labels(pool).observe(seconds)


def waited_for(pool: str, lock: Any, timeout: float | None = None) -> bool:
    """``lock.acquire()``, the wait counted for ``pool`` when it could not be had at once
    (a semaphore or lock of the SQLite store's). Returns what ``acquire`` returned."""
    if lock.acquire(blocking=False):
        return True
    started = time.perf_counter()
    got = bool(lock.acquire() if timeout is None else lock.acquire(timeout=timeout))
    m = _metrics()
    if m is not None:
        m.pool_waits.labels(pool).observe(time.perf_counter() - started)
    return got


def ingested(admitted: int, duplicates: int, not_admitted_rules: Sequence[str]) -> None:
    """One ingest batch: memories made, events already stored, and the rule of each event
    admission did not make a memory (a rule's name, from ``episodic.policy``)."""
    m = _metrics()
    if m is None:
        return
    if admitted:
        m.admitted.inc(admitted)
    if duplicates:
        m.duplicate_events.inc(duplicates)
    for rule in not_admitted_rules:
        m.not_admitted.labels(rule).inc()


def entries_dropped(reasons: Sequence[str]) -> None:
    """Entries extraction dropped, by reason (names from ``episodic.write.extract``)."""
    m = _metrics()
    if m is not None:
        for reason in reasons:
            m.entries_dropped.labels(reason).inc()


def shed(lane: str) -> None:
    m = _metrics()
    if m is not None:
        m.shed.labels(lane).inc()


# Who decides a supersession, by the part of ``decided_by`` before its colon ("offline:
# <rule>", "llm:<model id>", "explicit:corrective", "inherited", a caller's own). The rule
# and the model stay out of the label; an unknown kind is "other", so that a label never
# takes a value from outside the code.
DECIDER_KINDS = ("offline", "llm", "explicit", "inherited", "user")


def decider_kind(decided_by: str) -> str:
    kind = decided_by.split(":", 1)[0]
    return kind if kind in DECIDER_KINDS else "other"


def superseded(decided_by: str) -> None:
    m = _metrics()
    if m is not None:
        m.supersessions.labels(decider_kind(decided_by)).inc()


def upkeep_job(job: str, seconds: float, failed: bool) -> None:
    m = _metrics()
    if m is not None:
        m.upkeep_runs.labels(job).inc()
        m.upkeep_seconds.labels(job).observe(seconds)
        if failed:
            m.upkeep_failures.labels(job).inc()


def unavailable() -> str | None:
    """Why this process cannot serve its metrics, or None when it can: prometheus-client,
    which the ``server`` extra installs, is missing (a server installed piecemeal).
    ``GET /metrics`` answers it, ``serve --metrics-port`` refuses to start with it and
    ``episodic doctor`` shows it."""
    from episodic.extras import DISTRIBUTION, installed

    if installed("prometheus_client"):
        return None

    return (
        "Prometheus metrics need prometheus-client, which the [server] extra installs: "
        f"pip install '{DISTRIBUTION}[server]'"
    )


def exposition(extra: Any = None) -> bytes:
    """The text exposition of every process's figures (all of a multiprocess directory's,
    when ``PROMETHEUS_MULTIPROC_DIR`` is set), with ``extra``, a collector of figures read
    at scrape time (the database's), if given."""
    from prometheus_client import CollectorRegistry, generate_latest

    found = registry()
    if extra is None:
        return bytes(generate_latest(found))
    with_extra = CollectorRegistry()
    with_extra.register(_Both(found, extra))
    return bytes(generate_latest(with_extra))


class _Both:
    """A collector of a registry's figures and one more collector's."""

    def __init__(self, registry: Any, extra: Any) -> None:
        self.registry = registry
        self.extra = extra

    def collect(self) -> Any:
        yield from self.registry.collect()
        yield from self.extra.collect()


def registry() -> Any:
    """The registry a scrape reads: every process's figures in multiprocess mode."""
    from prometheus_client import REGISTRY, CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector

    _metrics()
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY
    found = CollectorRegistry()
    MultiProcessCollector(found)  # type: ignore[no-untyped-call]
    return found


@contextmanager
def multiprocess_dir() -> Iterator[str]:
    """``PROMETHEUS_MULTIPROC_DIR`` for a server and its worker processes: the
    operator's, if set (left as it is), else a new directory removed on leaving. Entered
    before anything records, since the mode is fixed when the first metric is made."""
    given = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if given:
        yield given
        return
    with tempfile.TemporaryDirectory(prefix="episodic-metrics-") as made:
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = made
        try:
            yield made
        finally:
            os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)


def serve_on_port(host: str, port: int, extra: Any = None) -> Any:
    """Serve the metrics alone on ``host:port`` (no key: for scrapers that cannot send
    one; bind it where only they reach), with ``extra`` as ``exposition`` takes it.
    Returns the server, to shut down."""
    from prometheus_client import CollectorRegistry, start_http_server

    found = registry()
    if extra is not None:
        both = CollectorRegistry()
        both.register(_Both(found, extra))
        found = both
    server, _thread = start_http_server(port, addr=host, registry=found)
    return server


class StoreFigures:
    """What the database says at scrape time: memories waiting for their vector and how
    long the oldest has waited, and the database's size (a SQLite database's files, a
    PostgreSQL database's ``pg_database_size``). Read by the scraping process only, once
    a scrape; a database that does not answer leaves them out of that scrape (the
    request and readiness figures say why)."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        try:
            stats = self.store.stats()
        except Exception:  # a scrape must not fail with the database
            return
        yield GaugeMetricFamily(
            "episodic_vectors_pending",
            "Memories waiting for the indexer to embed them.",
            value=stats.pending_vectors,
        )
        yield GaugeMetricFamily(
            "episodic_memories_active",
            "Active memories, all workspaces.",
            value=stats.active_memories,
        )
        oldest = stats.oldest_pending_at
        lag = 0.0 if oldest is None else max(0.0, time.time() - oldest.timestamp())
        yield GaugeMetricFamily(
            "episodic_index_lag_seconds",
            "Age of the oldest memory waiting for the indexer to embed it (0: none waits).",
            value=lag,
        )
        size = sqlite_size(str(self.store.url))
        if size is None:
            size = stats.size_bytes
        if size is not None:
            yield GaugeMetricFamily(
                "episodic_database_size_bytes",
                "Size of the database: a SQLite file with its write-ahead log, or "
                "PostgreSQL's pg_database_size.",
                value=size,
            )


def sqlite_size(url: str) -> int | None:
    if not url.startswith("sqlite:") or url.endswith(":memory:"):
        return None
    path = url.split(":///", 1)[-1]
    total = 0
    for name in (path, f"{path}-wal"):
        try:
            total += os.path.getsize(name)
        except OSError:
            continue
    return total
