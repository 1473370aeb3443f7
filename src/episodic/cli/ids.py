"""Shortened ids on the command line, as git takes a commit's: every command that takes a
memory's or a key's id also takes the start of one, when it names one id alone.

A whole id that exists is always itself. Otherwise the text is read as the start of an
id: it needs ``MIN_PREFIX`` characters after the id's type prefix (``evt_``, ``ep_``,
``k_``), so that a one-letter typo does not land on some memory; a start shared by
several ids is refused with the candidates listed (exit status 2), and one matching
nothing says so, naming the workspace searched.

Only the command line reads starts: the HTTP API, MCP and the Python API take whole ids
(a program has the id it was given, and a prefix that is unique today may not be
tomorrow).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from episodic.errors import InvalidInput

if TYPE_CHECKING:
    from episodic.service import Episodic

# Characters an id's start needs after its type prefix: 4 hex digits leave 1 chance in
# 65,536 that a typo names another memory of a workspace with one memory of that type.
MIN_PREFIX = 4
# The help of an argument that is a memory's id.
MEMORY_ID_HELP = "The memory's id, or enough of its start to name it alone."
# Candidates listed when a start is shared (the count says how many more there are).
SHOWN_CANDIDATES = 8

# An id's type prefix: a short word and "_" or "-" (evt_, ep_, k_, mem0-).
_TYPE_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9]{0,7}[_-]")


def type_prefix(text: str) -> str:
    """The type prefix ``text`` starts with (``evt_``), or "" when it has none."""
    match = _TYPE_PREFIX.match(text)
    return match.group(0) if match else ""


def long_enough(text: str) -> bool:
    """Whether ``text`` is long enough to be read as the start of an id."""
    return len(text) - len(type_prefix(text)) >= MIN_PREFIX


def pick(
    given: str, candidates: Sequence[str], *, field: str, what: str, where: str, more: bool
) -> str | None:
    """The one id of ``candidates`` (those that start with ``given``, sorted; ``more``:
    there were others past them) that ``given`` names; None when there is none;
    ``InvalidInput(field)`` listing them when there are several."""
    if len(candidates) == 1 and not more:
        return candidates[0]
    if not candidates:
        return None
    count = f"more than {len(candidates)}" if more else str(len(candidates))
    raise InvalidInput(
        field,
        f"{given!r} is the start of {count} {what} ids{where}: {', '.join(candidates)}"
        f"{', ...' if more else ''}; give more of the id",
    )


def memory_id(mem: Episodic, workspace: str, given: str, *, field: str = "id") -> str:
    """The id of the memory of ``workspace`` that ``given`` names: itself when a memory
    has that id, else the one memory whose id starts with it. ``InvalidInput(field)``
    when several start with it, or it names none (the workspaces there are are said
    when ``workspace`` holds nothing)."""
    if not given or mem.store.get_memories(workspace, [given]):
        return given  # an empty id is refused by the service, naming its own field
    where = f" in workspace {workspace!r}"
    if long_enough(given):
        found = mem.store.memory_ids_starting(workspace, given, SHOWN_CANDIDATES + 1)
        chosen = pick(
            given,
            found[:SHOWN_CANDIDATES],
            field=field,
            what="memory",
            where=where,
            more=len(found) > SHOWN_CANDIDATES,
        )
        if chosen is not None:
            return chosen
    from episodic.cli.basics import warn_if_unknown

    warn_if_unknown(mem, workspace)
    raise InvalidInput(field, f"no memory{where} has the id {given!r}{_or_start(given)}")


def maybe_memory_id(mem: Episodic, workspace: str, given: str, *, field: str) -> str:
    """``given`` as ``memory_id`` reads it when it names a memory, else ``given`` as it
    is: for an argument that is a memory's id or a new text (``memory supersede``). A
    start shared by several memories is still refused."""
    if not given or any(c.isspace() for c in given) or not long_enough(given):
        return given
    if mem.store.get_memories(workspace, [given]):
        return given
    found = mem.store.memory_ids_starting(workspace, given, SHOWN_CANDIDATES + 1)
    chosen = pick(
        given,
        found[:SHOWN_CANDIDATES],
        field=field,
        what="memory",
        where=f" in workspace {workspace!r}",
        more=len(found) > SHOWN_CANDIDATES,
    )
    return given if chosen is None else chosen


def key_id(mem: Episodic, given: str) -> str:
    """The id of the API key ``given`` names: itself, or the one key whose id starts
    with it; ``InvalidInput("key")`` when several start with it or none is named."""
    ids = sorted(k.id for k in mem.list_keys(None))
    if given in ids:
        return given
    if long_enough(given):
        found = [i for i in ids if i.startswith(given)]
        chosen = pick(
            given,
            found[:SHOWN_CANDIDATES],
            field="key",
            what="key",
            where="",
            more=len(found) > SHOWN_CANDIDATES,
        )
        if chosen is not None:
            return chosen
    raise InvalidInput(
        "key", f"no API key has the id {given!r}{_or_start(given)} (`episodic keys list`)"
    )


def _or_start(given: str) -> str:
    if long_enough(given):
        return " or an id starting with it"
    prefix = type_prefix(given)
    after = f" after {prefix!r}" if prefix else ""
    return f" (an id's start needs {MIN_PREFIX} characters{after})"
