"""What the ``episodic`` commands share that needs no typer: the global options and where
they may stand, the two consoles (made on first use, so a command that prints plain text
never loads rich), service errors as one message and exit status 2, opening the memory,
JSON output and plurals.

``episodic.cli.common`` builds the typer app on these; ``episodic.cli.fast_path`` runs the
hook commands (``recall``, ``render``) with them and without typer.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING, Any

from episodic.config import DatabaseChoice, Settings, default_database
from episodic.errors import EpisodicError, InvalidInput

if TYPE_CHECKING:
    from rich.console import Console

    from episodic.service import Episodic
    from episodic.store.writes import WorkspaceCounts

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


@cache
def stdout_console() -> Console:
    """The console for results (rich: markup, and colour on a terminal)."""
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


@cache
def stderr_console() -> Console:
    """The console for warnings and errors."""
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


# The markup the commands' own messages use; a message with nothing else rich would read
# (other tags, escapes, emoji codes, control characters a terminal acts on) needs no rich.
_OWN_TAGS = re.compile(r"\[/?(?:red|yellow|bold)\]")
_RICH_WOULD_READ = re.compile(r"[\[\\\x00-\x09\x0b-\x1f\x7f]|:\S*?:")
# What rich reads in a text printed without markup: emoji codes and control characters.
_RICH_WOULD_READ_TEXT = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]|:\S*?:")
# Variables that make rich treat a pipe as a terminal (colour, cursor codes).
_TERMINAL_VARIABLES = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")


# A memory's text in a listing: an assistant's answer or a log runs to thousands of
# characters, and a page of them is unreadable; `memory show` prints one whole, and
# --json keeps every character. (A recall's hit shows the passage that matched.)
LISTED_CHARS = 400


def listed(
    text: str,
    memory_id: str,
    workspace: str,
    whole: int | None = None,
    limit: int | None = LISTED_CHARS,
) -> str:
    """``text`` as a listing shows it: up to ``limit`` characters (None: all of it), and
    when the memory (``whole`` characters long, else ``text``'s length) is longer than
    what is shown, how long it is and the command that prints it whole."""
    length = len(text) if whole is None else whole
    if limit is not None and len(text) > limit:
        text = text[:limit].rstrip() + " …"
    elif length <= len(text):
        return text
    return f"{text} ({length:,} characters; whole: episodic memory show {memory_id} -w {workspace})"


def say_on_stderr(markup: str) -> None:
    """Print ``markup`` on stderr as ``stderr_console`` would. To a pipe or a file (an
    agent's hook), a message whose only markup is colour and bold is the text without
    its tags: it is written as that, without loading rich."""
    _say(markup, True, sys.stderr, stderr_console)


def say_on_stdout(text: str, *, markup: bool = True) -> None:
    """Print ``text`` on stdout as ``stdout_console`` would (``markup=False``: its
    brackets as they are), without loading rich when it would print the same: to a pipe
    or a file, with no markup but colour and bold."""
    _say(text, markup, sys.stdout, stdout_console)


def _say(text: str, markup: bool, stream: Any, console: Callable[[], Console]) -> None:
    shown = _OWN_TAGS.sub("", text) if markup else text
    would_read = _RICH_WOULD_READ if markup else _RICH_WOULD_READ_TEXT
    plain = not would_read.search(shown) and not any(os.environ.get(v) for v in _TERMINAL_VARIABLES)
    if plain and not stream.isatty():
        stream.write(shown + "\n")
        stream.flush()
    else:
        console().print(text, markup=markup)


def escape(text: str) -> str:
    """``text`` with rich markup escaped, to print it as it is."""
    if "[" not in text and not text.endswith("\\"):
        return text  # nothing rich would read as a tag or an escape
    from rich.markup import escape as rich_escape

    return rich_escape(text)


@contextmanager
def errors() -> Iterator[None]:
    """A service error becomes one line on stderr and exit status 2."""
    try:
        yield
    except InvalidInput as exc:
        say_on_stderr(f"[red]error:[/red] {escape(f'{exc.field}: {exc.message}')}")
        raise SystemExit(2) from None
    except EpisodicError as exc:
        # Escaped: a message may hold brackets, e.g. the extra in "pip install 'x[server]'".
        say_on_stderr(f"[red]error:[/red] {escape(str(exc))}")
        raise SystemExit(2) from None


def chosen_database(given: str | None) -> DatabaseChoice:
    """The database ``--db`` names, or else the default one, and why."""
    return DatabaseChoice(given, "--db") if given else default_database()


def open_memory_at(choice: DatabaseChoice, *, create: bool = False) -> Episodic:
    """The memory at ``choice``. Only ``create`` (init, demo) may make a new database:
    any other command refuses one that was never created (``InvalidInput("db")``), so a
    mistyped path or a command run from another folder is not answered from a new, empty
    memory."""
    # Imported here, not with the module: a command that opens no memory (--help,
    # --version, model status) does not pay for the service, the store and the recall engine.
    from episodic.service import Episodic

    settings = Settings.from_env(db_url=choice.url)
    if not create:
        missing = never_created(choice)
        if missing is not None:
            raise InvalidInput("db", missing)
    return Episodic.open(settings.db_url, settings=settings)


def never_created(choice: DatabaseChoice) -> str | None:
    """Why the database ``choice`` names cannot be used yet, and how to create it; None
    when it exists (created by ``episodic init``)."""
    from episodic.store import store_exists
    from episodic.store.urls import display_url

    if store_exists(choice.url):
        return None
    shown = display_url(choice.url)
    init = f"episodic init --db {shown}" if choice.reason == "--db" else "episodic init"
    return (
        f"no episodic database at {shown} ({choice.reason}); create it with "
        f"`{init}`, or give the right one with --db or EPISODIC_DB"
    )


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 memory``, ``2 memories``: the count with the form of the word it takes."""
    return f"{n} {word if n == 1 else (words or word + 's')}"


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")


def counted(w: WorkspaceCounts) -> str:
    return (
        f"{w.workspace} ({plural(w.memories, 'memory', 'memories')}, {plural(w.events, 'event')})"
    )


def warn_if_unknown(mem: Episodic, workspace: str) -> bool:
    """Warn on stderr, naming the workspaces there are, when ``workspace`` holds no memory
    and no event (a typo answers "nothing" otherwise, and looks like an empty memory), or
    how to search its events when it holds events alone (none was kept as a memory);
    whether it warned."""
    found = mem.workspaces()
    mine = next((w for w in found if w.workspace == workspace), None)
    if mine is not None and mine.memories == 0:
        # Journal events alone: what was sent is there, but none of it was kept to recall.
        events = plural(mine.events, "journal event")
        say_on_stderr(
            f"[yellow]warning:[/yellow] workspace {escape(repr(workspace))} holds no memories, "
            f"only {events} (`episodic journal WORDS -w {escape(workspace)}` searches them); "
            "an event is kept as a memory when its type is one remembered or it sets "
            "refs.episodic (`episodic ingest` said which it did not keep)"
        )
        return True
    if mine is not None:
        return False
    there = "; ".join(counted(w) for w in found) if found else "none yet"
    say_on_stderr(
        f"[yellow]warning:[/yellow] workspace {escape(repr(workspace))} holds no memories "
        f"and no events; the workspaces in this database: {escape(there)} "
        "(`episodic workspaces`)"
    )
    return True


def name_a_workspace(choice: DatabaseChoice, *, remote: bool = False) -> str:
    """What a command that needs a workspace adds to "Missing option '--workspace'": the
    workspaces the database holds, or why none can be listed. ``remote``: the command
    would ask the server ``EPISODIC_URL`` names, whose workspaces are its own."""
    if remote:
        return "The command asks the server EPISODIC_URL names: name one of its workspaces."
    missing = never_created(choice)
    if missing is not None:
        return f"The workspaces cannot be listed: {missing}."
    with open_memory_at(choice) as mem:
        found = mem.workspaces()
    if not found:
        return (
            "This database holds no workspace yet: `episodic ingest` or "
            "`episodic memory remember` makes one."
        )
    return f"The workspaces in this database: {'; '.join(counted(w) for w in found)}."
