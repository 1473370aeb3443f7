"""Upkeep: the ``consolidate``, ``memory`` (health) and ``upkeep`` groups, each command
one job run now (for cron), or the whole schedule."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from episodic.cli.common import (
    ConversationOpt,
    JsonOpt,
    err,
    errors,
    open_memory,
    out,
    plural,
    print_json,
)
from episodic.errors import InvalidInput

if TYPE_CHECKING:  # numpy and the job runner load with the command that uses them
    from episodic.upkeep.lease import JobResult

consolidate_app = typer.Typer(
    help=(
        "Derive rules and facts from clusters of related memories.\n\n"
        "Example: episodic consolidate run --workspace acme"
    ),
    no_args_is_help=True,
)
memory_app = typer.Typer(
    help=("Inspect the memory's state.\n\nExample: episodic memory health --workspace acme"),
    no_args_is_help=True,
)
upkeep_app = typer.Typer(
    help=(
        "Run one upkeep job now (for cron), or the whole schedule.\n\n"
        "Example: episodic upkeep decay && episodic upkeep health --workspace acme"
    ),
    no_args_is_help=True,
)

OptionalWorkspaceOpt = Annotated[
    str | None, typer.Option("--workspace", "-w", help="One workspace (default: all).")
]


def _print_jobs(results: list[JobResult], as_json: bool) -> None:
    if as_json:
        print_json([r.to_json() for r in results])
        return
    if not results:
        out.print("no workspace holds memories yet: nothing to do")
    for r in results:
        colour = {"ok": "green", "skipped": "yellow"}.get(r.status, "red")
        detail = ", ".join(f"{k} {_short(v)}" for k, v in r.detail.items() if k != "snapshots")
        where = r.scope or "all workspaces"
        out.print(
            f"[{colour}]{r.status:7}[/] {r.job} on {escape(where)} in {r.seconds:.2f}s"
            + (f": {escape(detail)}" if detail else "")
        )


def _short(value: Any) -> str:
    if isinstance(value, list | tuple):
        return str(len(value))
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items())
    return str(value)


@consolidate_app.command("run")
def consolidate_run(
    ctx: typer.Context, workspace: OptionalWorkspaceOpt = None, as_json: JsonOpt = False
) -> None:
    """Consolidate now: rules and facts from clusters of related memories, each backed by
    at least two of them (an LLM when EPISODIC_LLM_URL is set, else an offline summary),
    then refresh each workspace's health snapshot (see `episodic memory health`).

    Example: episodic consolidate run --workspace acme --json
    """
    with errors(), open_memory(ctx) as mem:
        _print_jobs(mem.consolidate(workspace=workspace), as_json)


@memory_app.command("health")
def memory_health(
    ctx: typer.Context,
    workspace: Annotated[str, typer.Option("--workspace", "-w", help="Workspace id.")],
    crew: Annotated[str | None, typer.Option("--crew", help="One crew's snapshot.")] = None,
    history: Annotated[
        int, typer.Option("--history", help="How many older snapshots to show.")
    ] = 30,
    as_json: JsonOpt = False,
) -> None:
    """The latest health snapshot (score, band, five metrics) and its trend.

    Snapshots are taken daily by the scheduler, and by `episodic consolidate run` or
    `episodic upkeep health`.
    Example: episodic memory health --workspace acme --crew platform
    """
    with errors(), open_memory(ctx) as mem:
        view = mem.memory_health(workspace, crew, history=history)
    if as_json:
        print_json(None if view is None else view.to_json())
        if view is None:
            raise typer.Exit(1)
        return
    if view is None:
        err.print(
            f"no health snapshot yet for {escape(workspace)}"
            + (f" crew {escape(crew)}" if crew else "")
            + f"; run `episodic upkeep health --workspace {escape(workspace)}`"
        )
        raise typer.Exit(1)
    colour = {"red": "red", "yellow": "yellow", "green": "green"}[view.band]
    who = f"{view.workspace_id}" + (f" crew {view.crew_id}" if view.crew_id else "")
    out.print(
        f"[bold]{escape(who)}[/bold] {view.snapshot_date}: score [{colour}]{view.score:.1f} "
        f"{view.band}[/]"
    )
    out.print(
        "  "
        + "  ".join(
            f"{name} {getattr(view, name):.1f}"
            for name in ("freshness", "coverage", "coherence", "efficiency", "reachability")
        )
    )
    from episodic.scoring.health import sparkline

    trend = view.trend()
    out.print(
        f"  trend, {len(trend)} snapshot(s) oldest to newest: {sparkline(trend)} "
        f"({min(trend):.0f}-{max(trend):.0f})"
    )


@upkeep_app.command("decay")
def upkeep_decay(
    ctx: typer.Context,
    workspace: OptionalWorkspaceOpt = None,
    formula: Annotated[
        str | None,
        typer.Option("--formula", help="crewship | prominence (default EPISODIC_DECAY_FORMULA)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Recompute every active memory's importance from base importance, age and
    references (the nightly job).

    Example: episodic upkeep decay --formula prominence
    """
    with errors(), open_memory(ctx) as mem:
        _print_jobs([mem.decay(workspace=workspace, formula=formula)], as_json)


@upkeep_app.command("reviews")
def upkeep_reviews(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Rate pending reviews by the conversation messages that followed each recall and
    update FSRS stability; expire the ones no output followed within a day.

    Example: episodic upkeep reviews --json
    """
    with errors(), open_memory(ctx) as mem:
        _print_jobs([mem.run_reviews()], as_json)


@upkeep_app.command("review")
def upkeep_review(
    ctx: typer.Context,
    output: Annotated[str, typer.Argument(help="File with the agent's output, or - for stdin.")],
    workspace: Annotated[str, typer.Option("--workspace", "-w", help="Workspace id.")],
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent's recalls.")] = None,
    conversation: ConversationOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Rate the workspace's pending reviews by an agent's output (what it said after
    recalling) and update each recalled memory's FSRS state.

    Example: echo "rolled back the cache TTL" | episodic upkeep review - --workspace acme
    """
    with errors(), open_memory(ctx) as mem:
        if output == "-":
            text = sys.stdin.read()
        else:
            path = Path(output)
            if not path.is_file():
                raise InvalidInput("OUTPUT", f"no such file: {output}")
            text = path.read_text(encoding="utf-8")
        report = mem.review(workspace, text, agent=agent, conversation=conversation)
    if as_json:
        print_json(report.to_json())
        return
    body = report.to_json()
    ratings = ", ".join(f"{k} {v}" for k, v in body["ratings"].items())
    out.print(
        f"rated {plural(report.reviews, 'recall')}, "
        f"{plural(report.memories, 'memory', 'memories')} updated ({ratings}); "
        f"{report.skipped} reviewed less than a day ago; by {', '.join(body['rated_by']) or '-'}"
    )


@upkeep_app.command("compact")
def upkeep_compact(
    ctx: typer.Context, workspace: OptionalWorkspaceOpt = None, as_json: JsonOpt = False
) -> None:
    """Archive aged journal rows (payload cut to 400 characters) and merge near-duplicate
    memories (Jaccard > 0.8); nothing is deleted.

    Example: episodic upkeep compact --workspace acme
    """
    with errors(), open_memory(ctx) as mem:
        _print_jobs(mem.compact(workspace=workspace), as_json)


@upkeep_app.command("health")
def upkeep_health(
    ctx: typer.Context, workspace: OptionalWorkspaceOpt = None, as_json: JsonOpt = False
) -> None:
    """Compute and store today's health snapshot of each workspace and its crews.

    Example: episodic upkeep health --workspace acme
    """
    with errors(), open_memory(ctx) as mem:
        _print_jobs(mem.health_snapshot(workspace=workspace), as_json)


@upkeep_app.command("retire")
def upkeep_retire(
    ctx: typer.Context,
    workspace: Annotated[str, typer.Option("--workspace", "-w", help="Workspace id.")],
    phase: Annotated[str, typer.Option("--phase", help="The phase (stage) that ended.")],
    as_json: JsonOpt = False,
) -> None:
    """Retire the task memories (payload domain "task") of a finished phase: they stay
    stored and inspectable, out of every recall.

    Example: episodic upkeep retire --workspace acme --phase design
    """
    with errors(), open_memory(ctx) as mem:
        retired = mem.retire_phase(workspace, phase)
    if as_json:
        print_json({"workspace": workspace, "phase": phase, "retired": retired})
    else:
        retired_n = plural(len(retired), "task memory", "task memories")
        out.print(f"retired {retired_n} of phase {escape(phase)}")


@upkeep_app.command("run-scheduler")
def upkeep_run_scheduler(
    ctx: typer.Context,
    tick: Annotated[
        float, typer.Option("--tick", help="Seconds between checks for due jobs.")
    ] = 60.0,
    once: Annotated[bool, typer.Option("--once", help="Run what is due now, then exit.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Run the upkeep schedule in the foreground: nightly decay, reviews every few
    minutes, daily compaction, consolidation and health (times from EPISODIC_DECAY_AT,
    EPISODIC_DAILY_AT, EPISODIC_REVIEW_INTERVAL). Ctrl-C stops it.

    Example: EPISODIC_DAILY_AT=05:30 episodic upkeep run-scheduler
    """
    if tick <= 0:
        err.print("error: --tick must be a positive number of seconds")
        raise typer.Exit(2)
    with errors(), open_memory(ctx) as mem:
        scheduler = mem.scheduler(tick_s=tick)
        if once:
            _print_jobs(scheduler.run_pending(), as_json)
            return
        s = mem.settings
        out.print(
            f"upkeep running: decay at {s.decay_at} UTC, reviews every "
            f"{s.review_interval_s:g}s, daily jobs at {s.daily_at} UTC; Ctrl-C to stop"
        )
        from contextlib import suppress

        with suppress(KeyboardInterrupt):
            scheduler.run()
