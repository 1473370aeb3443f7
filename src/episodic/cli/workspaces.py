"""``episodic workspaces``: the workspaces a database holds, with how many memories and
events each (the warning a command gives when it names a workspace that holds neither is
``episodic.cli.basics.warn_if_unknown``)."""

from __future__ import annotations

import typer
from rich.markup import escape

from episodic.cli.basics import counted
from episodic.cli.common import JsonOpt, errors, open_memory, out, print_json


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
