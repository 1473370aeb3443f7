"""What was decided about a memory, from the shell: ``episodic memory why ID`` and
``episodic memory restore ID`` (commands of the ``memory`` group, registered in
``episodic.cli``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from episodic.cli import ids
from episodic.cli.common import JsonOpt, errors, open_memory, out, print_json
from episodic.service import memory_json

if TYPE_CHECKING:
    from episodic.service.decisions import Decision

# Who restored a memory from the shell, in the reverted decision.
CLI_RESTORER = "cli"


def why(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(help=ids.MEMORY_ID_HELP)],
    workspace: Annotated[str, typer.Option("--workspace", "-w", help="Its workspace.")],
    as_json: JsonOpt = False,
) -> None:
    """What was decided about a memory, and by which rule or model.

    Which rule admitted it and its importance, what it replaced and what replaced it,
    what it was merged into, the phase that retired it; a reverted decision says so.

    Example: episodic memory why evt_123 -w acme
    """
    with errors(), open_memory(ctx) as mem:
        memory_id = ids.memory_id(mem, workspace, memory_id)
        decisions = mem.decisions(memory_id, workspace=workspace)
    if as_json:
        print_json({"memory": memory_id, "decisions": [d.to_json() for d in decisions]})
        return
    for d in decisions:
        out.print(escape(decision_line(d)))


def decision_line(d: Decision) -> str:
    """One decision as a line of text: kind, the other memory, by what, why, undone."""
    other = f" {d.other}" if d.other else ""
    when = "" if d.at is None else f" {d.at:%Y-%m-%d %H:%M}"
    line = f"{d.kind}{other} ({d.decided_by}{when}): {d.reason}"
    if d.reverted_at is not None:
        line += f" [reverted {d.reverted_at:%Y-%m-%d %H:%M} by {d.reverted_by}]"
    return line


def restore(
    ctx: typer.Context,
    memory_id: Annotated[
        str, typer.Argument(help="The id (or its start) of the superseded or retired memory.")
    ],
    workspace: Annotated[str, typer.Option("--workspace", "-w", help="Its workspace.")],
    as_json: JsonOpt = False,
) -> None:
    """Undo a supersession or a retirement: the memory is active again, in every recall.

    Of an active memory a newer one changed part of, it undoes those partial changes:
    recall no longer ranks the newer above it nor marks it earlier.

    The decision is kept, marked reverted, so detection never replaces it with the same
    memory again (an explicit 'memory supersede' still can) and the end of its phase does
    not retire it again (an explicit 'memory retire' still can). A memory that is neither
    superseded nor retired is refused.

    Example: episodic memory restore evt_123 -w acme
    """
    with errors(), open_memory(ctx) as mem:
        memory_id = ids.memory_id(mem, workspace, memory_id)
        memory = mem.restore(memory_id, workspace=workspace, by=CLI_RESTORER)
    if as_json:
        print_json(memory_json(memory))
        return
    out.print(f"{escape(memory.id)} restored ({memory.status.value}): {escape(memory.content)}")
