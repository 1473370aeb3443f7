"""What every ``episodic`` command shares: the root app and its global options (``--db``,
``--verbose``, also accepted after the command), the option types more than one command
group takes, whole-sentence help, and (from ``episodic.cli.basics``, which needs no typer)
the two consoles, service errors as a message and exit status 2, opening the memory
(refusing one that was never created) and JSON output.

The command modules import this one; it imports none of them (``episodic.cli`` registers
their commands on ``app``).
"""

from __future__ import annotations

import inspect
import logging
import os
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from episodic.cli.basics import (
    GLOBAL_FLAGS,
    GLOBAL_VALUE_OPTIONS,
    chosen_database,
    errors,
    hoist_global_options,
    name_a_workspace,
    open_memory_at,
    plural,
    print_json,
    stderr_console,
    stdout_console,
)
from episodic.cli.mode_notice import watch_mode_line
from episodic.cli.version import version_text
from episodic.config import DatabaseChoice
from episodic.errors import EpisodicError
from episodic.logs import configure_logging

if TYPE_CHECKING:
    from episodic.service import Episodic

__all__ = [
    "GLOBAL_FLAGS",
    "GLOBAL_VALUE_OPTIONS",
    "ConversationOpt",
    "JsonOpt",
    "app",
    "database",
    "err",
    "errors",
    "hoist_global_options",
    "open_memory",
    "out",
    "plural",
    "print_json",
    "reflow_help",
    "whole_sentences",
    "workspaces_hint",
]


class GlobalOptionsGroup(TyperGroup):
    """The root command: lets the global options follow the command too, and answers a
    missing ``--workspace`` (on any command, in any group) with the workspaces the
    database holds rather than typer's bare "Missing option"."""

    # ctx is typer's vendored click Context, which typer does not export under a public name.
    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, hoist_global_options(args))

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except typer.BadParameter as exc:
            # typer raises its MissingParameter (a BadParameter it does not export) before
            # the command runs; its message is what follows "Missing option ...".
            param = getattr(exc, "param", None)
            if type(exc).__name__ == "MissingParameter" and getattr(param, "name", None) == (
                "workspace"
            ):
                command = getattr(getattr(exc, "ctx", None), "info_name", None)
                remote = command in ("recall", "render") and bool(
                    os.environ.get("EPISODIC_URL", "").strip()
                )
                exc.message = workspaces_hint(ctx, remote=remote)
            raise


def workspaces_hint(ctx: Any, *, remote: bool = False) -> str:
    """For a command given no workspace: the workspaces the database holds
    (``name_a_workspace``), or why they cannot be listed."""
    try:
        return name_a_workspace(database(ctx), remote=remote)
    except EpisodicError as error:
        return f"The workspaces cannot be listed: {error}."


app = typer.Typer(
    cls=GlobalOptionsGroup,
    name="episodic",
    help="Episodic memory for LLM agents: keep what matters, recall it as untrusted hints.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = stdout_console()
err = stderr_console()

JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
ConversationOpt = Annotated[
    str | None, typer.Option("--conversation", help="Narrow to one conversation.")
]


def _print_version(value: bool) -> None:
    if value:
        out.print(version_text())
        raise typer.Exit(0)


@app.callback()
def _root(
    ctx: typer.Context,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            help="Database URL (before or after the command; the one after wins). Default: "
            "EPISODIC_DB, else memory.db in the nearest .episodic/ folder up from here, else "
            "in the user's data folder (`episodic doctor` says which). Every command but init "
            "and demo needs it to exist: create it with `episodic init`.",
            show_default=False,
        ),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log more.")] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    with errors():  # EPISODIC_LOG_FORMAT=json: one JSON object per line
        configure_logging(logging.INFO if verbose else logging.WARNING)
        watch_mode_line()
    ctx.obj = {"db": db}


def database(ctx: typer.Context) -> DatabaseChoice:
    """The database the command uses and why: ``--db``, or else the default one (looked
    for on first need: a command that opens none does not look)."""
    given = ctx.obj["db"]
    if isinstance(given, DatabaseChoice):
        return given
    choice = chosen_database(given)
    ctx.obj["db"] = choice
    return choice


def open_memory(ctx: typer.Context, *, create: bool = False) -> Episodic:
    """The memory ``--db`` names (``open_memory_at``: only ``create`` may make one)."""
    return open_memory_at(database(ctx), create=create)


def whole_sentences(text: str) -> str:
    """``text`` (a docstring) with each paragraph's lines joined, so a help text never
    breaks a sentence where the source line ended: only a blank line (a new paragraph) and
    a line starting ``Example:`` keep their break; the terminal wraps the rest."""
    paragraphs = []
    for paragraph in inspect.cleandoc(text).split("\n\n"):
        lines = [line.strip() for line in paragraph.splitlines() if line.strip()]
        joined: list[str] = []
        for line in lines:
            if joined and not line.startswith("Example:"):
                joined[-1] += " " + line
            else:
                joined.append(line)
        paragraphs.append("\n".join(joined))
    return "\n\n".join(paragraphs)


def reflow_help(root: typer.Typer) -> None:
    """Every help text of ``root``'s commands and groups, and theirs, as whole sentences
    (``whole_sentences``)."""
    if root.info.help:
        root.info.help = whole_sentences(str(root.info.help))
    for command in root.registered_commands:
        text = command.help or (command.callback.__doc__ if command.callback else None)
        if text:
            command.help = whole_sentences(str(text))
    for group in root.registered_groups:
        if group.typer_instance is not None:
            reflow_help(group.typer_instance)
        if group.help:
            group.help = whole_sentences(str(group.help))
