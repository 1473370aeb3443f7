"""Running an upkeep job at most once at a time, across threads and processes.

A job takes a lease on ``(job, scope)`` in the store before it works (``scope`` is a
workspace id, or ``""`` for a job over every workspace). A second runner finds the lease
held and skips: no double work. The lease expires after ``ttl_s``, so a crashed runner
blocks the job only that long; a runner killed on this machine (its holder id names the
host and the process) blocks it not at all: the next runner sees the process is gone and
takes the lease over. Host names must then differ between machines sharing a database.

Every run, skipped ones included, is logged in the store (``upkeep_runs``); the
scheduler reads the last successful run to decide what is due.

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

from episodic.store.upkeep import UpkeepStore

log = logging.getLogger("episodic.upkeep")

# Longer than any job should take; a crashed holder blocks its job at most this long.
DEFAULT_LEASE_S = 30 * 60.0

STATUS_OK = "ok"
STATUS_SKIPPED = "skipped"
STATUS_ERROR = "error"


def new_holder() -> str:
    """A lease holder id unique to this process and thread, readable in ``upkeep_runs``."""
    return f"{os.uname().nodename}:{os.getpid()}:{threading.get_ident()}:{uuid.uuid4().hex[:8]}"


def holder_is_dead(holder: str) -> bool:
    """Whether ``holder`` (a ``new_holder`` id) names a process of this machine that no
    longer runs. A holder of another machine, or one that cannot be read, counts as
    alive: its lease then only expires."""
    node, _, rest = holder.partition(":")
    pid_text = rest.partition(":")[0]
    if node != os.uname().nodename or not pid_text.isdigit() or int(pid_text) == os.getpid():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


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
    store: UpkeepStore,
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
    acquired = store.acquire_lease(job, scope, holder, started, ttl_s)
    if not acquired:
        stale = store.lease_holder(job, scope)
        if stale is not None and holder_is_dead(stale):
            # Its runner was killed (SIGKILL, OOM) on this machine: nobody works under
            # it, so the job need not wait out the TTL. Released by name, then acquired
            # as usual: of two runners recovering it at once, one gets it.
            log.warning("upkeep %s on %r: recovering the lease of dead %s", job, scope, stale)
            store.release_lease(job, scope, stale)
            acquired = store.acquire_lease(job, scope, holder, started, ttl_s)
    if not acquired:
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
