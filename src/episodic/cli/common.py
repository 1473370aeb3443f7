"""What every ``episodic`` command shares: the root app and its global options (``--db``,
``--verbose``, also accepted after the command), the two consoles, turning service errors
into a message and exit status 2, opening the memory (refusing one that was never
created), JSON output and the option types more than one command group takes.

The command modules import this one; it imports none of them (``episodic.cli`` registers
their commands on ``app``).
"""

from __future__ import annotations

import inspect
import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from episodic.cli.version import version_text
from episodic.config import DatabaseChoice, Settings, default_database
from episodic.errors import EpisodicError, InvalidInput
from episodic.logs import configure_logging

if TYPE_CHECKING:
    from episodic.service import Episodic

# The root's options that may also follow the command (``episodic recall q --db URL``):
# those taking a value, and flags.
GLOBAL_VALUE_OPTIONS = ("--db",)
GLOBAL_FLAGS = ("--verbose", "-v")


def hoist_global_options(args: list[str]) -> list[str]:
    """``args`` with the global options found after the command moved before it, after
    any given there: the last ``--db`` wins, so the command's own beats the global one.
    Nothing after ``--`` is touched."""
    head: list[str] = []
    i = 0
    while i < len(args) and args[i].startswith("-"):
        take = 2 if args[i] in GLOBAL_VALUE_OPTIONS else 1
        head += args[i : i + take]
        i += take
    moved: list[str] = []
    rest: list[str] = []
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest += args[i:]
            break
        if arg in GLOBAL_VALUE_OPTIONS:
            moved += args[i : i + 2]
            i += 2
            continue
        if arg in GLOBAL_FLAGS or arg.startswith(tuple(f"{o}=" for o in GLOBAL_VALUE_OPTIONS)):
            moved.append(arg)
        else:
            rest.append(arg)
        i += 1
    return head + moved + rest


class GlobalOptionsGroup(TyperGroup):
    """The root command: lets the global options follow the command too."""

    # ctx is typer's vendored click Context, which typer does not export under a public name.
    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, hoist_global_options(args))


app = typer.Typer(
    cls=GlobalOptionsGroup,
    name="episodic",
    help="Episodic memory for LLM agents: keep what matters, recall it as untrusted hints.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

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
    ctx.obj = {"db": db}


def database(ctx: typer.Context) -> DatabaseChoice:
    """The database the command uses and why: ``--db``, or else the default one (looked
    for on first need: a command that opens none does not look)."""
    given = ctx.obj["db"]
    if isinstance(given, DatabaseChoice):
        return given
    choice = DatabaseChoice(given, "--db") if given else default_database()
    ctx.obj["db"] = choice
    return choice


@contextmanager
def errors() -> Iterator[None]:
    try:
        yield
    except InvalidInput as exc:
        err.print(f"[red]error:[/red] {escape(f'{exc.field}: {exc.message}')}", markup=True)
        raise typer.Exit(2) from None
    except EpisodicError as exc:
        # Escaped: a message may hold brackets, e.g. the extra in "pip install 'x[server]'".
        err.print(f"[red]error:[/red] {escape(str(exc))}", markup=True)
        raise typer.Exit(2) from None


def open_memory(ctx: typer.Context, *, create: bool = False) -> Episodic:
    """The memory ``--db`` names. Only ``create`` (init, demo) may make a new database:
    any other command refuses one that was never created (``InvalidInput("db")``), so a
    mistyped path or a command run from another folder is not answered from a new, empty
    memory."""
    # Imported here, not with the module: a command that opens no memory (--help,
    # --version, model status) does not pay for the service, the store and the recall engine.
    from episodic.service import Episodic
    from episodic.store import store_exists
    from episodic.store.urls import display_url

    choice = database(ctx)
    settings = Settings.from_env(db_url=choice.url)
    if not create and not store_exists(settings.db_url):
        shown = display_url(settings.db_url)
        init = f"episodic init --db {shown}" if choice.reason == "--db" else "episodic init"
        raise InvalidInput(
            "db",
            f"no episodic database at {shown} ({choice.reason}); create it with "
            f"`{init}`, or give the right one with --db or EPISODIC_DB",
        )
    return Episodic.open(settings.db_url, settings=settings)


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


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 memory``, ``2 memories``: the count with the form of the word it takes."""
    return f"{n} {word if n == 1 else (words or word + 's')}"


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")
