"""Running an upkeep job at most once at a time, across threads and processes.

A job takes a lease on ``(job, scope)`` in the store before it works (``scope`` is a
workspace id, or ``""`` for a job over every workspace). A second runner finds the lease
held and skips: no double work. The lease expires after ``ttl_s``, so a crashed runner
blocks the job only that long. Every run, skipped ones included, is logged in the store
(``upkeep_runs``); the scheduler reads the last successful run to decide what is due.

Work inside a job that several runners may still share (reviews) claims rows instead;
writes that read a value first are compare-and-set in the store. Leases only keep the
expensive part from running twice.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from episodic.store.base import Store

log = logging.getLogger("episodic.upkeep")

# Longer than any job should take; a crashed holder blocks its job at most this long.
DEFAULT_LEASE_S = 30 * 60.0

STATUS_OK = "ok"
STATUS_SKIPPED = "skipped"
STATUS_ERROR = "error"


def new_holder() -> str:
    """A lease holder id unique to this process and thread, readable in ``upkeep_runs``."""
    return f"{os.uname().nodename}:{os.getpid()}:{threading.get_ident()}:{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True, slots=True)
class JobResult:
    """One run of one job on one scope."""

    job: str
    scope: str
    status: str  # ok | skipped | error
    started_at: datetime
    finished_at: datetime
    seconds: float
    detail: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == STATUS_OK

    def to_json(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "scope": self.scope,
            "status": self.status,
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat(),
            "seconds": round(self.seconds, 3),
            "detail": dict(self.detail),
        }


def run_exclusive(
    store: Store,
    job: str,
    scope: str,
    work: Callable[[], Mapping[str, Any]],
    *,
    clock: Callable[[], datetime],
    ttl_s: float = DEFAULT_LEASE_S,
    holder: str | None = None,
) -> JobResult:
    """Run ``work`` under the lease of ``(job, scope)``; ``skipped`` when another holder
    has it. An exception is logged as an ``error`` run and raised again."""
    holder = holder or new_holder()
    started = clock()
    t0 = time.perf_counter()
    if not store.acquire_lease(job, scope, holder, started, ttl_s):
        detail = {"reason": "another runner holds the lease"}
        finished = clock()
        store.record_run(job, scope, holder, started, finished, STATUS_SKIPPED, detail)
        return JobResult(job, scope, STATUS_SKIPPED, started, finished, 0.0, detail)
    try:
        detail = dict(work())
    except Exception as exc:
        finished = clock()
        store.record_run(
            job, scope, holder, started, finished, STATUS_ERROR, {"error": str(exc)[:500]}
        )
        store.release_lease(job, scope, holder)
        raise
    finished = clock()
    seconds = time.perf_counter() - t0
    store.record_run(job, scope, holder, started, finished, STATUS_OK, detail)
    store.release_lease(job, scope, holder)
    log.info("upkeep %s on %r: %s in %.2fs", job, scope or "*", detail, seconds)
    return JobResult(job, scope, STATUS_OK, started, finished, seconds, detail)
