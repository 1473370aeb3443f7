"""Moving memory in and out: ``export`` to markdown files, ``import`` them back, and
``migrate`` a SQLite memory to PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from episodic.cli.basics import warn_if_unknown
from episodic.cli.common import JsonOpt, err, errors, open_memory, out, plural, print_json
from episodic.errors import InvalidInput

if TYPE_CHECKING:  # rich's progress bar loads with `episodic migrate` on a terminal
    from rich.progress import Progress

    from episodic.portable.teaparty import TeaPartyExport

LayoutOpt = Annotated[
    str,
    typer.Option(
        "--layout",
        help="plain: one file per memory, every field (the default); teaparty: seed 001's "
        "tree of MEMORY.md and institutional.md files, several entries each.",
        show_default=True,
    ),
]
LAYOUTS = ("plain", "teaparty")
PruneOpt = Annotated[
    str,
    typer.Option(
        "--prune",
        help="teaparty: what happens to an entry deleted from the files since the last "
        "import: retire (kept, out of recall, not exported again), forget, or keep.",
        show_default=True,
    ),
]


def _layout(value: str) -> str:
    if value not in LAYOUTS:
        raise InvalidInput("layout", f"unknown layout {value!r}; use {' or '.join(LAYOUTS)}")
    return value


def export(
    ctx: typer.Context,
    directory: Annotated[Path, typer.Argument(help="Folder to write the markdown files to.")],
    workspace: Annotated[
        str | None,
        typer.Option("--workspace", "-w", help="Only this workspace (required by teaparty)."),
    ] = None,
    layout: LayoutOpt = "plain",
    as_json: JsonOpt = False,
) -> None:
    """Write memories as markdown files with YAML frontmatter, one per memory, in folders
    by scope (workspace/crews/C/agents/A/ID.md); the folder can rebuild the database.

    With --layout teaparty, write a workspace's learnings and institutional memories as
    seed 001's tree instead: DIR/MEMORY.md (global), DIR/<project>/MEMORY.md and
    institutional.md (project), DIR/<project>/.teaparty/jobs/<job>/institutional.md and
    .../tasks/<task>/worktree/MEMORY.md (team); other files are left alone.

    Example: episodic export ./memory-export --workspace acme
    Example: episodic export ~/teaparty --workspace acme --layout teaparty
    """
    with errors(), open_memory(ctx) as mem:
        if _layout(layout) == "teaparty":
            _print_tree(mem.export_teaparty(directory, workspace=workspace or ""), as_json)
            return
        report = mem.export_markdown(directory, workspace=workspace)
        if workspace is not None and report.written + report.unchanged == 0:
            warn_if_unknown(mem, workspace)  # a typo exports nothing, and says so
    if as_json:
        print_json(report.to_json())
        return
    out.print(
        f"exported {plural(report.written + report.unchanged, 'memory', 'memories')} of "
        f"{plural(report.workspaces, 'workspace')} to {directory} ({report.written} written, "
        f"{report.unchanged} unchanged, "
        f"{report.removed} stale files removed, {report.events} journal events)"
    )


def _print_tree(tree: TeaPartyExport, as_json: bool) -> None:
    if as_json:
        print_json(tree.to_json())
        return
    gone = f", {tree.removed} removed from the files" if tree.removed else ""
    out.print(
        f"exported {plural(tree.entries, 'entry', 'entries')} of {tree.workspace} to "
        f"{plural(tree.files, 'file')} under "
        f"{tree.directory} ({tree.written} written, {tree.unchanged} unchanged{gone})"
    )
    for skipped in tree.skipped:
        err.print(f"not exported: {skipped.memory_id}: {skipped.reason}", markup=False)


def import_(
    ctx: typer.Context,
    directory: Annotated[
        Path,
        typer.Argument(help="Folder written by `episodic export` (with --from mem0: the file)."),
    ],
    workspace: Annotated[
        str | None,
        typer.Option(
            "--workspace",
            "-w",
            help="The workspace a teaparty tree or a Mem0 export goes into (required by them).",
        ),
    ] = None,
    layout: LayoutOpt = "plain",
    prune: PruneOpt = "retire",
    source: Annotated[
        str | None,
        typer.Option(
            "--from",
            help="mem0: read Mem0's exported memories (get_all's JSON, or the dashboard's).",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Read markdown memories into the database: new files are added, edited files update
    their memory, unchanged files (same path, mtime and size) are not even read.

    With --layout teaparty, read seed 001's tree (see `episodic export --help`): every
    entry of every MEMORY.md and institutional.md, its level taken from its place. The
    files are the source of truth: an entry deleted from them since the last import is
    retired ("removed from markdown"), or forgotten with --prune forget.

    With --from mem0, read the JSON of Mem0's get_all ({"results": [...]} or a list) or
    the platform dashboard's export ({"memories": [...]}): each memory is stored with its
    id, time and metadata, user_id as the resource user:<id>, agent_id as the agent,
    run_id (or session_id) as the conversation, and a "history" list (what Mem0's
    history(memory_id) answers) kept as its versions; importing the same file again
    stores nothing.

    Malformed files (or entries) are reported by path and skipped; exit status 1 if there
    were any.
    Example: episodic import ./memory-export
    Example: episodic import ~/teaparty --workspace acme --layout teaparty
    Example: episodic import mem0-export.json --from mem0 --workspace acme
    """
    if source is not None:
        import_mem0_file(ctx, directory, source=source, workspace=workspace, as_json=as_json)
        return
    import_dir(
        ctx,
        directory,
        mirror=False,
        as_json=as_json,
        layout=layout,
        workspace=workspace,
        prune=prune,
    )


def import_mem0_file(
    ctx: typer.Context, path: Path, *, source: str, workspace: str | None, as_json: bool
) -> None:
    """``episodic import --from mem0``: Mem0's exported memories into ``workspace``."""
    from episodic.compat.mem0_import import import_mem0

    with errors():
        if source != "mem0":
            raise InvalidInput("from", f"unknown source {source!r}; use mem0")
        with open_memory(ctx) as mem:
            report = import_mem0(mem, path, workspace=workspace or "")
    if as_json:
        print_json(report.to_json())
    else:
        out.print(
            f"{report.read} Mem0 memories: {report.stored} stored, {report.unchanged} "
            f"already there, {len(report.errors)} skipped; {report.edits} edits kept "
            f"from their history, {report.replaced} replaced as in Mem0; "
            f"{report.embedded} embedded"
        )
        for e in report.errors:
            err.print(f"skipped {e}", markup=False)
        for n in report.notes:
            err.print(f"note: {n}", markup=False)
    if report.errors:
        raise typer.Exit(1)


def import_dir(
    ctx: typer.Context,
    directory: Path,
    *,
    mirror: bool,
    as_json: bool,
    layout: str = "plain",
    workspace: str | None = None,
    prune: str = "retire",
) -> None:
    """Read ``directory`` into the database and print what changed; with ``mirror``, as
    ``reindex --from`` asks, memories no file holds are removed too (of a tree: the
    entries it held and holds no more)."""
    with errors(), open_memory(ctx) as mem:
        if _layout(layout) == "teaparty":
            report = mem.import_teaparty(
                directory, workspace=workspace or "", prune="forget" if mirror else prune
            )
        else:
            report = mem.import_markdown(directory, mirror=mirror)
    if as_json:
        print_json(report.to_json())
    else:
        # The plain layout counts files (one memory each), the tree counts entries.
        entries = " entries" if layout == "teaparty" else ""
        out.print(
            f"{plural(report.files, 'file')}: {report.inserted} new, {report.updated} updated, "
            f"{report.unchanged + report.skipped_unchanged} unchanged{entries}, "
            f"{report.removed} removed; {report.embedded} embedded"
        )
        for e in report.errors:
            err.print(f"skipped {e}", markup=False)
        for warning in report.warnings:
            err.print(f"warning: {warning}", markup=False)
        if report.embed_error:
            err.print(f"[yellow]warning:[/yellow] {report.embed_error}")
    if report.errors:
        raise typer.Exit(1)


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

    from episodic.extras import require

    with errors():
        require("postgres", "`episodic migrate`")  # transfer.py speaks psycopg's COPY
    from episodic.store import transfer

    def run(listener: transfer.Listener | None) -> transfer.MigrateReport:
        return transfer.migrate(
            source, target, batch=batch, verify_only=verify_only, listener=listener
        )

    try:
        with errors():
            if not err.is_terminal:
                report = run(None)
            else:
                from rich.progress import BarColumn, Progress, TextColumn

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
        print_json(report.to_json())
    else:
        from rich.table import Table

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
