"""``episodic recall`` and ``episodic render`` without building the typer app: the commands
an agent's hook runs before every turn, in a new process each time, where typer, click,
pydantic and rich would take longer to load than the recall takes to run.

``parse`` reads only a command line it is sure of: the command's own options as typer
defines them (``OPTIONS``, kept equal to the typer commands' by a test), each once or
repeated, ``--name value`` or ``--name=value``, and exactly one query. Anything else
(``--help``, a typo, a missing or malformed value, ``--``, a missing ``--workspace``) is
left to typer, so help and errors are typer's own; what is parsed runs the same code
the typer command runs (``episodic.cli.recalling``).
"""

from __future__ import annotations

import logging
import re
from functools import partial
from typing import Any, Literal

from episodic.cli.basics import GLOBAL_FLAGS, GLOBAL_VALUE_OPTIONS, chosen_database, errors
from episodic.cli.basics import hoist_global_options as hoist

# How an option's value is read: a string, a whole number, a repeatable string, or a
# flag that sets the parameter to True or False.
Kind = Literal["str", "int", "list", True, False]

_SHARED: dict[str, tuple[str, Kind]] = {
    "--workspace": ("workspace", "str"),
    "-w": ("workspace", "str"),
    "--agent": ("agent", "str"),
    "--crew": ("crew", "str"),
    "--resource": ("resource", "str"),
    "--scope": ("scope", "str"),
    "-k": ("k", "int"),
    "--policy": ("policy", "str"),
    "--explain": ("explain", True),
    "--type": ("types", "list"),
    "--conversation": ("conversation", "str"),
    "--detail": ("detail", "str"),
    "--mark": ("mark", True),
    "--no-mark": ("mark", False),
    "--as-of": ("as_of", "str"),
    "--include-superseded": ("include_superseded", True),
}
# command -> option -> (parameter, kind)
OPTIONS: dict[str, dict[str, tuple[str, Kind]]] = {
    "recall": {**_SHARED, "--json": ("as_json", True)},
    "render": {**_SHARED, "--max-chars": ("max_chars", "int")},
}
# What each parameter is when its option is not given (None: the service's default).
DEFAULTS: dict[str, dict[str, Any]] = {
    command: {
        name: (False if name in ("explain", "include_superseded", "as_json") else None)
        for name, _ in options.values()
    }
    | {"mark": True}
    for command, options in OPTIONS.items()
}
REQUIRED = ("workspace",)
# A whole number as click reads one without surprises; anything else is typer's to judge.
WHOLE = re.compile(r"0|[1-9][0-9]{0,8}")


def parse(command: str, args: list[str]) -> tuple[str, dict[str, Any]] | None:
    """``(query, parameters)`` from ``args`` (what follows the command), or None when the
    line is not one this parser is sure of."""
    options = OPTIONS[command]
    values = dict(DEFAULTS[command])
    lists: dict[str, list[str]] = {}
    query: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if not arg.startswith("-") or arg == "-":
            query.append(arg)
            continue
        name, eq, inline = arg.partition("=")
        if name not in options or (eq and not name.startswith("--")):
            return None  # --help, --, -k5, a typo: typer answers
        parameter, kind = options[name]
        if isinstance(kind, bool):
            if eq:
                return None
            values[parameter] = kind
            continue
        if eq:
            value = inline
        elif i < len(args) and not args[i].startswith("-"):
            value = args[i]
            i += 1
        else:
            return None  # no value, or one that looks like an option
        if kind == "int":
            if not WHOLE.fullmatch(value):
                return None
            values[parameter] = int(value)
        elif kind == "list":
            lists.setdefault(parameter, []).append(value)
        else:
            values[parameter] = value
    if len(query) != 1 or any(values[name] is None for name in REQUIRED):
        return None
    values.update(lists)
    return query[0], values


def run(argv: list[str]) -> bool:
    """Run ``argv`` (what follows ``episodic``) when it is a hook command this module can
    parse; whether it ran (False: typer is to run it)."""
    args = hoist(argv)
    db: str | None = None
    verbose = False
    i = 0
    while i < len(args) and args[i].startswith("-"):
        name, eq, inline = args[i].partition("=")
        if name in GLOBAL_VALUE_OPTIONS and (eq or i + 1 < len(args)):
            db = inline if eq else args[i + 1]
            i += 1 if eq else 2
        elif args[i] in GLOBAL_FLAGS:
            verbose = True
            i += 1
        else:
            return False
    if i >= len(args) or args[i] not in OPTIONS:
        return False
    command = args[i]
    parsed = parse(command, args[i + 1 :])
    if parsed is None:
        return False
    query, values = parsed
    from episodic.cli import recalling
    from episodic.cli.mode_notice import watch_mode_line
    from episodic.logs import configure_logging

    with errors():  # what the root command does before any command runs
        configure_logging(logging.INFO if verbose else logging.WARNING)
        watch_mode_line()
    _no_metrics()

    choose = partial(chosen_database, db)
    if command == "recall":
        as_json = values.pop("as_json")
        recalling.recall_command(choose, query, values, as_json)
    else:
        recalling.render_command(choose, query, values)
    return True


def _no_metrics() -> None:
    """A one-shot command has no scrape to serve: loading prometheus_client to count its
    one recall would cost it more than the recall."""
    from episodic import metrics

    metrics.turn_off()
