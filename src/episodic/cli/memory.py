"""The memory data commands: ``ingest`` journal events, ``index`` them (vectors and
episodes), list the ``recent`` episodes, ``reindex``, ``recall`` and ``render`` what
matters for a query, and ``forget`` for good.

``episodic memory health`` is an upkeep command: see ``episodic.cli.upkeep``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO

import typer
from rich.markup import escape

from episodic.cli.basics import warn_if_unknown
from episodic.cli.common import (
    ConversationOpt,
    JsonOpt,
    database,
    err,
    errors,
    open_memory,
    out,
    plural,
    print_json,
)
from episodic.cli.mode_notice import repeats_mode_line
from episodic.cli.portability import LayoutOpt, import_dir
from episodic.cli.recalling import recall_command, render_command
from episodic.errors import InvalidInput
from episodic.recall.policies import POLICIES

# Only for annotations: the command that needs one of these imports it when it runs, so
# `episodic --help` and the other commands do not load the recall engine or the service.
if TYPE_CHECKING:
    from episodic.service import Episodic
    from episodic.write.events import LineError

# Progress is shown for inputs larger than this (bytes); small files finish before it helps.
PROGRESS_MIN_BYTES = 1_000_000

WorkspaceOpt = Annotated[str, typer.Option("--workspace", "-w", help="Workspace to search.")]
AgentOpt = Annotated[
    str | None,
    typer.Option(
        "--agent", help="Who is asking: weighs their team's memories; --scope own: only theirs."
    ),
]
CrewOpt = Annotated[
    str | None,
    typer.Option(
        "--crew", help="The asker's crew: weighs it; --scope crew_shared: only what it shares."
    ),
]
ResourceOpt = Annotated[str | None, typer.Option("--resource", help="Narrow to one resource.")]
DetailOpt = Annotated[
    str | None,
    typer.Option(
        "--detail",
        help="Which episodes show their messages: none, auto (key moments ranked 1-2), full.",
    ),
]
ScopeOpt = Annotated[
    str | None,
    typer.Option("--scope", help="own | crew_shared; omitted = the whole workspace."),
]
KOpt = Annotated[int | None, typer.Option("-k", help="How many memories (1-50, default 5).")]
TypeOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--type",
        help="Only memories of this type (repeatable): message, episode, entry, learning, "
        "...; or only learnings of a learning type: declarative, procedural, directive, "
        "corrective.",
    ),
]
PolicyOpt = Annotated[
    str | None,
    typer.Option("--policy", help=f"Recall policy: {', '.join(POLICIES)} (default: default)."),
]
MarkOpt = Annotated[
    bool,
    typer.Option(
        "--mark/--no-mark",
        help="Count the memories recalled as referenced, which raises their importance "
        "(as every interface does by default); --no-mark only looks.",
    ),
]
AsOfOpt = Annotated[
    str | None,
    typer.Option("--as-of", help="An ISO 8601 time: answer as memory stood then."),
]
SupersededOpt = Annotated[
    bool,
    typer.Option("--include-superseded", help="Also show memories a newer one replaced."),
]
ExplainOpt = Annotated[
    bool, typer.Option("--explain", help="Show every stage's candidates and what was dropped why.")
]


def ingest(
    ctx: typer.Context,
    file: Annotated[str, typer.Argument(help="JSON-lines file of events, or - for stdin.")],
    as_json: JsonOpt = False,
) -> None:
    """Store journal events, one JSON object per line.

    Bad lines are reported by number and skipped; the rest are stored. Exit status is 1
    when any line was rejected.

    Example: episodic ingest journal.jsonl
    """
    from episodic.service.writing import deprecation_note

    with errors(), open_memory(ctx) as mem:
        if file == "-":
            report = mem.ingest_lines(sys.stdin.buffer)
        else:
            path = Path(file)
            if not path.is_file():
                raise InvalidInput("FILE", f"no such file: {file}")
            with path.open("rb") as fh:
                report = _ingest_with_progress(mem, fh, path.stat().st_size)
    if as_json:
        print_json(report.to_json())
    else:
        out.print(
            f"stored {plural(report.stored, 'event')} ({report.admitted} admitted as "
            f"{'memory' if report.admitted == 1 else 'memories'}, {report.duplicates} already "
            "present)"
        )
        for c in report.not_admitted_by_reason:
            fix = f": {c.fix}" if c.fix else ""
            out.print(
                escape(
                    f"{plural(c.count, 'event')} not kept as "
                    f"{'a memory' if c.count == 1 else 'memories'} ({c.rule}: {c.reason}){fix}"
                )
            )
        for e in report.errors:
            # Escaped: a message quotes the line's own value, which may hold brackets.
            err.print(f"rejected {escape(str(e))}")
        if report.deprecated_fields:
            err.print(deprecation_note(report.deprecated_fields))
        if report.errors:
            rest = "; the others were stored" if report.received > len(report.errors) else ""
            err.print(f"{plural(len(report.errors), 'line')} rejected{rest}")
            shape = _shape_hint(report.errors)
            if shape:
                err.print(escape(shape))
    if report.errors:
        raise typer.Exit(1)


def _shape_hint(rejected: Sequence[LineError]) -> str | None:
    """How to send events when the rejections look like JSON of another shape than one
    object per line: an array of events, or objects spread over several lines."""
    if any(e.field == "event" and e.message.endswith("got list") for e in rejected):
        return (
            "ingest reads one JSON object per line (JSON Lines), not an array: "
            "`jq -c '.[]' FILE | episodic ingest -` turns an array into lines"
        )
    if sum(e.field == "json" for e in rejected) >= 2:
        return (
            "each line must hold one whole JSON object (JSON Lines); if the file holds "
            "pretty-printed JSON, `jq -c . FILE | episodic ingest -` puts each on one line"
        )
    return None


def _ingest_with_progress(mem: Episodic, fh: BinaryIO, size: int) -> Any:
    if size < PROGRESS_MIN_BYTES or not err.is_terminal:
        return mem.ingest_lines(fh)
    from rich.progress import BarColumn, Progress, TextColumn, TransferSpeedColumn

    with Progress(
        TextColumn("ingesting"), BarColumn(), TransferSpeedColumn(), console=err, transient=True
    ) as bar:
        task = bar.add_task("ingest", total=size)

        def counted() -> Iterator[bytes]:
            for line in fh:
                bar.advance(task, len(line))
                yield line

        return mem.ingest_lines(counted())


def index(
    ctx: typer.Context,
    once: Annotated[
        bool, typer.Option("--once", help="Embed and segment what is pending, then exit.")
    ] = False,
    flush: Annotated[
        bool,
        typer.Option(
            "--flush", help="Close every open conversation segment (end of session); with --once."
        ),
    ] = False,
    memory_id: Annotated[
        str | None,
        typer.Option(
            "--id",
            help="Embed this one memory now (with --workspace), then exit; the start of its "
            "id is enough when it names it alone.",
            metavar="ID",
        ),
    ] = None,
    workspace: Annotated[
        str | None, typer.Option("--workspace", "-w", help="The workspace of --id.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Embed memories that have no vector yet and turn conversations into episodes
    (runs the sweeper; Ctrl-C stops it). With --id, embed that one memory now.

    Example: episodic index --once --flush
    Example: episodic index --id evt_42 --workspace acme
    """
    if flush and not once:
        err.print("--flush closes the open segments once; use it with --once")
        raise typer.Exit(2)
    if memory_id is not None:
        if workspace is None or once:
            err.print("--id embeds one memory: give its --workspace, and no --once")
            raise typer.Exit(2)
        from episodic.cli import ids
        from episodic.model import ScopeFilter

        with errors(), open_memory(ctx) as mem:
            memory_id = ids.memory_id(mem, workspace, memory_id)
            done = mem.index_one_in(ScopeFilter(workspace), memory_id)
        if as_json:
            print_json(done.to_json())
        elif done.indexed:
            out.print(f"{memory_id}: {done.detail}")
        if not done.indexed:
            if not as_json:
                err.print(f"[yellow]warning:[/yellow] {memory_id} not embedded: {done.detail}")
            raise typer.Exit(1)
        return
    if workspace is not None:
        err.print("--workspace goes with --id (the sweeper embeds every workspace)")
        raise typer.Exit(2)
    with errors(), open_memory(ctx) as mem:
        if once:
            result = mem.index_once()
            report = mem.segment(flush=flush)
            if as_json:
                print_json(
                    {
                        "embedded": result.embedded,
                        "failed": result.failed,
                        "error": result.error,
                        "segmentation": report.to_json(),
                    }
                )
            else:
                out.print(f"embedded {plural(result.embedded, 'memory', 'memories')}")
                if report.conversations:
                    out.print(
                        f"{plural(report.episodes, 'episode')} from "
                        f"{plural(report.messages, 'message')} in "
                        f"{plural(report.conversations, 'conversation')}; "
                        f"{plural(report.entries, 'entry', 'entries')}, "
                        f"{plural(report.learnings, 'learning')}; "
                        f"{plural(report.waiting, 'message')} wait for more"
                    )
                if result.error and not repeats_mode_line(result.error):
                    err.print(f"[yellow]warning:[/yellow] {result.error}")
                if report.unembedded:
                    err.print(
                        f"[yellow]warning:[/yellow] the embedder failed on {report.unembedded} "
                        "new episodes, entries or learnings: they are found by keywords now "
                        "and by meaning after the next `episodic index`"
                    )
            if result.failed:
                raise typer.Exit(1)
            return
        if not mem.start_indexer():
            err.print("sparse-only: nothing to embed; see `episodic doctor`")
            raise typer.Exit(1)
        out.print(f"indexer running every {mem.settings.sweep_interval_s:g}s; Ctrl-C to stop")
        try:
            import threading

            threading.Event().wait()
        except KeyboardInterrupt:
            pass


def recent(
    ctx: typer.Context,
    workspace: Annotated[str, typer.Option("--workspace", "-w", help="Workspace id.")],
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent's.")] = None,
    resource: Annotated[
        str | None, typer.Option("--resource", help="Only this resource's.")
    ] = None,
    conversation: Annotated[
        str | None, typer.Option("--conversation", help="Only this conversation's.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many episodes.")] = 10,
    as_json: JsonOpt = False,
) -> None:
    """List the newest episodes, newest first.

    Example: episodic recent --workspace acme --conversation chat-42 --json
    """
    from episodic.write.episodes import episode_json

    with errors(), open_memory(ctx) as mem:
        episodes = mem.recent(
            workspace=workspace,
            agent=agent,
            resource=resource,
            conversation=conversation,
            limit=limit,
        )
        rows = [episode_json(m) for m in episodes]
        if as_json:
            print_json(rows)
            return
        if not rows:
            out.print("no episodes yet (run `episodic index --once --flush` after a session)")
            return
        for row in rows:
            mark = " [bold magenta]key moment[/bold magenta]" if row["key_moment"] else ""
            # The id whole: `memory history`, `memory why` and `forget --memory` take it.
            out.print(
                f"[bold]{escape(row['title'])}[/bold]{mark}\n"
                f"  {escape(row['id'])} · {row['start']} .. {row['end']} · "
                f"{plural(row['message_count'], 'message')} · "
                f"surprise {row['surprise']:.2f}\n  {escape(row['summary'])}"
            )


def reindex(
    ctx: typer.Context,
    from_dir: Annotated[
        Path | None,
        typer.Option(
            "--from",
            help="Rebuild the memories from this markdown folder (`episodic export`) instead: "
            "changed files are re-read, memories no file holds are removed, and only new "
            "text is embedded (the embedding cache answers for the rest).",
        ),
    ] = None,
    layout: LayoutOpt = "plain",
    workspace: Annotated[
        str | None,
        typer.Option("--workspace", "-w", help="With --layout teaparty: the tree's workspace."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Drop every vector and embed all memories again with the current embedder.

    Needed after changing EPISODIC_EMBEDDER or the model. With --from, rebuild from
    markdown instead; --layout teaparty reads seed 001's tree into --workspace (entries
    deleted from it are forgotten).
    Example: EPISODIC_EMBEDDER=ollama episodic reindex
    Example: episodic reindex --from ./memory-export
    Example: episodic reindex --from ~/teaparty --layout teaparty --workspace acme
    """
    if from_dir is not None:
        import_dir(ctx, from_dir, mirror=True, as_json=as_json, layout=layout, workspace=workspace)
        return
    if layout != "plain" or workspace is not None:
        with errors():
            raise InvalidInput("layout", "--layout and --workspace go with --from DIR")
    with errors(), open_memory(ctx) as mem:
        result = mem.reindex()
        model = mem.embedder.model_id if mem.embedder else "?"
        out.print(f"re-embedded {plural(result.embedded, 'memory', 'memories')} with {model}")
        if result.error:
            err.print(
                f"[yellow]warning:[/yellow] {result.error}; run `episodic index --once` later"
            )
            raise typer.Exit(1)


def recall(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What the agent is about to do or asks about.")],
    workspace: WorkspaceOpt,
    agent: AgentOpt = None,
    crew: CrewOpt = None,
    resource: ResourceOpt = None,
    scope: ScopeOpt = None,
    k: KOpt = None,
    policy: PolicyOpt = None,
    explain: ExplainOpt = False,
    types: TypeOpt = None,
    conversation: ConversationOpt = None,
    detail: DetailOpt = None,
    mark: MarkOpt = True,
    as_of: AsOfOpt = None,
    include_superseded: SupersededOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """The past memories that matter for QUERY, best first.

    With EPISODIC_URL set (and EPISODIC_KEY), asks that server instead of opening the
    database and the model: an agent's hook answers in a fraction of the time.
    Example: episodic recall "OOM in checkout" --workspace acme-shop --agent deployer --scope own
    """
    recall_command(
        lambda: database(ctx),
        query,
        {
            "workspace": workspace,
            "agent": agent,
            "crew": crew,
            "resource": resource,
            "scope": scope,
            "k": k,
            "policy": policy,
            "explain": explain,
            "types": types,
            "conversation": conversation,
            "detail": detail,
            "mark": mark,
            "as_of": as_of,
            "include_superseded": include_superseded,
        },
        as_json,
    )


def render(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What the agent is about to do or asks about.")],
    workspace: WorkspaceOpt,
    agent: AgentOpt = None,
    crew: CrewOpt = None,
    resource: ResourceOpt = None,
    scope: ScopeOpt = None,
    k: KOpt = None,
    policy: PolicyOpt = None,
    max_chars: Annotated[
        int | None, typer.Option("--max-chars", help="Character budget (default 2000).")
    ] = None,
    explain: ExplainOpt = False,
    types: TypeOpt = None,
    conversation: ConversationOpt = None,
    detail: DetailOpt = None,
    mark: MarkOpt = True,
    as_of: AsOfOpt = None,
    include_superseded: SupersededOpt = False,
) -> None:
    """The prompt-ready <recalled-memory> block for QUERY (prints nothing if none).

    When nothing is recalled, stdout stays empty (a hook injects nothing); at a terminal
    a line on stderr says so.

    With EPISODIC_URL set (and EPISODIC_KEY), asks that server instead of opening the
    database and the model: an agent's hook answers in a fraction of the time.
    Example: episodic render "deploy checkout to production" --workspace acme-shop --max-chars 1200
    """
    render_command(
        lambda: database(ctx),
        query,
        {
            "workspace": workspace,
            "agent": agent,
            "crew": crew,
            "resource": resource,
            "scope": scope,
            "k": k,
            "policy": policy,
            "max_chars": max_chars,
            "explain": explain,
            "types": types,
            "conversation": conversation,
            "detail": detail,
            "mark": mark,
            "as_of": as_of,
            "include_superseded": include_superseded,
        },
    )


def forget(
    ctx: typer.Context,
    workspace: Annotated[str, typer.Option("--workspace", "-w", help="Workspace to forget in.")],
    agent: Annotated[str | None, typer.Option("--agent", help="Everything of this agent.")] = None,
    resource: Annotated[
        str | None, typer.Option("--resource", help="Everything about this resource.")
    ] = None,
    conversation: Annotated[
        str | None, typer.Option("--conversation", help="This whole conversation.")
    ] = None,
    memory: Annotated[
        str | None,
        typer.Option("--memory", help="One memory by id (or enough of its start to name it)."),
    ] = None,
    older_than: Annotated[
        float | None,
        typer.Option("--older-than", help="Only what is older than this many days (retention)."),
    ] = None,
    yes: Annotated[
        bool, typer.Option("--yes", help="Do not ask before forgetting a whole workspace.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Remove data for good: memories, events, search rows, vectors, edges, archive,
    cached embeddings only it used, import records, and what was derived from it.

    Filters combine; with none, the whole workspace is forgotten (asks first).
    Example: episodic forget --workspace acme --agent deployer
    Example: episodic forget --workspace acme --older-than 365
    """
    whole = all(v is None for v in (agent, resource, conversation, memory, older_than))
    if (
        whole
        and not yes
        and not typer.confirm(
            f"forget everything in workspace {workspace!r}?", default=False, err=True
        )
    ):
        err.print("nothing forgotten")
        raise typer.Exit(1)
    with errors(), open_memory(ctx) as mem:
        if memory is not None:
            from episodic.cli import ids

            # A start naming nothing is left as given: forget then says nothing matched.
            memory = ids.maybe_memory_id(mem, workspace, memory, field="memory")
        counts = mem.forget(
            workspace=workspace,
            agent=agent,
            resource=resource,
            conversation=conversation,
            memory=memory,
            older_than_days=older_than,
            all=whole,
        )
        matched = bool(counts.memories or counts.events)
        if not matched:
            warn_if_unknown(mem, workspace)
    if as_json:
        print_json(counts.to_json())
    else:
        out.print(
            f"forgot {plural(counts.memories, 'memory', 'memories')} and "
            f"{plural(counts.events, 'event')} ({plural(counts.vectors, 'vector')}, "
            f"{plural(counts.relations, 'edge')}, {counts.archived} archived, "
            f"{plural(counts.embedding_cache, 'cached embedding')})"
        )
    if not matched:
        err.print("nothing matched: nothing was forgotten")
        raise typer.Exit(1)
