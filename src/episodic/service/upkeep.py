"""The service's upkeep area: the jobs that keep memory healthy (decay, reviews,
consolidation, compaction and retirement, health), run by hand, by cron
(``episodic upkeep ...``) or on their schedule (``scheduler``).

Each job runs under a lease in the store (``episodic.upkeep.lease``): two runners of the
same job on the same workspace never work at once; the second one is skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from episodic.errors import InvalidInput
from episodic.service.context import Context
from episodic.upkeep import compact as compact_job
from episodic.upkeep import consolidate as consolidate_job
from episodic.upkeep import decay as decay_job
from episodic.upkeep import health as health_job
from episodic.upkeep import reviews as reviews_job
from episodic.upkeep.compact import ArchivedEvent, retire_phase, run_compaction
from episodic.upkeep.consolidate import TRIGGER_MANUAL, due_reason
from episodic.upkeep.consolidate import consolidate as consolidate_workspace
from episodic.upkeep.decay import check_formula, run_decay
from episodic.upkeep.health import HealthView, health_view, snapshot_json, snapshot_workspace
from episodic.upkeep.lease import JobResult, run_exclusive
from episodic.upkeep.nudge import memory_nudge
from episodic.upkeep.reviews import ReviewReport, review_output, run_reviews
from episodic.upkeep.scheduler import TICK_S, UpkeepScheduler

log = logging.getLogger("episodic.upkeep")


class Upkeep:
    """The upkeep jobs of one service; the ``UpkeepJobs`` its scheduler runs."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._scheduler: UpkeepScheduler | None = None

    def _exclusive(self, job: str, scope: str, work: Callable[[], Mapping[str, Any]]) -> JobResult:
        return run_exclusive(self.ctx.store, job, scope, work, clock=self.ctx.clock)

    def _workspaces(self, workspace: str | None) -> list[str]:
        if workspace is not None:
            if not workspace.strip():
                raise InvalidInput("workspace", "must not be empty")
            return [workspace]
        return self.ctx.store.workspaces()

    def decay(self, *, workspace: str | None = None, formula: str | None = None) -> JobResult:
        """Recompute every active memory's importance from base importance, age and
        references (seed 000; ``formula="prominence"`` for seed 001's curve; default
        ``Settings.decay_formula``). Idempotent for the same time."""
        chosen = check_formula(formula or self.ctx.settings.decay_formula)
        if workspace is not None:
            self._workspaces(workspace)  # refuses an empty name
        now = self.ctx.clock()
        store = self.ctx.store
        return self._exclusive(
            decay_job.JOB,
            workspace or "",
            lambda: run_decay(store, now, formula=chosen, workspace=workspace),
        )

    def review(
        self,
        workspace: str,
        output_text: str,
        *,
        agent: str | None = None,
        conversation: str | None = None,
    ) -> ReviewReport:
        """Rate the workspace's pending reviews (recalls not reviewed yet, narrowed to an
        agent or conversation when given) by the agent's following output, and update
        each recalled memory's FSRS state (seed 003). LLM when configured, else token
        overlap."""
        return review_output(
            self.ctx.store,
            workspace,
            output_text,
            now=self.ctx.clock(),
            llm=self.ctx.models.llm,
            agent=agent,
            conversation=conversation,
        )

    def run_reviews(self) -> JobResult:
        """The review job: recalls inside conversations are rated by the assistant
        messages that followed them; recalls older than a day with no output expire."""
        now = self.ctx.clock()
        store, models = self.ctx.store, self.ctx.models
        return self._exclusive(
            reviews_job.JOB, "", lambda: run_reviews(store, now, llm=models.llm).to_json()
        )

    def consolidate(
        self,
        *,
        workspace: str | None = None,
        trigger: str = TRIGGER_MANUAL,
        refresh_health: bool = True,
    ) -> list[JobResult]:
        """Derive rules and facts from clusters of related memories, per workspace (all
        when none is given); see ``episodic.upkeep.consolidate``. Then, as seed 000's
        consolidator does, refresh the workspace's health snapshot (its outcome is the
        result's ``detail["health"]``); the daily schedule, which takes the snapshot
        next anyway, passes ``refresh_health=False``."""
        store, models = self.ctx.store, self.ctx.models

        def work(ws: str) -> Callable[[], Mapping[str, Any]]:
            now = self.ctx.clock()
            return lambda: consolidate_workspace(
                store, ws, now=now, llm=models.llm, trigger=trigger
            ).to_json()

        results: list[JobResult] = []
        for ws in self._workspaces(workspace):
            result = self._exclusive(consolidate_job.JOB, ws, work(ws))
            if refresh_health and result.ok:
                health = self._health_after_consolidation(ws)
                result = replace(result, detail={**result.detail, "health": health})
            results.append(result)
        return results

    def _health_after_consolidation(self, workspace: str) -> dict[str, Any]:
        """Today's health snapshot of a workspace just consolidated, in brief. A failure
        is logged and reported, not raised: the consolidation is stored either way."""
        try:
            (result,) = self.health_snapshot(workspace=workspace)
        except Exception as exc:  # the health job logged it as an error run
            log.exception("health snapshot after consolidating %r failed", workspace)
            return {"status": "error", "error": str(exc)[:200]}
        brief: dict[str, Any] = {"status": result.status}
        for snap in result.detail.get("snapshots", ()):
            if snap["crew"] is None:  # the workspace's own, not a crew's
                brief.update({k: snap[k] for k in ("score", "band", "snapshot_date")})
        return brief

    def consolidate_if_due(self, workspace: str | None = None) -> list[JobResult]:
        """Consolidate the workspaces holding a flashbulb episode or a backlog of at least
        ``Settings.consolidate_threshold`` memories no consolidation has looked at yet
        (``episodic.upkeep.consolidate.due_reason``)."""
        results: list[JobResult] = []
        for ws in self._workspaces(workspace):
            reason = due_reason(self.ctx.store, ws, self.ctx.settings.consolidate_threshold)
            if reason is not None:
                results += self.consolidate(workspace=ws, trigger=reason)
        return results

    def compact(self, *, workspace: str | None = None) -> list[JobResult]:
        """Archive aged journal rows and merge near-duplicate memories, per workspace."""
        store = self.ctx.store

        def work(ws: str) -> Callable[[], Mapping[str, Any]]:
            now = self.ctx.clock()
            days = self.ctx.settings.archive_after_days
            return lambda: run_compaction(store, ws, now, archive_after_days=days)

        return [
            self._exclusive(compact_job.JOB, ws, work(ws)) for ws in self._workspaces(workspace)
        ]

    def retire_phase(self, workspace: str, phase: str) -> list[str]:
        """Stage retirement (seed 001): retire the ``domain = task`` memories of a phase
        that ended; returns their ids. They stay stored, out of every recall."""
        return retire_phase(self.ctx.store, workspace, phase, self.ctx.clock())

    def archived_events(self, workspace: str, ids: Sequence[str]) -> list[ArchivedEvent]:
        """Journal rows compaction moved to the archive (payload cut to 400 characters)."""
        return self.ctx.store.archived_events(workspace, ids)

    def health_snapshot(self, *, workspace: str | None = None) -> list[JobResult]:
        """Compute and store today's health snapshot of each workspace and its crews."""
        store = self.ctx.store

        def work(ws: str) -> Callable[[], Mapping[str, Any]]:
            now = self.ctx.clock()
            return lambda: {
                "snapshots": [snapshot_json(s) for s in snapshot_workspace(store, ws, now)]
            }

        return [self._exclusive(health_job.JOB, ws, work(ws)) for ws in self._workspaces(workspace)]

    def memory_health(
        self, workspace: str, crew: str | None = None, *, history: int = 30
    ) -> HealthView | None:
        """The latest health snapshot of a workspace (or one crew in it) and up to
        ``history`` older ones, newest first; None before the first snapshot."""
        return health_view(self.ctx.store, workspace, crew, history=history)

    def memory_nudge(self, workspace: str, agent: str, session_id: str) -> str | None:
        """The memory reminder for this turn of the agent's session (seed 000: 60 new
        journal entries since its last ``memory.updated``; once per session), or None."""
        return memory_nudge(self.ctx.store, workspace, agent, session_id, self.ctx.clock())

    # -- the schedule ----------------------------------------------------------------
    def scheduler(self, *, tick_s: float = TICK_S) -> UpkeepScheduler:
        """The upkeep schedule over this memory (one per ``Episodic``; ``close()`` stops
        it); ``start()`` runs it in a background thread."""
        if self._scheduler is None:
            self._scheduler = UpkeepScheduler(
                self,
                store=self.ctx.store,
                settings=self.ctx.settings,
                clock=self.ctx.clock,
                tick_s=tick_s,
            )
        return self._scheduler

    def stop(self) -> None:
        if self._scheduler is not None:
            self._scheduler.stop()
            self._scheduler = None
