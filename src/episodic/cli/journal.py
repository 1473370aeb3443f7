"""``episodic journal``: keyword search of the journal itself, every event whether or not
it became a memory (output chunks, info-level decisions), archived ones included."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

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
    table = Table(title=plural(len(hits), "journal event"))
    table.add_column("#", overflow="fold")
    # The id whole, never folded: it is what `forget --memory` and `memory history` take.
    table.add_column("id", no_wrap=True, min_width=max(len(h.id) for h in hits))
    table.add_column("ts", overflow="fold")
    # The type whole too: it is what `--type` takes.
    table.add_column("type", no_wrap=True, min_width=max(len(h.type) for h in hits))
    for column in ("severity", "agent"):
        table.add_column(column, overflow="fold")
    # Wide enough that a word (and the "(archived)" mark) wraps whole at 80 columns.
    table.add_column("summary", overflow="fold", min_width=12)
    for i, hit in enumerate(hits, start=1):
        # Text, not markup: ids and summaries are whatever an agent wrote.
        summary = Text(hit.summary + (" (archived)" if hit.archived else ""))
        table.add_row(
            str(i),
            Text(hit.id),
            hit.ts.isoformat(timespec="seconds"),
            Text(hit.type),
            hit.severity,
            Text(hit.agent_id or "-"),
            summary,
        )
    out.print(table)
