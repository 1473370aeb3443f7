"""Backups of a SQLite memory: ``backup`` copies the live database without stopping its
writers, ``restore`` puts a copy back after checking it (episodic.store.backup)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from episodic.cli.common import errors, out


def _db(ctx: typer.Context) -> str:
    db: str = ctx.obj["db"]
    return db


def backup(
    ctx: typer.Context,
    dest: Annotated[Path, typer.Argument(help="The new file to write the copy to.")],
) -> None:
    """Copy a live SQLite memory to DEST, as of one moment, while the server keeps
    writing (SQLite's online backup). For PostgreSQL use pg_dump (docs/production.md).

    Example: episodic --db sqlite:///./memory.db backup ./backups/memory-2026-05-04.db
    """
    from episodic.store.backup import backup as take_backup

    with errors():
        done = take_backup(_db(ctx), dest)
    out.print(f"backed up to {done} ({done.stat().st_size} bytes)")


def restore(
    ctx: typer.Context,
    src: Annotated[Path, typer.Argument(help="A copy made by `episodic backup`.")],
    yes: Annotated[bool, typer.Option("--yes", help="Replace the database if it exists.")] = False,
) -> None:
    """Put the copy SRC in place as the database (--db), after checking it as
    `doctor --deep` does; a copy with errors is refused. Stop the server first.

    Example: episodic --db sqlite:///./memory.db restore ./backups/memory.db --yes
    """
    from episodic.store.backup import restore as put_back

    with errors():
        done = put_back(src, _db(ctx), overwrite=yes)
    out.print(f"restored {src} to {done}")
