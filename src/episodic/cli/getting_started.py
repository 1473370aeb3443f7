"""Getting started: ``init`` creates the database, ``doctor`` checks it and the embedder,
``demo`` tries recall on a bundled journal."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from episodic.cli.basics import never_created, open_memory_at
from episodic.cli.common import JsonOpt, database, errors, open_memory, out, plural, print_json
from episodic.config import DatabaseChoice, user_data_dir
from episodic.store.urls import display_url

if TYPE_CHECKING:
    from episodic.service.doctor import DoctorReport


def init(ctx: typer.Context) -> None:
    """Create the database (or bring its schema up to date).

    Example: episodic --db sqlite:///./memory.db init
    """
    with errors(), open_memory(ctx, create=True) as mem:
        out.print(f"ready: {mem.store.url} (schema v{mem.store.schema_version()})")


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
    any error (a database not created yet is one: `episodic init` creates it).

    Example: episodic doctor --deep --json
    """
    choice = database(ctx)
    with errors():
        missing = never_created(choice)
    if missing is None:
        with errors(), open_memory(ctx) as mem:
            report = mem.doctor(deep=deep)
            shown = display_url(mem.store.url)
    else:
        report, shown = _doctor_before_init(missing), display_url(choice.url)
    reason = choice.reason
    if as_json:
        print_json({**report.to_json(), "database": {"url": shown, "chosen_by": reason}})
    else:
        out.print(f"database: {escape(shown)} (chosen by {escape(reason)})")
        out.print(f"episodic: [bold]{report.episodic}[/bold]")
        colours = {"ok": "green", "warn": "yellow", "error": "red"}
        for c in report.checks:
            # Escaped: a detail or fix may hold brackets (an extra, `pip install 'x[server]'`).
            detail = escape(c.detail)
            out.print(f"[{colours[c.status]}]{c.status.upper():5}[/] {c.name}: {detail}")
            if c.fix:
                out.print(f"      fix: {escape(c.fix)}")
    if not report.ok:
        raise typer.Exit(1)


def _doctor_before_init(missing: str) -> DoctorReport:
    """The checks of a database not created yet: the store's is the error that says so
    and how to create it; the others (the embedder, metrics) need no stored data, so
    they run against an empty in-memory database with the same settings, and nothing
    is created where the user's database will be."""
    from episodic.service.doctor import Check, DoctorReport

    empty = DatabaseChoice("sqlite:///:memory:", "doctor's stand-in")
    with errors(), open_memory_at(empty, create=True) as mem:
        found = mem.doctor()
    store = Check("store", "error", missing.split("; ", 1)[0], missing.split("; ", 1)[-1])
    others = [c for c in found.checks if c.name != "store"]
    return DoctorReport(found.episodic, [store, *others], None)


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


def demo(ctx: typer.Context) -> None:
    """Ingest a bundled multi-agent journal, index it, and show three recalls.

    It writes to a database of its own (demo.db in the user's data folder), never to yours,
    unless --db names one on the command line.
    Example: episodic demo
    """
    if database(ctx).reason != "--db":
        ctx.obj["db"] = DatabaseChoice(demo_database(), "the demo's own file")
    with errors(), open_memory(ctx, create=True) as mem:
        with sample_journal().open("rb") as fh:
            report = mem.ingest_lines(fh)
        out.print(
            f"[bold]1. ingest[/bold]: {plural(report.received, 'journal event')}, "
            f"{report.admitted} admitted as memories (new), {report.duplicates} already present"
        )
        mode = mem.warn_if_sparse_only()
        result = mem.index_once()
        embedded = plural(result.embedded, "memory", "memories")
        out.print(f"[bold]2. index[/bold]: {embedded} embedded ({mode})")
        for i, (query, filters) in enumerate(DEMO_QUERIES, start=3):
            where = " ".join(f"--{key} {value}" for key, value in filters.items())
            out.print(f"\n[bold]{i}. render[/bold] {query!r} {where}")
            block = mem.render(query, k=4, **filters)
            out.print(block or "(nothing recalled)", markup=False)
        shown = display_url(mem.store.url)
    out.print(
        f"\nThe demo's memory is {shown}; ask it more with e.g. "
        f'`episodic --db {shown} recall "deploy denied" -w acme-shop`. '
        "Your own memory is elsewhere: start it with `episodic init`."
    )


def demo_database() -> str:
    """The demo's own database: demo.db in the user's data folder."""
    return f"sqlite:///{user_data_dir() / 'demo.db'}"
