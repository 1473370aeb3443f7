"""What every ``episodic`` command shares: the root app and its global options (``--db``,
``--verbose``, also accepted after the command), the two consoles, turning service errors
into a message and exit status 2, opening the memory (refusing one that was never
created), JSON output and the option types more than one command group takes.

The command modules import this one; it imports none of them (``episodic.cli`` registers
their commands on ``app``).
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

import episodic
from episodic.config import DEFAULT_DB_URL, Settings
from episodic.errors import EpisodicError, InvalidInput
from episodic.logs import configure_logging
from episodic.service import Episodic
from episodic.store import store_exists
from episodic.store.urls import display_url

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
        out.print(f"episodic {episodic.__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    ctx: typer.Context,
    db: Annotated[
        str,
        typer.Option(
            "--db",
            envvar="EPISODIC_DB",
            help="Database URL (before or after the command; the one after wins). Every "
            "command but init and demo needs it to exist: create it with `episodic init`.",
            show_default=True,
        ),
    ] = DEFAULT_DB_URL,
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
    settings = Settings.from_env(db_url=ctx.obj["db"])
    if not create and not store_exists(settings.db_url):
        shown = display_url(settings.db_url)
        raise InvalidInput(
            "db",
            f"no episodic database at {shown}; create it with `episodic init --db {shown}`, "
            "or give the right one with --db or EPISODIC_DB",
        )
    return Episodic.open(settings.db_url, settings=settings)


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")
