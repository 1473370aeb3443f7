"""``episodic workspaces``: the workspaces a database holds, with how many memories and
events each; and the warning a command gives when it names a workspace that holds
neither (a typo answers "nothing" otherwise, and looks like an empty memory)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from episodic.cli.common import JsonOpt, err, errors, open_memory, out, plural, print_json

if TYPE_CHECKING:
    from episodic.service import Episodic
    from episodic.store.writes import WorkspaceCounts


def counted(w: WorkspaceCounts) -> str:
    return (
        f"{w.workspace} ({plural(w.memories, 'memory', 'memories')}, {plural(w.events, 'event')})"
    )


def workspaces(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """List the workspaces this database holds, with how many memories and events each.

    Example: episodic workspaces --json
    """
    with errors(), open_memory(ctx) as mem:
        found = mem.workspaces()
    if as_json:
        print_json(
            [{"workspace": w.workspace, "memories": w.memories, "events": w.events} for w in found]
        )
        return
    if not found:
        out.print("no workspaces yet: `episodic ingest` or `episodic memory remember` makes one")
        return
    for w in found:
        out.print(escape(counted(w)))


def warn_if_unknown(mem: Episodic, workspace: str) -> bool:
    """Warn on stderr, naming the workspaces there are, when ``workspace`` holds no memory
    and no event; whether it warned."""
    found = mem.workspaces()
    if any(w.workspace == workspace for w in found):
        return False
    there = "; ".join(counted(w) for w in found) if found else "none yet"
    err.print(
        f"[yellow]warning:[/yellow] workspace {escape(repr(workspace))} holds no memories "
        f"and no events; the workspaces in this database: {escape(there)} "
        "(`episodic workspaces`)"
    )
    return True
