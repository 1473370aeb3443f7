"""Correcting a memory from the shell: ``episodic memory update ID``, ``episodic
memory history ID``, ``episodic memory supersede OLD NEW`` and ``episodic memory
supersessions ID`` (commands of the ``memory`` group, registered in ``episodic.cli``)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.markup import escape

from episodic.cli import ids
from episodic.cli.common import JsonOpt, errors, open_memory, out, print_json
from episodic.errors import InvalidInput
from episodic.service.pages import memory_json

# Who made an edit from the shell, in the memory's history.
CLI_EDITOR = "cli"


def update(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(help=ids.MEMORY_ID_HELP)],
    workspace: Annotated[str, typer.Option("--workspace", "-w", help="Its workspace.")],
    content: Annotated[str | None, typer.Option("--content", help="The corrected text.")] = None,
    importance: Annotated[
        float | None, typer.Option("--importance", help="How much it matters, 0-1.")
    ] = None,
    payload: Annotated[
        str | None, typer.Option("--payload", help="A JSON object replacing its payload.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Correct a memory; the version it replaces stays in its history.

    Example: episodic memory update evt_123 -w acme --content "deploys go canary first"
    """
    with errors(), open_memory(ctx) as mem:
        memory = mem.update(
            ids.memory_id(mem, workspace, memory_id),
            workspace=workspace,
            content=content,
            importance=importance,
            payload=None if payload is None else _json_object(payload),
            by=CLI_EDITOR,
        )
    if as_json:
        print_json(memory_json(memory))
        return
    out.print(f"{memory.id}: {escape(memory.content)} (importance {memory.importance:.2f})")


def history(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(help=ids.MEMORY_ID_HELP)],
    workspace: Annotated[str, typer.Option("--workspace", "-w", help="Its workspace.")],
    as_json: JsonOpt = False,
) -> None:
    """A memory's versions, newest first: the current one, then each an edit replaced.

    Example: episodic memory history evt_123 -w acme
    """
    from episodic.service.editing import version_json

    with errors(), open_memory(ctx) as mem:
        versions = mem.history(ids.memory_id(mem, workspace, memory_id), workspace=workspace)
    if as_json:
        print_json({"versions": [version_json(v) for v in versions]})
        return
    for v in versions:
        mark = (
            "current"
            if v.current
            else f"replaced {v.replaced_at:%Y-%m-%d %H:%M} by {v.replaced_by}"
        )
        written = "as created" if v.written_by is None else f"by {v.written_by}"
        out.print(
            f"v{v.version} ({mark}; written {written}) importance {v.importance:.2f}: "
            f"{escape(v.content)}"
        )


def supersede(
    ctx: typer.Context,
    old_id: Annotated[
        str, typer.Argument(help="The id (or its start) of the memory that is outdated.")
    ],
    new: Annotated[
        str, typer.Argument(help="The replacing memory's id (or its start), or a new text.")
    ],
    workspace: Annotated[str, typer.Option("--workspace", "-w", help="Its workspace.")],
    reason: Annotated[str | None, typer.Option("--reason", help="Why it is replaced.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Replace a memory with a newer one; the old one is kept as superseded.

    It leaves recall unless asked for (--include-superseded, --as-of). Prints the
    memory that replaced it.

    Example: episodic memory supersede evt_123 -w acme "pay subscriptions with card B"
    """
    with errors(), open_memory(ctx) as mem:
        old_id = ids.memory_id(mem, workspace, old_id, field="old_id")
        new = ids.maybe_memory_id(mem, workspace, new, field="new")
        memory = mem.supersede(old_id, new, workspace=workspace, reason=reason)
    if as_json:
        print_json(memory_json(memory))
        return
    out.print(f"{escape(old_id)} superseded by {memory.id}: {escape(memory.content)}")


def supersessions(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(help=ids.MEMORY_ID_HELP)],
    workspace: Annotated[str, typer.Option("--workspace", "-w", help="Its workspace.")],
    as_json: JsonOpt = False,
) -> None:
    """What replaced a memory and what it replaced: who decided, why and when.

    Example: episodic memory supersessions evt_123 -w acme
    """
    with errors(), open_memory(ctx) as mem:
        memory_id = ids.memory_id(mem, workspace, memory_id)
        links = mem.supersessions(memory_id, workspace=workspace)
    if as_json:
        print_json({"supersessions": [link.to_json() for link in links]})
        return
    if not links:
        out.print(f"{escape(memory_id)} neither replaced nor was replaced")
    for link in links:
        undone = (
            ""
            if link.reverted_at is None
            else f" [reverted {link.reverted_at:%Y-%m-%d %H:%M} by {link.reverted_by}]"
        )
        out.print(
            f"{escape(link.old_id)} superseded by {escape(link.new_id)} "
            f"({link.decided_at:%Y-%m-%d %H:%M}, {escape(link.decided_by)}): "
            f"{escape(link.reason)}{escape(undone)}"
        )


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InvalidInput("payload", f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise InvalidInput("payload", "expected a JSON object")
    return value
