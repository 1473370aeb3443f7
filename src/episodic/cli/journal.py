"""``episodic journal``: keyword search of the journal itself, every event whether or not
it became a memory (output chunks, info-level decisions), archived ones included."""

from __future__ import annotations

from typing import Annotated

import typer

from episodic.cli.common import JsonOpt, errors, open_memory, out, plural, print_json
from episodic.store.journal import DEFAULT_JOURNAL_HITS, MAX_JOURNAL_HITS


def journal(
    ctx: typer.Context,
    query: Annotated[
        str, typer.Argument(help="Words to look for in the events' summaries and payloads.")
    ],
    workspace: Annotated[str, typer.Option("--workspace", "-w", help="Workspace to search.")],
    types: Annotated[
        list[str] | None,
        typer.Option(
            "--type", help="Only events of this type (repeatable), e.g. exec.output_chunk."
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", help="Only events at or after this ISO 8601 time."),
    ] = None,
    k: Annotated[
        int, typer.Option("-k", help=f"How many events (1-{MAX_JOURNAL_HITS}).")
    ] = DEFAULT_JOURNAL_HITS,
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent's events.")] = None,
    crew: Annotated[str | None, typer.Option("--crew", help="Only this crew's events.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Search the journal's events by keyword, best match first: every event, admitted
    as a memory or not, archived ones too (marked). Use `recall` for memories.

    Example: episodic journal "segfault libfoo" --workspace acme --type exec.output_chunk
    Example: episodic journal "deploy denied" -w acme --since 2026-11-01 -k 5 --json
    """
    with errors(), open_memory(ctx) as mem:
        hits = mem.search_journal(
            query, workspace=workspace, types=types, since=since, k=k, agent=agent, crew=crew
        )
    if as_json:
        print_json([h.to_json() for h in hits])
        return
    if not hits:
        out.print("no journal events match")
        return
    # Each event as a heading line (its id and type whole: `memory history` and `--type`
    # take them; time, severity, agent) over its summary at the terminal's full width: a
    # table of seven columns folds the time, the agent and the summary at 80 columns.
    out.print(f"[bold]{plural(len(hits), 'journal event')}[/bold]")
    for i, hit in enumerate(hits, start=1):
        # Not markup: ids and summaries are whatever an agent wrote.
        out.print(
            f"\n{i}. {hit.id}  {hit.ts.isoformat(timespec='seconds')} · {hit.type} · "
            f"{hit.severity} · agent {hit.agent_id or '-'}",
            markup=False,
        )
        out.print(f"   {hit.summary}" + (" (archived)" if hit.archived else ""), markup=False)
