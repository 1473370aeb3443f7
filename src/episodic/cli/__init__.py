"""The ``episodic`` command: a thin shell over ``Episodic``.

Each command parses its options, calls one service method and prints the result, as a
table for people or as JSON with ``--json`` for scripts. Errors become one message plus the
next step, and a non-zero exit status.

One module a command group: ``getting_started`` (init, doctor, demo), ``memory`` (ingest, index,
recent, reindex, recall, render, forget), ``service`` (serve, keys, mcp), ``portability``
(export, import, migrate), ``upkeep`` (consolidate, memory health, upkeep), ``edits``
(memory update, history, supersede, supersessions), ``decisions`` (memory why, restore),
``notes`` (memory remember, list, show), ``journal``
(keyword search of the journal), ``bench`` and ``model`` (pull, status);
``common`` holds what they share. Only this module registers the commands and groups on
the root app, so their order in ``episodic --help`` is set in one place.

The command modules are imported, and the commands registered, when ``app`` is first
asked for; ``episodic --version`` answers before that, without loading typer, and so do
``recall`` and ``render`` when their options are plain (``episodic.cli.fast_path``) and
``--help`` when typer printed it before in the same setting (``episodic.cli.help_cache``).
"""

from __future__ import annotations

import sys
from functools import cache
from importlib import import_module
from typing import TYPE_CHECKING, Any

from episodic.cli.version import version_text

if TYPE_CHECKING:
    from episodic.cli.common import app


# (name, module of episodic.cli, function or typer group), in the order ``episodic --help``
# lists them (typer lists the commands in the order they were added, then the groups).
COMMANDS = (
    ("init", "getting_started", "init"),
    ("ingest", "memory", "ingest"),
    ("index", "memory", "index"),
    ("recent", "memory", "recent"),
    ("reindex", "memory", "reindex"),
    ("recall", "memory", "recall"),
    ("render", "memory", "render"),
    ("journal", "journal", "journal"),
    ("workspaces", "workspaces", "workspaces"),
    ("doctor", "getting_started", "doctor"),
    ("demo", "getting_started", "demo"),
    ("serve", "service", "serve"),
    ("forget", "memory", "forget"),
    ("export", "portability", "export"),
    ("import", "portability", "import_"),
    ("mcp", "service", "mcp_command"),
    ("migrate", "portability", "migrate"),
    ("backup", "backups", "backup"),
    ("restore", "backups", "restore"),
)
GROUPS = (
    ("bench", "bench", "bench_app"),
    ("consolidate", "upkeep", "consolidate_app"),
    ("memory", "upkeep", "memory_app"),
    ("upkeep", "upkeep", "upkeep_app"),
    ("keys", "service", "keys_app"),
    ("model", "model", "model_app"),
)
# `episodic memory ...`: the commands other modules add to the memory group.
MEMORY_COMMANDS = (
    ("remember", "notes", "remember"),
    ("list", "notes", "list_memories"),
    ("show", "notes", "show"),
    ("update", "edits", "update"),
    ("history", "edits", "history"),
    ("supersede", "edits", "supersede"),
    ("supersessions", "edits", "supersessions"),
    ("why", "decisions", "why"),
    ("restore", "decisions", "restore"),
)


def _part(module: str, name: str) -> Any:
    return getattr(import_module(f"episodic.cli.{module}"), name)


def _register(only: str | None = None) -> Any:
    """The root app with every command and group on it (``only``: with that one alone,
    so a command loads only its own module: what ``main`` runs). A name already on the
    app is not added twice."""
    from episodic.cli.common import app, reflow_help

    done = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    for name, module, attr in COMMANDS:
        if name not in done and only in (None, name):
            app.command(name)(_part(module, attr))
    for name, module, attr in GROUPS:
        if name in done or only not in (None, name):
            continue
        group = _part(module, attr)
        if name == "memory":
            for sub, sub_module, sub_attr in MEMORY_COMMANDS:
                group.command(sub)(_part(sub_module, sub_attr))
        app.add_typer(group, name=name)
    reflow_help(app)
    return app


@cache
def _registered() -> Any:
    return _register()


def _command_named(args: list[str]) -> str | None:
    """The top-level command ``args`` run, when it is one of ours and help was not asked
    for at the root; None otherwise (then every command is registered)."""
    from episodic.cli.common import GLOBAL_FLAGS, GLOBAL_VALUE_OPTIONS, hoist_global_options

    args = hoist_global_options(args)
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] not in (*GLOBAL_FLAGS, *GLOBAL_VALUE_OPTIONS) and "=" not in args[i]:
            return None  # --help, --version or a typo: the root answers, with every command
        i += 2 if args[i] in GLOBAL_VALUE_OPTIONS else 1
    known = {name for name, _, _ in COMMANDS} | {name for name, _, _ in GROUPS}
    return args[i] if i < len(args) and args[i] in known else None


def __getattr__(name: str) -> Any:
    if name == "app":
        return _registered()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["app", "main"]


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        sys.stdout.write(version_text() + "\n")
        return
    if sys.argv[1:] == ["--help"]:
        from episodic.cli import help_cache

        if not help_cache.print_cached(["--help"]):
            help_cache.run_and_keep(["--help"], _registered())
        return
    from episodic.cli.fast_path import run

    if run(sys.argv[1:]):  # recall, render: an agent's hook, run without typer
        return
    named = _command_named(sys.argv[1:])
    (_registered() if named is None else _register(only=named))()
