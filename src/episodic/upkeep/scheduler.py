"""The upkeep schedule: one background thread that runs every job when it is due.

- **decay**: nightly at ``Settings.decay_at`` (UTC, default 03:00), all workspaces;
- **reviews**: every ``Settings.review_interval_s`` seconds (default 300);
- **consolidation triggers**: at the same period, each workspace whose backlog (memories
  no consolidation has looked at yet) reached ``Settings.consolidate_threshold`` or that
  holds such a flashbulb episode is consolidated, and its health snapshot refreshed;
- **daily**, at ``Settings.daily_at`` (UTC, default 04:00), per workspace: compaction
  (archive + near-duplicate merge), consolidation, then the health snapshot.

"Due" is read from the store's run log (``upkeep_runs``): a daily job is due when its last
successful run is older than today's scheduled time (so a process started at 09:00 that
finds no run since 04:00 runs it at once), a periodic one when its last run is older than
its period. Every job runs under a lease (``upkeep.lease``), so several schedulers (one
per server process, or cron driving ``episodic upkeep ...`` besides) never run the same
job on the same workspace twice at once. A job that fails is logged and retried on a
later tick; the other jobs go on.

``start()`` / ``stop()`` run it in a daemon thread (the HTTP server starts it);
``episodic upkeep run-scheduler`` runs it in the foreground; ``run_pending(now)`` is one
tick, for tests and cron-like callers.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Protocol

from episodic import metrics
from episodic.config import Settings, parse_clock
from episodic.errors import InvalidInput, StoreBusy, StoreUnavailable
from episodic.store.upkeep import UpkeepStore
from episodic.upkeep import compact, consolidate, decay, health, reviews
from episodic.upkeep.consolidate import TRIGGER_DAILY, due_reason
from episodic.upkeep.lease import JobResult

log = logging.getLogger("episodic.upkeep.scheduler")

TICK_S = 60.0
ALL_WORKSPACES = ""
DAILY_MARKER = "daily"
TRIGGER_CHECK = "consolidate-triggers"


class UpkeepJobs(Protocol):
    """The jobs the schedule runs, each under its lease (the service's upkeep area)."""

    def decay(self) -> JobResult: ...

    def run_reviews(self) -> JobResult: ...

    def consolidate(
        self, *, workspace: str | None = None, trigger: str, refresh_health: bool = True
    ) -> list[JobResult]: ...

    def compact(self, *, workspace: str | None = None) -> list[JobResult]: ...

    def health_snapshot(self, *, workspace: str | None = None) -> list[JobResult]: ...


def scheduled_before(now: datetime, clock: str) -> datetime:
    """The latest time at or before ``now`` when ``clock`` ("HH:MM", UTC) struck."""
    hour, minute = parse_clock(clock, "clock")
    at = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    return at if at <= now else at - timedelta(days=1)


class UpkeepScheduler:
    """Runs ``jobs`` on their schedule, reading when each last ran from ``store``."""

    def __init__(
        self,
        jobs: UpkeepJobs,
        *,
        store: UpkeepStore,
        settings: Settings,
        clock: Callable[[], datetime],
        tick_s: float = TICK_S,
    ) -> None:
        if tick_s <= 0:
            raise InvalidInput("tick_s", f"must be a positive number of seconds, got {tick_s}")
        self.jobs = jobs
        self.store = store
        self.settings = settings
        self.tick_s = tick_s
        self.clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- when ----------------------------------------------------------------------
    def _daily_due(self, job: str, scope: str, at: str, now: datetime) -> bool:
        last = self.store.last_run(job, scope)
        return last is None or last < scheduled_before(now, at)

    def _period_due(self, job: str, scope: str, period_s: float, now: datetime) -> bool:
        last = self.store.last_run(job, scope)
        return last is None or (now - last).total_seconds() >= period_s

    # -- one tick ------------------------------------------------------------------
    def run_pending(self, now: datetime | None = None) -> list[JobResult]:
        """Run every job that is due at ``now``; returns what ran (skips included)."""
        now = now or self.clock()
        settings = self.settings
        results: list[JobResult] = []

        def attempt(name: str, run: Callable[[], list[JobResult]]) -> None:
            started, failed = time.perf_counter(), True
            try:
                results.extend(run())
                failed = False
            except (StoreBusy, StoreUnavailable) as exc:  # no fault of the job: no trace
                log.warning("upkeep job %s did not run (%s); it runs when next due", name, exc)
            except Exception:  # one failing job must not stop the others
                log.exception("upkeep job %s failed; it runs again when next due", name)
            finally:
                metrics.upkeep_job(name, time.perf_counter() - started, failed)

        if self._daily_due(decay.JOB, ALL_WORKSPACES, settings.decay_at, now):
            attempt(decay.JOB, lambda: [self.jobs.decay()])
        if self._period_due(reviews.JOB, ALL_WORKSPACES, settings.review_interval_s, now):
            attempt(reviews.JOB, lambda: [self.jobs.run_reviews()])
        if self._period_due(TRIGGER_CHECK, ALL_WORKSPACES, settings.review_interval_s, now):
            attempt(consolidate.JOB, self._triggered_consolidations)
        if self._daily_due(DAILY_MARKER, ALL_WORKSPACES, settings.daily_at, now):
            attempt(DAILY_MARKER, lambda: self._daily(now))
        return results

    def _triggered_consolidations(self) -> list[JobResult]:
        store = self.store
        threshold = self.settings.consolidate_threshold
        out: list[JobResult] = []
        started = self.clock()
        for ws in store.workspaces():
            reason = due_reason(store, ws, threshold)
            if reason is not None:
                out += self.jobs.consolidate(workspace=ws, trigger=reason)
        store.record_run(
            TRIGGER_CHECK, ALL_WORKSPACES, "scheduler", started, self.clock(), "ok", {}
        )
        return out

    def _daily(self, now: datetime) -> list[JobResult]:
        """Compaction, consolidation and health for every workspace not done today."""
        store = self.store
        at = self.settings.daily_at
        out: list[JobResult] = []
        started = self.clock()
        failed = 0
        jobs = self.jobs

        def run(job: str, ws: str) -> list[JobResult]:
            if job == compact.JOB:
                return jobs.compact(workspace=ws)
            if job == consolidate.JOB:
                # The health snapshot is the next job of the day.
                return jobs.consolidate(workspace=ws, trigger=TRIGGER_DAILY, refresh_health=False)
            return jobs.health_snapshot(workspace=ws)

        for ws in store.workspaces():
            # In this order: merged duplicates are not consolidated twice, and the health
            # snapshot sees the day's result.
            for job in (compact.JOB, consolidate.JOB, health.JOB):
                if not self._daily_due(job, ws, at, now):
                    continue
                try:
                    out += run(job, ws)
                except (StoreBusy, StoreUnavailable) as exc:
                    failed += 1
                    log.warning("daily upkeep %s of workspace %r waits: %s", job, ws, exc)
                except Exception:  # the next tick retries it; other workspaces go on
                    failed += 1
                    log.exception("daily upkeep %s of workspace %r failed", job, ws)
        if not failed:
            store.record_run(
                DAILY_MARKER, ALL_WORKSPACES, "scheduler", started, self.clock(), "ok", {}
            )
        return out

    # -- the thread ----------------------------------------------------------------
    def start(self) -> None:
        """Run in a daemon thread until ``stop()``; a second start does nothing."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self.run, name="episodic-upkeep", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def run(self) -> None:
        """Tick until stopped."""
        while not self._stop.is_set():
            try:
                self.run_pending()
            except (StoreBusy, StoreUnavailable) as exc:
                log.warning("upkeep tick skipped, trying again next tick: %s", exc)
            except Exception:  # the loop outlives anything one tick hits (a locked db ...)
                log.exception("upkeep tick failed; trying again next tick")
            self._stop.wait(self.tick_s)
