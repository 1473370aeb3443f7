"""What ``episodic recall`` and ``episodic render`` do once their options are parsed: ask
the memory (or, with ``EPISODIC_URL`` set, the server it names) and print the answer.

Without typer: the typer commands (``episodic.cli.memory``) and the fast path that runs
an agent's hook without building the app (``episodic.cli.fast_path``) both call these, so
the two print the same.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from episodic.cli.basics import (
    errors,
    escape,
    listed,
    open_memory_at,
    plural,
    print_json,
    say_on_stderr,
    say_on_stdout,
    stderr_console,
    stdout_console,
    warn_if_unknown,
)
from episodic.cli.mode_notice import repeats_mode_line

if TYPE_CHECKING:
    from rich.console import Console

    from episodic.cli.remote import Remote
    from episodic.config import DatabaseChoice
    from episodic.model import Hit
    from episodic.recall.result import RecallResult
    from episodic.recall.trace import Trace

# The database a command uses, looked for only when it opens one (not with EPISODIC_URL).
Choose = Callable[[], "DatabaseChoice"]


def recall_command(choose: Choose, query: str, options: dict[str, Any], as_json: bool) -> None:
    """``episodic recall``: the hits for ``query`` as text, or as JSON."""
    args = _given(options)
    remote = server()
    if remote is not None:
        with errors(), _reached(remote):
            result = remote.recall(query, args)
    else:
        with errors(), open_memory_at(choose()) as mem:
            result = mem.recall(query, **args)
            if not result.hits and warn_if_unknown(mem, args["workspace"]):
                result = _said(result, args["workspace"])
    _print_warnings(result)
    if as_json:
        hits = [h.to_json() for h in result.hits]
        standing = [h.to_json() for h in result.institutional]
        if result.trace is not None:
            print_json({"hits": hits, "institutional": standing, "trace": result.trace.to_json()})
        else:
            print_json(hits + standing)  # the standing ones after the k hits
        return
    print_hits(result)
    if result.trace is not None:
        print_trace(result.trace, stdout_console())


def render_command(choose: Choose, query: str, options: dict[str, Any]) -> None:
    """``episodic render``: the prompt-ready block for ``query`` (nothing when empty)."""
    args = _given(options)
    remote = server()
    if remote is not None:
        with errors(), _reached(remote):
            block, result = remote.render_explained(query, args)
    else:
        with errors(), open_memory_at(choose()) as mem:
            block, result = mem.render_explained(query, **args)
            if not block and warn_if_unknown(mem, args["workspace"]):
                result = _said(result, args["workspace"])
    _print_warnings(result)
    if block:
        sys.stdout.write(block + "\n")
    elif sys.stderr.isatty():
        # A hook reads an empty stdout as "nothing to inject"; a person at a terminal
        # would see no answer at all without this line.
        say_on_stderr("nothing recalled (`episodic recall ... --explain` shows what was dropped)")
    if result.trace is not None:
        print_trace(result.trace, stderr_console())


def split_types(values: list[str] | None) -> dict[str, Any]:
    """``--type`` values as recall takes them: memory types, and seed 001's learning
    types (a learning-type filter)."""
    from episodic.llm.prompts import LEARNING_TYPES

    kinds = [v for v in values or [] if v not in LEARNING_TYPES]
    learning = [v for v in values or [] if v in LEARNING_TYPES]
    return {"types": kinds or None, "learning_type": learning or None}


def server() -> Remote | None:
    """The server ``EPISODIC_URL`` names, asked with the key ``EPISODIC_KEY``; None when
    the variable is unset (the command opens the database itself)."""
    url = os.environ.get("EPISODIC_URL", "").strip()
    if not url:
        return None
    from episodic.cli.remote import Remote

    return Remote(url, os.environ.get("EPISODIC_KEY") or None)


@contextmanager
def _reached(remote: Remote) -> Iterator[None]:
    """A server that cannot be reached is an error naming the variable that chose it, and
    one that asks for a key the command did not send names the variable that sends it."""
    from episodic.client.answers import ServerError
    from episodic.errors import Unauthenticated

    try:
        yield
    except Unauthenticated as exc:
        if remote.key:
            raise
        raise Unauthenticated(
            f"{exc}; set EPISODIC_KEY to it, and the command sends it to the server "
            "EPISODIC_URL names"
        ) from None
    except ServerError as exc:
        if exc.status:
            raise
        raise ServerError(
            0,
            exc.code,
            f"{exc} (EPISODIC_URL); start it with `episodic serve`, or unset EPISODIC_URL "
            "to read the database directly",
        ) from None


def _given(options: dict[str, Any]) -> dict[str, Any]:
    """The options given (not None), ``--type`` split into memory and learning types:
    the service and the server take the same names."""
    given = dict(options)
    given.update(split_types(given.pop("types", None)))
    return {name: value for name, value in given.items() if value is not None}


def _said(result: RecallResult, workspace: str) -> RecallResult:
    """``result`` less the service's note that ``workspace`` is empty: the command said
    it already, with the workspaces there are."""
    from dataclasses import replace

    mine = f"workspace {workspace!r} holds "
    return replace(result, warnings=[w for w in result.warnings if not w.startswith(mine)])


def _print_warnings(result: RecallResult) -> None:
    for warning in result.warnings:
        if not repeats_mode_line(warning):  # said in full already, with its fix
            say_on_stderr(f"[yellow]warning:[/yellow] {warning}")


def print_trace(trace: Trace, console: Console) -> None:
    console.print(
        f"[bold]trace[/bold] policy {trace.policy}; lexical query {trace.lexical_query!r}"
    )
    if trace.time_windows:
        console.print("time: " + "; ".join(trace.time_windows))
    from episodic.recall.trace import WEIGHTLESS_NOTE, shown_score, weightless

    for name, rows in trace.stages.items():
        shown = ", ".join(
            f"{r.rank}. {r.memory_id} ({shown_score(name, r.score)})" for r in rows[:10]
        )
        more = f" … +{len(rows) - 10}" if len(rows) > 10 else ""
        console.print(f"  {name}: {shown or '(none)'}{more}", markup=False)
        if any(weightless(name, r.score) for r in rows[:10]):
            console.print(f"    ({WEIGHTLESS_NOTE})", markup=False)
    for d in trace.dropped:
        extra = f" ({d.detail})" if d.detail else ""
        console.print(f"  dropped {d.memory_id} at {d.stage}: {d.reason}{extra}")


def print_hits(result: RecallResult) -> None:
    """Each hit as a heading line (its id whole, as `memory update`, `memory history` and
    `forget --memory` take it; score, age, type, agent) over its text at the terminal's
    full width: a table's columns would cut the id or squeeze the text at 80 columns.
    Institutional memories come first, apart: they are always loaded."""
    from episodic.recall.render import detail_line, relative_age, score_text

    # To a pipe (an agent's hook) these are written as rich would, without loading it.
    say = say_on_stdout
    if result.institutional:
        say("[bold]standing (institutional), always loaded:[/bold]")
        for hit in result.institutional:
            say(f"  - {hit.id}  {hit.memory.content}", markup=False)
    if not result.hits:
        # Asked without the trace, say where to look: nothing matched, or what was dropped.
        why = "" if result.trace is not None else " (--explain shows what each stage kept)"
        say("no memories recalled" + why)
        return
    found = plural(len(result.hits), "memory", "memories")
    say(f"[bold]{found}[/bold] ({result.mode}, policy {escape(result.policy)})")
    for i, hit in enumerate(result.hits, start=1):
        say(
            f"\n[bold]{i}. {escape(hit.memory.id)}[/bold]  score {score_text(hit.score)} · "
            f"{relative_age(hit.age_seconds)} · {escape(_kind(hit))} · "
            f"agent {escape(hit.memory.agent or '-')}"
        )
        m = hit.memory
        # A long memory: the passage that matched (a few hundred words), and how to read
        # all of it.
        say(f"   {listed(hit.shown, m.id, m.workspace, len(m.content), None)}", markup=False)
        if hit.details:
            say(f"   {hit.moment or hit.memory.type}, as it happened:", markup=False)
            for event in hit.details:
                say(f"     > {detail_line(event)}", markup=False)


def _kind(hit: Hit) -> str:
    """The type column: the type, and an episode's moment or what replaced a memory."""
    from episodic.recall.render import superseded_label

    notes = [n for n in (hit.moment, superseded_label(hit)) if n]
    return hit.memory.type + (f" ({'; '.join(notes)})" if notes else "")
