"""The ``episodic`` command: a thin shell over ``Episodic``.

Each command parses its options, calls one service method and prints the result, as a
table for people or as JSON with ``--json`` for scripts. Errors become one message plus the
next step, and a non-zero exit status.

One module a command group: ``getting_started`` (init, doctor, demo), ``memory`` (ingest, index,
recent, reindex, recall, render, forget), ``service`` (serve, keys, mcp), ``portability``
(export, import, migrate), ``upkeep`` (consolidate, memory health, upkeep), ``edits``
(memory update, history, supersede, supersessions), ``notes`` (memory remember, list), ``journal``
(keyword search of the journal), ``bench`` and ``model`` (pull, status);
``common`` holds what they share. Only this module registers the commands and groups on
the root app, so their order in ``episodic --help`` is set in one place.
"""

from __future__ import annotations

from episodic.cli import (
    backups,
    bench,
    edits,
    getting_started,
    journal,
    memory,
    model,
    notes,
    portability,
    service,
    upkeep,
)
from episodic.cli.common import app


def _register() -> None:
    """Put every command and group on ``app``, in the order ``episodic --help`` lists them
    (typer lists the commands in the order they were added, then the groups)."""
    commands = (
        ("init", getting_started.init),
        ("ingest", memory.ingest),
        ("index", memory.index),
        ("recent", memory.recent),
        ("reindex", memory.reindex),
        ("recall", memory.recall),
        ("render", memory.render),
        ("journal", journal.journal),
        ("doctor", getting_started.doctor),
        ("demo", getting_started.demo),
        ("serve", service.serve),
        ("forget", memory.forget),
        ("export", portability.export),
        ("import", portability.import_),
        ("mcp", service.mcp_command),
        ("migrate", portability.migrate),
        ("backup", backups.backup),
        ("restore", backups.restore),
    )
    for name, command in commands:
        app.command(name)(command)
    groups = (
        ("bench", bench.bench_app),
        ("consolidate", upkeep.consolidate_app),
        ("memory", upkeep.memory_app),
        ("upkeep", upkeep.upkeep_app),
        ("keys", service.keys_app),
        ("model", model.model_app),
    )
    upkeep.memory_app.command("remember")(notes.remember)
    upkeep.memory_app.command("list")(notes.list_memories)
    upkeep.memory_app.command("update")(edits.update)
    upkeep.memory_app.command("history")(edits.history)
    upkeep.memory_app.command("supersede")(edits.supersede)
    upkeep.memory_app.command("supersessions")(edits.supersessions)
    for name, group in groups:
        app.add_typer(group, name=name)


_register()

__all__ = ["app", "main"]


def main() -> None:
    app()
