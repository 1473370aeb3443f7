"""The ``episodic`` command: a thin shell over ``Episodic``.

Each command parses its options, calls one service method and prints the result, as a
table for people or as JSON with ``--json`` for scripts. Errors become one message plus the
next step, and a non-zero exit status.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, BinaryIO

import typer
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.progress import BarColumn, Progress, TextColumn, TransferSpeedColumn
from rich.table import Table

from episodic.bench.locomo import (
    CATEGORY_NAMES,
    GRANULARITIES,
    category_counts,
    load_locomo,
    resolve_policies,
    run_locomo,
)
from episodic.bench.metrics import METRIC_KEYS
from episodic.config import DEFAULT_DB_URL, Settings
from episodic.errors import EpisodicError, InvalidInput
from episodic.recall.engine import RecallResult
from episodic.recall.policies import POLICIES
from episodic.recall.render import relative_age
from episodic.recall.trace import Trace
from episodic.scoring.health import sparkline
from episodic.service import Episodic
from episodic.upkeep.lease import JobResult
from episodic.write.episodes import episode_json

app = typer.Typer(
    name="episodic",
    help="Episodic memory for LLM agents: keep what matters, recall it as untrusted hints.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

# Progress is shown for inputs larger than this (bytes); small files finish before it helps.
PROGRESS_MIN_BYTES = 1_000_000

JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
WorkspaceOpt = Annotated[str, typer.Option("--workspace", "-w", help="Workspace to search.")]
AgentOpt = Annotated[str | None, typer.Option("--agent", help="Agent id (needed by --scope own).")]
CrewOpt = Annotated[
    str | None, typer.Option("--crew", help="Crew id (needed by --scope crew_shared).")
]
ResourceOpt = Annotated[str | None, typer.Option("--resource", help="Narrow to one resource.")]
ScopeOpt = Annotated[
    str | None,
    typer.Option("--scope", help="own | crew_shared; omitted = the whole workspace."),
]
KOpt = Annotated[int | None, typer.Option("-k", help="How many memories (1-50, default 5).")]
TypeOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--type", help="Only memories of this type (repeatable): message, episode, entry, ..."
    ),
]
ConversationOpt = Annotated[
    str | None, typer.Option("--conversation", help="Narrow to one conversation.")
]
PolicyOpt = Annotated[
    str | None,
    typer.Option("--policy", help=f"Recall policy: {', '.join(POLICIES)} (default: default)."),
]
ExplainOpt = Annotated[
    bool, typer.Option("--explain", help="Show every stage's candidates and what was dropped why.")
]


@app.callback()
def _root(
    ctx: typer.Context,
    db: Annotated[
        str,
        typer.Option("--db", envvar="EPISODIC_DB", help="Database URL.", show_default=True),
    ] = DEFAULT_DB_URL,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log more.")] = False,
) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    ctx.obj = {"db": db}


@contextmanager
def _errors() -> Iterator[None]:
    try:
        yield
    except InvalidInput as exc:
        err.print(f"[red]error:[/red] {exc.field}: {exc.message}", markup=True)
        raise typer.Exit(2) from None
    except EpisodicError as exc:
        err.print(f"[red]error:[/red] {exc}", markup=True)
        raise typer.Exit(2) from None


def _open(ctx: typer.Context) -> Episodic:
    settings = Settings.from_env(db_url=ctx.obj["db"])
    return Episodic.open(settings.db_url, settings=settings)


def _print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")


@app.command()
def init(ctx: typer.Context) -> None:
    """Create the database (or bring its schema up to date).

    Example: episodic --db sqlite:///./memory.db init
    """
    with _errors(), _open(ctx) as mem:
        out.print(f"ready: {mem.store.url} (schema v{mem.store.schema_version()})")


@app.command()
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
    with _errors(), _open(ctx) as mem:
        if file == "-":
            report = mem.ingest_lines(sys.stdin.buffer)
        else:
            path = Path(file)
            if not path.is_file():
                raise InvalidInput("FILE", f"no such file: {file}")
            with path.open("rb") as fh:
                report = _ingest_with_progress(mem, fh, path.stat().st_size)
    if as_json:
        _print_json(report.to_json())
    else:
        out.print(
            f"stored {report.stored} events ({report.admitted} admitted as memories, "
            f"{report.duplicates} already present)"
        )
        for e in report.errors:
            err.print(f"rejected {e}")
        if report.errors:
            err.print(f"{len(report.errors)} line(s) rejected; the others were stored")
    if report.errors:
        raise typer.Exit(1)


def _ingest_with_progress(mem: Episodic, fh: BinaryIO, size: int) -> Any:
    if size < PROGRESS_MIN_BYTES or not err.is_terminal:
        return mem.ingest_lines(fh)
    with Progress(
        TextColumn("ingesting"), BarColumn(), TransferSpeedColumn(), console=err, transient=True
    ) as bar:
        task = bar.add_task("ingest", total=size)

        def counted() -> Iterator[bytes]:
            for line in fh:
                bar.advance(task, len(line))
                yield line

        return mem.ingest_lines(counted())


@app.command()
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
    as_json: JsonOpt = False,
) -> None:
    """Embed memories that have no vector yet and turn conversations into episodes
    (runs the sweeper; Ctrl-C stops it).

    Example: episodic index --once --flush
    """
    if flush and not once:
        err.print("--flush closes the open segments once; use it with --once")
        raise typer.Exit(2)
    with _errors(), _open(ctx) as mem:
        if once:
            result = mem.index_once()
            report = mem.segment(flush=flush)
            if as_json:
                _print_json(
                    {
                        "embedded": result.embedded,
                        "failed": result.failed,
                        "error": result.error,
                        "segmentation": report.to_json(),
                    }
                )
            else:
                out.print(f"embedded {result.embedded} memories")
                if report.conversations:
                    out.print(
                        f"{report.episodes} episode(s) from {report.messages} messages in "
                        f"{report.conversations} conversation(s); {report.entries} entries, "
                        f"{report.learnings} learnings; {report.waiting} messages wait for more"
                    )
                if result.error:
                    err.print(f"[yellow]warning:[/yellow] {result.error}")
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


@app.command()
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
    with _errors(), _open(ctx) as mem:
        episodes = mem.recent(
            workspace=workspace,
            agent=agent,
            resource=resource,
            conversation=conversation,
            limit=limit,
        )
        rows = [episode_json(m) for m in episodes]
        if as_json:
            _print_json(rows)
            return
        if not rows:
            out.print("no episodes yet (run `episodic index --once --flush` after a session)")
            return
        for row in rows:
            mark = " [bold magenta]key moment[/bold magenta]" if row["key_moment"] else ""
            out.print(
                f"[bold]{escape(row['title'])}[/bold]{mark}\n"
                f"  {row['start']} .. {row['end']} · {row['message_count']} messages · "
                f"surprise {row['surprise']:.2f}\n  {escape(row['summary'])}"
            )


@app.command()
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
    as_json: JsonOpt = False,
) -> None:
    """Drop every vector and embed all memories again with the current embedder.

    Needed after changing EPISODIC_EMBEDDER or the model.
    Example: EPISODIC_EMBEDDER=ollama episodic reindex
    Example: episodic reindex --from ./memory-export
    """
    if from_dir is not None:
        _import_dir(ctx, from_dir, mirror=True, as_json=as_json)
        return
    with _errors(), _open(ctx) as mem:
        result = mem.reindex()
        model = mem.embedder.model_id if mem.embedder else "?"
        out.print(f"re-embedded {result.embedded} memories with {model}")
        if result.error:
            err.print(
                f"[yellow]warning:[/yellow] {result.error}; run `episodic index --once` later"
            )
            raise typer.Exit(1)


@app.command()
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
    as_json: JsonOpt = False,
) -> None:
    """The past memories that matter for QUERY, best first.

    Example: episodic recall "OOM in checkout" --workspace acme-shop --agent deployer --scope own
    """
    with _errors(), _open(ctx) as mem:
        result = mem.recall(
            query,
            explain=explain,
            workspace=workspace,
            agent=agent,
            crew=crew,
            resource=resource,
            scope=scope,
            k=k,
            policy=policy,
            types=types or None,
            conversation=conversation,
        )
    for warning in result.warnings:
        err.print(f"[yellow]warning:[/yellow] {warning}")
    if as_json:
        hits = [h.to_json() for h in result.hits]
        if result.trace is not None:
            _print_json({"hits": hits, "trace": result.trace.to_json()})
        else:
            _print_json(hits)
        return
    _print_hits(result)
    if result.trace is not None:
        _print_trace(result.trace, out)


def _print_trace(trace: Trace, console: Console) -> None:
    console.print(
        f"[bold]trace[/bold] policy {trace.policy}; lexical query {trace.lexical_query!r}"
    )
    if trace.time_windows:
        console.print("time: " + "; ".join(trace.time_windows))
    for name, rows in trace.stages.items():
        shown = ", ".join(f"{r.rank}. {r.memory_id} ({r.score:.4f})" for r in rows[:10])
        more = f" … +{len(rows) - 10}" if len(rows) > 10 else ""
        console.print(f"  {name}: {shown or '(none)'}{more}")
    for d in trace.dropped:
        extra = f" ({d.detail})" if d.detail else ""
        console.print(f"  dropped {d.memory_id} at {d.stage}: {d.reason}{extra}")


def _print_hits(result: RecallResult) -> None:
    if not result.hits:
        out.print("no memories recalled")
        return
    table = Table(title=f"{len(result.hits)} memories ({result.mode}, policy {result.policy})")
    for column in ("#", "score", "age", "type", "agent", "summary"):
        table.add_column(column, overflow="fold")
    for i, hit in enumerate(result.hits, start=1):
        table.add_row(
            str(i),
            f"{hit.score:.3f}",
            relative_age(hit.age_seconds),
            hit.memory.type,
            hit.memory.agent_id or "-",
            hit.memory.content,
        )
    out.print(table)


@app.command()
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
) -> None:
    """The prompt-ready <recalled-memory> block for QUERY (prints nothing if none).

    Example: episodic render "deploy checkout to production" --workspace acme-shop --max-chars 1200
    """
    with _errors(), _open(ctx) as mem:
        block, result = mem.render_explained(
            query,
            max_chars=max_chars,
            workspace=workspace,
            agent=agent,
            crew=crew,
            resource=resource,
            scope=scope,
            k=k,
            policy=policy,
            explain=explain,
            types=types or None,
            conversation=conversation,
        )
    if block:
        sys.stdout.write(block + "\n")
    if result.trace is not None:
        _print_trace(result.trace, err)


@app.command()
def doctor(
    ctx: typer.Context,
    deep: Annotated[
        bool,
        typer.Option(
            "--deep",
            help="Also check that the keyword index, the vectors and the link tables agree "
            "with the memories (reads every row).",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Check the database and the embedder, and say how to fix what is wrong; exit 1 on
    any error.

    Example: episodic doctor --deep --json
    """
    with _errors(), _open(ctx) as mem:
        report = mem.doctor(deep=deep)
    if as_json:
        _print_json(report.to_json())
    else:
        out.print(f"episodic: [bold]{report.episodic}[/bold]")
        colours = {"ok": "green", "warn": "yellow", "error": "red"}
        for c in report.checks:
            out.print(f"[{colours[c.status]}]{c.status.upper():5}[/] {c.name}: {c.detail}")
            if c.fix:
                out.print(f"      fix: {c.fix}")
    if not report.ok:
        raise typer.Exit(1)


DEMO_QUERIES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("OOM in checkout after a cache change", {"workspace": "acme-shop"}),
    (
        "production deployment denied by the keeper",
        {"workspace": "acme-shop", "agent": "deployer", "scope": "own"},
    ),
    ("eval regression on the ranking model", {"workspace": "orbit-labs"}),
)


def sample_journal() -> Path:
    return Path(str(resources.files("episodic") / "data" / "sample_journal.jsonl"))


@app.command()
def demo(ctx: typer.Context) -> None:
    """Ingest a bundled multi-agent journal, index it, and show three recalls.

    Example: episodic --db sqlite:///./.episodic/demo.db demo
    """
    with _errors(), _open(ctx) as mem:
        with sample_journal().open("rb") as fh:
            report = mem.ingest_lines(fh)
        out.print(
            f"[bold]1. ingest[/bold]: {report.received} journal events, "
            f"{report.admitted} admitted as memories (new), {report.duplicates} already present"
        )
        mode = mem.warn_if_sparse_only()
        result = mem.index_once()
        out.print(f"[bold]2. index[/bold]: {result.embedded} memories embedded ({mode})")
        for i, (query, filters) in enumerate(DEMO_QUERIES, start=3):
            where = " ".join(f"--{key} {value}" for key, value in filters.items())
            out.print(f"\n[bold]{i}. render[/bold] {query!r} {where}")
            block = mem.render(query, k=4, **filters)
            out.print(block or "(nothing recalled)", markup=False)


bench_app = typer.Typer(
    help=(
        "Measure recall quality on public benchmarks.\n\n"
        "Example: episodic bench locomo --data ../shared/data/locomo10.json"
    ),
    no_args_is_help=True,
)
app.add_typer(bench_app, name="bench")


@bench_app.command("locomo")
def bench_locomo(
    data: Annotated[Path, typer.Option("--data", help="LoCoMo JSON file (e.g. locomo10.json).")],
    policy: Annotated[
        str,
        typer.Option("--policy", help="Policy name, comma-separated names, or all."),
    ] = "all",
    granularity: Annotated[
        str, typer.Option("--granularity", help="Score turns or their sessions: turn|session.")
    ] = "turn",
    embedder: Annotated[
        str | None,
        typer.Option(
            "--embedder", help="local | ollama | openai | none (default: EPISODIC_EMBEDDER)."
        ),
    ] = None,
    ingest: Annotated[
        str,
        typer.Option(
            "--ingest",
            help="turn: each turn a journal event; conversation: chat messages segmented "
            "into episodes, entries and keys (recall ranks turns and entries).",
        ),
    ] = "turn",
    keys: Annotated[
        str | None,
        typer.Option("--keys", help="Key expansion on|off (default: EPISODIC_KEY_EXPANSION)."),
    ] = None,
    bench_db: Annotated[
        str | None,
        typer.Option(
            "--bench-db",
            help="An EMPTY database to run in, e.g. postgresql://... to measure that "
            "backend (default: a throwaway SQLite file).",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Evidence recall of each recall policy on LoCoMo (one workspace per conversation).

    Every turn becomes a memory; every question with evidence is asked at the end of its
    conversation. Reports recall@1/5/10/20, all-evidence@10 and NDCG@10, overall and per
    category, and recall latency (query embedding excluded). Builds a throwaway database;
    turn embeddings are cached in the cache dir, so a second run skips the model.

    Example: episodic bench locomo --data ../shared/data/locomo10.json --granularity session
    Example: episodic bench locomo --data ../shared/data/locomo10.json --ingest conversation
    """
    with _errors():
        if granularity not in GRANULARITIES:
            raise InvalidInput("granularity", f"use one of {'|'.join(GRANULARITIES)}")
        overrides: dict[str, Any] = {} if embedder is None else {"embedder": embedder}
        if keys is not None:
            if keys not in ("on", "off"):
                raise InvalidInput("keys", "use on or off")
            overrides["key_expansion"] = keys == "on"
        settings = Settings.from_env(**overrides)
        names = resolve_policies(policy)
        counts = category_counts(load_locomo(data))
        report = run_locomo(
            data,
            names,
            granularity,
            settings,
            progress=lambda line: err.print(f"[dim]{line}[/dim]", markup=True),
            ingest=ingest,
            db_url=bench_db,
        )
    if as_json:
        _print_json(report)
        return
    _print_bench(report, counts)


def _print_bench(report: dict[str, Any], counts: dict[str, int]) -> None:
    policies: dict[str, Any] = report["policies"]
    out.print(
        f"LoCoMo evidence recall, {report['granularity']} level: {report['questions']} "
        f"questions, embedder {report['embedder']}"
    )
    table = Table()
    table.add_column("metric", no_wrap=True)
    for name in policies:
        table.add_column(name, justify="right")

    def section(label: str, rows: dict[str, dict[str, float]]) -> None:
        table.add_row(f"[bold]{label}[/bold]", *("" for _ in policies))
        for key in METRIC_KEYS:
            values = [rows[name][key] for name in policies]
            best = max(values)
            table.add_row(
                f"  {key}",
                *(f"[bold]{v:.3f}[/bold]" if v == best else f"{v:.3f}" for v in values),
            )
        table.add_section()

    section(
        f"overall (n={report['questions']})",
        {name: p["overall"] for name, p in policies.items()},
    )
    for category, n in counts.items():
        label = CATEGORY_NAMES.get(int(category), "other")
        section(
            f"{category} {label} (n={n})",
            {name: p["by_category"][category] for name, p in policies.items()},
        )
    table.add_row("[bold]recall latency (ms)[/bold]", *("" for _ in policies))
    for key in ("p50", "p95"):
        table.add_row(f"  {key}", *(f"{p['latency_ms'][key]:.2f}" for p in policies.values()))
    if out.is_terminal:
        out.print(table)
    else:
        # Piped output has no terminal width to respect; squeezing seven policies into 80
        # columns would cut the labels and numbers instead.
        Console(highlight=False, width=_natural_width(table)).print(table)


def _natural_width(table: Table) -> int:
    """The width ``table`` takes when nothing limits it."""
    return Measurement.get(out, out.options.update_width(10_000), table).maximum


# -- upkeep (issue 5): consolidate, memory health, upkeep jobs --------------------------
consolidate_app = typer.Typer(
    help=(
        "Derive rules and facts from clusters of related memories.\n\n"
        "Example: episodic consolidate run --workspace acme"
    ),
    no_args_is_help=True,
)
app.add_typer(consolidate_app, name="consolidate")
memory_app = typer.Typer(
    help=("Inspect the memory's state.\n\nExample: episodic memory health --workspace acme"),
    no_args_is_help=True,
)
app.add_typer(memory_app, name="memory")
upkeep_app = typer.Typer(
    help=(
        "Run one upkeep job now (for cron), or the whole schedule.\n\n"
        "Example: episodic upkeep decay && episodic upkeep health --workspace acme"
    ),
    no_args_is_help=True,
)
app.add_typer(upkeep_app, name="upkeep")

OptionalWorkspaceOpt = Annotated[
    str | None, typer.Option("--workspace", "-w", help="One workspace (default: all).")
]


def _print_jobs(results: list[JobResult], as_json: bool) -> None:
    if as_json:
        _print_json([r.to_json() for r in results])
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
    at least two of them (an LLM when EPISODIC_LLM_URL is set, else an offline summary).

    Example: episodic consolidate run --workspace acme --json
    """
    with _errors(), _open(ctx) as mem:
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

    Snapshots are taken daily by the scheduler, or by `episodic upkeep health`.
    Example: episodic memory health --workspace acme --crew platform
    """
    with _errors(), _open(ctx) as mem:
        view = mem.memory_health(workspace, crew, history=history)
    if as_json:
        _print_json(None if view is None else view.to_json())
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
    with _errors(), _open(ctx) as mem:
        _print_jobs([mem.decay(workspace=workspace, formula=formula)], as_json)


@upkeep_app.command("reviews")
def upkeep_reviews(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Rate pending reviews by the conversation messages that followed each recall and
    update FSRS stability; expire the ones no output followed within a day.

    Example: episodic upkeep reviews --json
    """
    with _errors(), _open(ctx) as mem:
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
    with _errors(), _open(ctx) as mem:
        if output == "-":
            text = sys.stdin.read()
        else:
            path = Path(output)
            if not path.is_file():
                raise InvalidInput("OUTPUT", f"no such file: {output}")
            text = path.read_text(encoding="utf-8")
        report = mem.review(workspace, text, agent=agent, conversation=conversation)
    if as_json:
        _print_json(report.to_json())
        return
    body = report.to_json()
    ratings = ", ".join(f"{k} {v}" for k, v in body["ratings"].items())
    out.print(
        f"rated {report.reviews} recall(s), {report.memories} memories updated ({ratings}); "
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
    with _errors(), _open(ctx) as mem:
        _print_jobs(mem.compact(workspace=workspace), as_json)


@upkeep_app.command("health")
def upkeep_health(
    ctx: typer.Context, workspace: OptionalWorkspaceOpt = None, as_json: JsonOpt = False
) -> None:
    """Compute and store today's health snapshot of each workspace and its crews.

    Example: episodic upkeep health --workspace acme
    """
    with _errors(), _open(ctx) as mem:
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
    with _errors(), _open(ctx) as mem:
        retired = mem.retire_phase(workspace, phase)
    if as_json:
        _print_json({"workspace": workspace, "phase": phase, "retired": retired})
    else:
        out.print(f"retired {len(retired)} task memories of phase {escape(phase)}")


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
    with _errors(), _open(ctx) as mem:
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


# -- the service (issue 6): serve, keys, forget, export/import, mcp ---------------------
@app.command()
def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8765,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            help="Server processes (each keeps its own dense index in memory; the "
            "indexer runs once, in the parent).",
        ),
    ] = 1,
    log_level: Annotated[str, typer.Option("--log-level", help="uvicorn log level.")] = "info",
) -> None:
    """Serve the HTTP API (/v1, keys required), /healthz and the operator's page /ui, and
    run the background indexer.

    Example: episodic serve --port 8765   # then open http://127.0.0.1:8765/ui
    """
    import os

    import uvicorn

    from episodic.heap import limit_arenas
    from episodic.http import asgi, start_background_jobs

    limit_arenas()  # before uvicorn's and the jobs' threads: see episodic.heap
    if workers < 1:
        err.print("[red]error:[/red] --workers: must be 1 or more", markup=True)
        raise typer.Exit(2)
    with _errors(), _open(ctx) as mem:
        if workers > 1 and mem.store.url.endswith(":memory:"):
            raise InvalidInput("workers", "worker processes cannot share an in-memory database")
        out.print(f"episodic serving {mem.store.url} on http://{host}:{port} (/v1, /ui, /healthz)")
        if workers == 1:
            uvicorn.run(asgi(mem, background=True), host=host, port=port, log_level=log_level)
            return
        start_background_jobs(mem)
        os.environ["EPISODIC_DB"] = mem.store.url
        uvicorn.run(
            "episodic.http:app_from_env",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            log_level=log_level,
        )


keys_app = typer.Typer(
    help=(
        "API keys for the HTTP API: each binds its holder to one workspace and a role "
        "(agent: own memories; lead: crew_shared; admin: the whole workspace).\n\n"
        "Example: episodic keys create --workspace acme --role admin --json"
    ),
    no_args_is_help=True,
)
app.add_typer(keys_app, name="keys")


@keys_app.command("create")
def keys_create(
    ctx: typer.Context,
    workspace: Annotated[str, typer.Option("--workspace", "-w", help="The key's workspace.")],
    role: Annotated[str, typer.Option("--role", help="agent | lead | admin.")] = "agent",
    agent: Annotated[
        str | None, typer.Option("--agent", help="Bind the key to this agent.")
    ] = None,
    crew: Annotated[str | None, typer.Option("--crew", help="Bind the key to this crew.")] = None,
    label: Annotated[str, typer.Option("--label", help="A note for `keys list`.")] = "",
    as_json: JsonOpt = False,
) -> None:
    """Create an API key; the key is printed once and only its hash is stored.

    Example: episodic keys create --workspace acme --role agent --agent deployer --json
    """
    with _errors(), _open(ctx) as mem:
        key, secret = mem.create_key(workspace, role=role, agent=agent, crew=crew, label=label)
    if as_json:
        _print_json({"key": secret, **key.to_json()})
        return
    out.print(f"key {key.id} for workspace {key.workspace_id} ({key.role.value})")
    sys.stdout.write(secret + "\n")
    err.print("this is the only time the key is shown: store it now")


@keys_app.command("list")
def keys_list(
    ctx: typer.Context,
    workspace: Annotated[
        str | None, typer.Option("--workspace", "-w", help="Only this workspace's keys.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """List API keys (never their secrets).

    Example: episodic keys list --workspace acme
    """
    with _errors(), _open(ctx) as mem:
        keys = mem.list_keys(workspace)
    if as_json:
        _print_json([k.to_json() for k in keys])
        return
    if not keys:
        out.print("no keys")
        return
    table = Table()
    for column in ("id", "workspace", "role", "agent", "crew", "label", "created", "revoked"):
        table.add_column(column)
    for k in keys:
        row = k.to_json()
        table.add_row(
            k.id,
            k.workspace_id,
            k.role.value,
            k.agent_id or "-",
            k.crew_id or "-",
            k.label,
            row["created_at"] or "-",
            row["revoked_at"] or "-",
        )
    out.print(table)


@keys_app.command("revoke")
def keys_revoke(
    ctx: typer.Context,
    key_id: Annotated[str, typer.Argument(help="The key's id (k_...), from `keys list`.")],
) -> None:
    """Revoke an API key: every request with it is refused from now on.

    Example: episodic keys revoke k_3f9a1c2b7d4e
    """
    with _errors(), _open(ctx) as mem:
        key = mem.revoke_key(key_id)
    out.print(f"revoked {key.id} ({key.workspace_id}, {key.role.value})")


@app.command()
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
    memory: Annotated[str | None, typer.Option("--memory", help="One memory by id.")] = None,
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
    with _errors(), _open(ctx) as mem:
        counts = mem.forget(
            workspace=workspace,
            agent=agent,
            resource=resource,
            conversation=conversation,
            memory=memory,
            older_than_days=older_than,
        )
    if as_json:
        _print_json(counts.to_json())
        return
    out.print(
        f"forgot {counts.memories} memories and {counts.events} events "
        f"({counts.vectors} vectors, {counts.relations} edges, {counts.archived} archived, "
        f"{counts.embedding_cache} cached embeddings)"
    )


@app.command()
def export(
    ctx: typer.Context,
    directory: Annotated[Path, typer.Argument(help="Folder to write the markdown files to.")],
    workspace: Annotated[
        str | None, typer.Option("--workspace", "-w", help="Only this workspace.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Write memories as markdown files with YAML frontmatter, one per memory, in folders
    by scope (workspace/crews/C/agents/A/ID.md); the folder can rebuild the database.

    Example: episodic export ./memory-export --workspace acme
    """
    with _errors(), _open(ctx) as mem:
        report = mem.export_markdown(directory, workspace=workspace)
    if as_json:
        _print_json(report.to_json())
        return
    out.print(
        f"exported {report.written + report.unchanged} memories of {report.workspaces} "
        f"workspace(s) to {directory} ({report.written} written, {report.unchanged} unchanged, "
        f"{report.removed} stale files removed, {report.events} journal events)"
    )


@app.command("import")
def import_(
    ctx: typer.Context,
    directory: Annotated[Path, typer.Argument(help="Folder written by `episodic export`.")],
    as_json: JsonOpt = False,
) -> None:
    """Read markdown memories into the database: new files are added, edited files update
    their memory, unchanged files (same path, mtime and size) are not even read.

    Malformed files are reported by path and skipped; exit status 1 if there were any.
    Example: episodic import ./memory-export
    """
    _import_dir(ctx, directory, mirror=False, as_json=as_json)


def _import_dir(ctx: typer.Context, directory: Path, *, mirror: bool, as_json: bool) -> None:
    with _errors(), _open(ctx) as mem:
        report = mem.import_markdown(directory, mirror=mirror)
    if as_json:
        _print_json(report.to_json())
    else:
        out.print(
            f"{report.files} files: {report.inserted} new, {report.updated} updated, "
            f"{report.unchanged + report.skipped_unchanged} unchanged, {report.removed} removed; "
            f"{report.embedded} embedded"
        )
        for e in report.errors:
            err.print(f"skipped {e}")
        if report.embed_error:
            err.print(f"[yellow]warning:[/yellow] {report.embed_error}")
    if report.errors:
        raise typer.Exit(1)


@app.command("mcp")
def mcp_command(
    ctx: typer.Context,
    workspace: Annotated[
        str,
        typer.Option(
            "--workspace", "-w", envvar="EPISODIC_MCP_WORKSPACE", help="The workspace to serve."
        ),
    ],
    agent: Annotated[
        str | None,
        typer.Option("--agent", envvar="EPISODIC_MCP_AGENT", help="Act as this agent."),
    ] = None,
    crew: Annotated[
        str | None, typer.Option("--crew", envvar="EPISODIC_MCP_CREW", help="The agent's crew.")
    ] = None,
    role: Annotated[
        str | None,
        typer.Option(
            "--role",
            envvar="EPISODIC_MCP_ROLE",
            help="agent (scope own) | lead (crew_shared) | admin (whole workspace); "
            "default agent with --agent, else admin.",
        ),
    ] = None,
    transport: Annotated[
        str, typer.Option("--transport", help="stdio | http (streamable HTTP at /mcp).")
    ] = "stdio",
    host: Annotated[str, typer.Option("--host", help="HTTP address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="HTTP port.")] = 8766,
) -> None:
    """Serve memory to a model as MCP tools (recall_memory, remember, forget,
    memory_health), bound to one workspace and agent.

    Example: episodic mcp --workspace acme --agent deployer
    Example: episodic mcp --workspace acme --agent deployer --transport http --port 8766
    """
    from episodic.mcp import Binding, build_server

    if transport not in ("stdio", "http"):
        err.print("[red]error:[/red] --transport: use stdio or http", markup=True)
        raise typer.Exit(2)
    with _errors(), _open(ctx) as mem:
        server = build_server(mem, Binding.of(workspace, agent, crew, role))
        mem.warn_if_sparse_only()
        if transport == "stdio":
            server.run("stdio")
        else:
            server.run("streamable-http", host=host, port=port)


@app.command()
def migrate(
    source: Annotated[
        str,
        typer.Option(
            "--from", help="The SQLite memory to copy: sqlite:///path/memory.db or a file path."
        ),
    ],
    target: Annotated[
        str,
        typer.Option(
            "--to", help="The PostgreSQL database: postgresql://user:password@host:5432/dbname."
        ),
    ],
    batch: Annotated[
        int, typer.Option("--batch", help="Rows per committed batch.", show_default=True)
    ] = 2000,
    verify_only: Annotated[
        bool,
        typer.Option("--verify-only", help="Copy nothing; only compare counts and checksums."),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Copy a whole memory from SQLite to PostgreSQL: events, memories and their sources,
    vectors, the embedding cache, relations, the archive, health history, reviews, upkeep
    runs, compactions, nudges, API keys and import records.

    The target's schema is created first; vectors get their pgvector type and HNSW index.
    Interrupted (Ctrl-C, a crash, a lost connection), the same command continues where
    it stopped, copying nothing twice. At the end every table is verified: row counts
    and a checksum of every value must be equal on both sides (exit status 1 if not).
    The SQLite file is only read; stop writers to it while it is copied.

    Example: episodic migrate --from sqlite:///./.episodic/memory.db --to postgresql://me@db/mem
    """
    from rich.progress import MofNCompleteColumn, TimeRemainingColumn

    from episodic.store import transfer

    def run(listener: transfer.Listener | None) -> transfer.MigrateReport:
        return transfer.migrate(
            source, target, batch=batch, verify_only=verify_only, listener=listener
        )

    try:
        with _errors():
            if not err.is_terminal:
                report = run(None)
            else:
                with Progress(
                    TextColumn("{task.description}"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TimeRemainingColumn(),
                    console=err,
                    transient=True,
                ) as bar:
                    report = run(_MigrateBar(bar))
    except KeyboardInterrupt:
        err.print("interrupted: run the same command again to continue the copy")
        raise typer.Exit(130) from None
    if as_json:
        _print_json(report.to_json())
    else:
        table = Table(title=f"{report.source} -> {report.target}")
        for column in ("table", "source rows", "target rows", "copied now", "checksum"):
            table.add_column(column, justify="left" if column == "table" else "right")
        for t in report.tables:
            same = t.source_sha256 == t.target_sha256
            table.add_row(
                t.name,
                str(t.source_rows),
                str(t.target_rows),
                str(t.copied),
                "equal" if same else "[red]DIFFERENT[/red]",
            )
        out.print(table)
    if not report.ok:
        err.print(
            f"[red]error:[/red] the target differs from the source in "
            f"{', '.join(report.mismatched)}: rows changed in the source after they were "
            "copied, or the target holds other data; stop every writer to the source and copy "
            "into an empty database",
            markup=True,
        )
        raise typer.Exit(1)


class _MigrateBar:
    """`episodic migrate`'s progress: one bar at a time, for the table being copied or
    checked."""

    def __init__(self, bar: Progress) -> None:
        self.bar = bar
        self.tasks: dict[str, Any] = {}

    def start(self, label: str, total: int | None, done: int = 0) -> None:
        for task in self.tasks.values():
            self.bar.update(task, visible=False)
        if total != 0:
            self.tasks[label] = self.bar.add_task(label, total=total, completed=done)

    def advance(self, label: str, rows: int) -> None:
        if label in self.tasks:
            self.bar.advance(self.tasks[label], rows)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
