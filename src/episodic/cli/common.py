"""What every ``episodic`` command shares: the root app and its ``--db`` option, the two
consoles, turning service errors into a message and exit status 2, opening the memory,
JSON output and the option types more than one command group takes.

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

from episodic.config import DEFAULT_DB_URL, Settings
from episodic.errors import EpisodicError, InvalidInput
from episodic.service import Episodic

app = typer.Typer(
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


@app.callback()
def _root(
    ctx: typer.Context,
    db: Annotated[
        str,
        typer.Option("--db", envvar="EPISODIC_DB", help="Database URL.", show_default=True),
    ] = DEFAULT_DB_URL,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log more.")] = False,
) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
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


def open_memory(ctx: typer.Context) -> Episodic:
    settings = Settings.from_env(db_url=ctx.obj["db"])
    return Episodic.open(settings.db_url, settings=settings)


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")
