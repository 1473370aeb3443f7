"""Single memories from the shell: ``episodic memory remember TEXT`` (a note now, which
may replace an older one), ``episodic memory list`` (what is stored, newest first, by
status: active, superseded, retired, compacted) and ``episodic memory show ID`` (one
memory whole). Commands of the ``memory`` group, registered in ``episodic.cli``."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from episodic.cli import ids
from episodic.cli.basics import listed, warn_if_unknown
from episodic.cli.common import (
    ConversationOpt,
    JsonOpt,
    errors,
    open_memory,
    out,
    plural,
    print_json,
)
from episodic.model import Memory, ScopeFilter
from episodic.service.pages import MAX_PAGE, REMEMBER_TYPE, SOURCES, memory_json

WorkspaceOpt = Annotated[str, typer.Option("--workspace", "-w", help="Its workspace.")]
AgentOpt = Annotated[str | None, typer.Option("--agent", help="The agent it belongs to.")]
CrewOpt = Annotated[str | None, typer.Option("--crew", help="The crew it belongs to.")]
ResourceOpt = Annotated[
    str | None, typer.Option("--resource", help="The user or case it is about.")
]


def remember(
    ctx: typer.Context,
    content: Annotated[str, typer.Argument(help="What to remember.")],
    workspace: WorkspaceOpt,
    agent: AgentOpt = None,
    crew: CrewOpt = None,
    resource: ResourceOpt = None,
    conversation: ConversationOpt = None,
    type: Annotated[str, typer.Option("--type", help="Its type.")] = REMEMBER_TYPE,
    importance: Annotated[
        float | None, typer.Option("--importance", help="How much it matters, 0-1.")
    ] = None,
    source: Annotated[
        str | None, typer.Option("--source", help=f"Provenance: {', '.join(SOURCES)}.")
    ] = None,
    evidence: Annotated[
        str | None, typer.Option("--evidence", help="The exact words it rests on.")
    ] = None,
    replaces: Annotated[
        str | None,
        typer.Option(
            "--replaces", help="The id (or its start) of a memory this one makes outdated."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Remember one note now; --replaces keeps an older one as superseded.

    Example: episodic memory remember "pay subscriptions with card B" -w acme --replaces evt_1
    """
    with errors(), open_memory(ctx) as mem:
        if replaces is not None:
            replaces = ids.memory_id(mem, workspace, replaces, field="replaces")
        memory = mem.remember(
            content,
            workspace=workspace,
            agent=agent,
            crew=crew,
            resource=resource,
            conversation=conversation,
            type=type,
            importance=importance,
            source=source,
            evidence=evidence,
            replaces=replaces,
        )
        # What the supersession rule replaced on its own: hidden from recall, so said.
        on_its_own = (
            []
            if as_json or replaces
            else [
                d
                for d in mem.decisions(memory.id, workspace=workspace)
                if d.kind == "supersedes" and not d.reverted
            ]
        )
    if as_json:
        print_json(memory_json(memory))
        return
    replaced = f" (replaces {escape(replaces)})" if replaces else ""
    out.print(f"{memory.id}: {escape(memory.content)}{replaced}")
    for d in on_its_own:
        out.print(
            f"  replaces {escape(d.other or '?')} ({escape(d.decided_by)}: {escape(d.reason)}); "
            "it stays stored, out of recall: "
            f"`episodic memory restore {escape(d.other or '?')} -w {escape(workspace)}` undoes it"
        )


def list_memories(
    ctx: typer.Context,
    workspace: WorkspaceOpt,
    agent: AgentOpt = None,
    crew: CrewOpt = None,
    resource: ResourceOpt = None,
    conversation: ConversationOpt = None,
    types: Annotated[
        list[str] | None, typer.Option("--type", help="Only this type (repeatable).")
    ] = None,
    status: Annotated[
        str | None,
        typer.Option("--status", help="Only this status: active, superseded, retired, compacted."),
    ] = None,
    text: Annotated[
        str | None, typer.Option("--text", "-q", help="Only those holding every word of it.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help=f"How many (1-{MAX_PAGE}).")] = 50,
    cursor: Annotated[
        str | None, typer.Option("--cursor", help="Where the last page ended (next_cursor).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """The memories stored, newest first, with filters and pages.

    Example: episodic memory list -w acme --status superseded --json
    """
    flt = ScopeFilter(
        workspace_id=workspace,
        agent_id=agent,
        crew_id=crew,
        resource_id=resource,
        conversation_id=conversation,
        types=tuple(types) if types else None,
    )
    with errors(), open_memory(ctx) as mem:
        page = mem.list_memories(flt, status=status, limit=limit, cursor=cursor, q=text)
        if not page.items:
            warn_if_unknown(mem, workspace)
    if as_json:
        print_json({"items": [memory_json(m) for m in page.items], "next_cursor": page.next_cursor})
        return
    if not page.items:
        out.print("no memories")
        return
    # Each memory as a heading line (its id whole, as `memory update`, `history` and
    # `forget --memory` take it; time, type, status, agent) over its text at the terminal's
    # full width: in a table, an id of 36 characters leaves the text a few letters a line
    # at 80 columns.
    out.print(f"[bold]{plural(len(page.items), 'memory', 'memories')}[/bold], newest first")
    for m in page.items:
        out.print(
            f"\n[bold]{escape(m.id)}[/bold]  {m.ts:%Y-%m-%d %H:%M} · {escape(m.type)} · "
            f"{_status(m)} · agent {escape(m.agent or '-')}"
        )
        out.print(f"   {listed(m.content, m.id, m.workspace)}", markup=False)
    if page.next_cursor:
        out.print(f"more: --cursor {page.next_cursor}", markup=False)


def show(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(help=ids.MEMORY_ID_HELP)],
    workspace: WorkspaceOpt,
    as_json: JsonOpt = False,
) -> None:
    """One memory whole: its id, time, type, status, agent, importance and text.

    Example: episodic memory show evt_3f9a -w acme
    """
    with errors(), open_memory(ctx) as mem:
        memory = mem.memory(ScopeFilter(workspace), ids.memory_id(mem, workspace, memory_id))
    if as_json:
        print_json(memory_json(memory))
        return
    out.print(
        f"[bold]{escape(memory.id)}[/bold]  {memory.ts:%Y-%m-%d %H:%M} · "
        f"{escape(memory.type)} · {_status(memory)} · agent {escape(memory.agent or '-')} · "
        f"importance {memory.importance:.2f}"
    )
    out.print(memory.content, markup=False)


def _status(m: Memory) -> str:
    if m.superseded_by is None:
        return m.status.value
    return escape(f"{m.status.value} by {m.superseded_by}")
