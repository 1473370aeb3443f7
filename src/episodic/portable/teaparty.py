"""Seed 001's memory tree (TeaParty), read and written as it is.

``DIR`` stands for the home folder: the global files at its root, projects below it::

    DIR/MEMORY.md                                                        global
    DIR/institutional.md                                                 global, standing
    DIR/<project>/MEMORY.md                                              project
    DIR/<project>/institutional.md                                       project, standing
    DIR/<project>/.teaparty/jobs/<job>/institutional.md                  job, standing
    DIR/<project>/.teaparty/jobs/<job>/tasks/<task>/worktree/MEMORY.md   team
    DIR/projects/<project>/.sessions/<ts>/MEMORY.md                      team (legacy)

``<project>`` is the folder's path below ``DIR`` (it may be several folders deep); a
``.teaparty`` folder right under ``DIR`` belongs to no project. No other file is read or
written: a worktree's other files are the team's work, not memories.

A file holds entries one after another, each a frontmatter block between ``---`` lines and
then its text (so the text cannot hold a ``---`` line of its own)::

    ---
    id: 6f1c...            type: declarative|procedural|directive|corrective
    domain: task|team      importance: 0.0-1.0      phase: design (optional)
    status: active|retired|compacted|superseded     reinforcement_count: 2
    last_reinforced: '2026-03-01'        created_at: '2026-02-11'
    ---
    The learning's text.

How a file's place becomes episodic's ids, so that recall's scope levels are seed 001's
(``scoring.scope``: team is the asker's own crew, project what belongs to another crew,
global what belongs to none):

- the project is the ``resource``; its own entries (its root files and its jobs'
  institutional.md) have the crew ``PROJECT_CREW``, which makes them the project level;
- the job is the ``conversation`` (TeaParty's session);
- the task is the ``crew``: its worktree's entries are the team level of a recall with
  ``--crew <task>`` (the asker; with no ``--scope`` the whole tree is searched);
- the global files have no resource, crew or conversation;
- a legacy session (the layout before TeaParty's repository flattening) belongs to its
  project, its ``<ts>`` is the conversation and ``.sessions/<ts>`` the crew: the team
  level, as TeaParty's ``classify_scope()`` reads it, and written back where it was.

``institutional.md`` entries become memories of type ``institutional`` (render always
shows them, apart from the ranked ones); the others are ``learning``s, as the post-session
pass writes them. Fields: ``type`` -> ``payload.learning_type``, ``domain``, ``phase``,
``reinforcement_count`` and ``last_reinforced`` -> the payload fields of the same names
(the ones reinforcement and stage retirement use), ``importance`` -> base importance,
``created_at`` -> the memory's time (a date), TeaParty's optional ``session_id``,
``session_task``, ``promoted_from`` and ``promoted_at`` -> payload, ``agent`` -> the
agent id (episodic's own field), any other field -> ``payload.frontmatter``. A memory a
newer one replaced keeps its entry (``status: superseded``) with episodic's validity
fields after TeaParty's (``valid_to``, ``superseded_by``; ``supersedes`` on the newer
entry, as in the plain layout: ``episodic.portable.validity``), so the tree loses no
history; entries without them read as before. A field
left out takes TeaParty's default (``procedural``, ``team``, 0.5, ``active``, 0); a bad
value is reported with its file, entry line and field, and the other entries import.

Export writes every learning and institutional memory of a workspace to the file its ids
name, in the order the entries arrived. An entry read from a file keeps that file's fields
in its order, and gains only those the memory changed (a reinforcement, a retirement), so
a hand-written tree comes back byte for byte; any other entry is written in the seed's
order. It rewrites those files and touches no other. A memory whose ids name no file (an
agent's learning outside any crew, a crew's with no job) is reported, not written: the
plain layout keeps everything; an entry deleted from the files (retired on import, "removed
from markdown") is not written back. Reading a tree in: ``episodic.portable.
teaparty_import``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from episodic.errors import InvalidInput
from episodic.model import Memory, MemoryStatus
from episodic.portable import (
    PortableStore,
    all_memories,
    write_if_changed,
)
from episodic.portable.fields import (
    holds_surrogate,
    load_frontmatter,
    number_field,
    required,
    text_field,
)
from episodic.portable.validity import (
    VALIDITY_FIELDS,
    read_validity,
    validity_frontmatter,
)
from episodic.scoring.decay import (
    LAST_REINFORCED,
    REINFORCEMENT_COUNT,
    REINFORCEMENT_LIMIT,
    reinforcement_of,
)
from episodic.store.supersession import Supersession
from episodic.write.events import opt_id
from episodic.write.extract import content_hash
from episodic.write.learnings import DOMAINS, LEARNING_TYPES

MEMORY_FILE = "MEMORY.md"
INSTITUTIONAL_FILE = "institutional.md"
HIDDEN, JOBS, TASKS, WORKTREE = ".teaparty", "jobs", "tasks", "worktree"
# The layout before TeaParty's repository flattening, which its classify_scope() still
# reads as the team level: DIR/projects/<project>/.sessions/<ts>/MEMORY.md.
LEGACY_PROJECTS, LEGACY_SESSIONS = "projects", ".sessions"
# The crew of a project's own entries: not a task's, so they rank at the project level.
PROJECT_CREW = "@project"
LEARNING = "learning"
INSTITUTIONAL = "institutional"
SEPARATOR = "---"
# TeaParty's defaults for a field an entry leaves out.
DEFAULT_TYPE, DEFAULT_DOMAIN, DEFAULT_IMPORTANCE = "procedural", "team", 0.5
OPTIONAL_TEXT = ("session_id", "session_task", "promoted_from", "promoted_at")
AGENT = "agent"
EXTRA = "frontmatter"  # payload key for fields this layout does not know
# Payload keys an import writes: the fields the entry's frontmatter had, in its order (so
# export writes those and only the ones the memory changed since), and the file it was
# read from (so an entry deleted from the files can be told from one never written).
HAD = "frontmatter_fields"
FROM_FILE = "markdown_file"
# Why an entry deleted from the files was retired on the next import (seed 001: the
# markdown is the source of truth); export does not write it back.
REMOVED_REASON = "removed from markdown"
RETIRED_REASON, RETIRED_AT = "retired_reason", "retired_at"
# The seed's field order: an entry without a recorded order is written in it, and a field
# the memory gained goes where it stands here.
ORDER = (
    "id", "type", "domain", "importance", "phase", REINFORCEMENT_COUNT, LAST_REINFORCED,
    "status", "created_at", "session_id", "session_task", "promoted_from", "promoted_at",
    AGENT,
)  # fmt: skip
KNOWN = frozenset(
    {"id", "type", "domain", "importance", "phase", "status", "created_at", AGENT}
    | {REINFORCEMENT_COUNT, LAST_REINFORCED, *OPTIONAL_TEXT, *VALIDITY_FIELDS}
)
# Payload keys an entry's file decides; the memory's other payload keys are kept.
GOVERNED = frozenset(
    {"learning_type", "domain", "phase", REINFORCEMENT_COUNT, LAST_REINFORCED, EXTRA}
    | {HAD, FROM_FILE}
    | set(OPTIONAL_TEXT)
)


@dataclass(frozen=True, slots=True)
class Place:
    """Where an entry lives, as episodic's ids (see the module docstring)."""

    project: str | None
    crew: str | None
    job: str | None
    institutional: bool


def _own_crew(project: str | None) -> str | None:
    return PROJECT_CREW if project else None


def place_of_path(rel: PurePosixPath) -> Place | None:
    """The place a file (relative to DIR) stands for; None for any other file."""
    *folders, name = rel.parts
    if name not in (MEMORY_FILE, INSTITUTIONAL_FILE):
        return None
    standing = name == INSTITUTIONAL_FILE
    if len(folders) >= 4 and (folders[0], folders[2]) == (LEGACY_PROJECTS, LEGACY_SESSIONS):
        if standing or len(folders) > 4:
            return None  # the session's other files are its work, not memories
        # A legacy session is its project's team level: the session is the conversation
        # and, as its crew, the team (a crew no task folder can be named).
        return Place(folders[1], f"{LEGACY_SESSIONS}/{folders[3]}", folders[3], False)
    if HIDDEN not in folders:
        project = "/".join(folders) or None
        return Place(project, _own_crew(project), None, standing)
    at = folders.index(HIDDEN)
    project, rest = "/".join(folders[:at]) or None, folders[at + 1 :]
    if standing and len(rest) == 2 and rest[0] == JOBS:
        return Place(project, _own_crew(project), rest[1], True)
    if not standing and len(rest) == 5 and (rest[0], rest[2], rest[4]) == (JOBS, TASKS, WORKTREE):
        return Place(project, rest[3], rest[1], False)
    return None


def path_of_place(place: Place) -> PurePosixPath | None:
    """The file a place names, or None when no file of the tree stands for it."""
    folders = place.project.split("/") if place.project else []
    legacy = f"{LEGACY_SESSIONS}/{place.job}"
    if place.crew == legacy and place.project and not place.institutional:
        path = PurePosixPath(LEGACY_PROJECTS, place.project, LEGACY_SESSIONS, place.job or "")
        path = path / MEMORY_FILE
        return path if place_of_path(path) == place else None
    if place.job is None or place.institutional:
        if place.crew != _own_crew(place.project):
            return None
        if place.job is not None:
            folders += [HIDDEN, JOBS, place.job]
        name = INSTITUTIONAL_FILE if place.institutional else MEMORY_FILE
    else:
        if place.crew in (None, PROJECT_CREW):
            return None
        folders += [HIDDEN, JOBS, place.job, TASKS, place.crew, WORKTREE]
        name = MEMORY_FILE
    if any(not f or f in (".", "..") or "\x00" in f for f in folders):
        return None
    path = PurePosixPath(*folders, name)
    # Ids that would read back as another place (a project holding ".teaparty", a task
    # named like the project crew) have no file of their own.
    return path if place_of_path(path) == place else None


def place_of_memory(m: Memory) -> Place:
    return Place(m.resource, m.crew, m.conversation, m.type == INSTITUTIONAL)


# -- one entry -----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Entry:
    line: int  # of its opening '---', from 1
    head: str
    content: str


def split_entries(text: str) -> tuple[list[Entry], list[tuple[int, str, str]]]:
    """A file's entries, and what could not be read as one: (line, field, message)."""
    lines = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    marks = [i for i, line in enumerate(lines) if line.strip() == SEPARATOR]
    problems: list[tuple[int, str, str]] = []
    stray = [i for i, line in enumerate(lines[: marks[0] if marks else len(lines)]) if line.strip()]
    if stray:
        problems.append(
            (stray[0] + 1, "frontmatter", "text outside any entry: an entry starts with a "
             "'---' line, then its fields, then another '---' line, then its text")
        )  # fmt: skip
    entries: list[Entry] = []
    for k in range(0, len(marks), 2):
        start = marks[k]
        if k + 1 == len(marks):
            problems.append((start + 1, "frontmatter", "no closing '---' line"))
            break
        close = marks[k + 1]
        end = marks[k + 2] if k + 2 < len(marks) else len(lines)
        body = "\n".join(lines[close + 1 : end]).strip()
        entries.append(Entry(start + 1, "\n".join(lines[start + 1 : close]), body))
    return entries, problems


def _choice(head: Mapping[str, Any], name: str, allowed: tuple[str, ...], default: str) -> str:
    value = text_field(head, name)
    if value is None:
        return default
    if value not in allowed:
        raise InvalidInput(name, f"use one of {'|'.join(allowed)}")
    return value


def _day(head: Mapping[str, Any], name: str) -> date | None:
    value = head.get(name)
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        for parse in (date.fromisoformat, lambda v: datetime.fromisoformat(v).date()):
            try:
                return parse(value)
            except ValueError:
                continue
    raise InvalidInput(name, "expected a date, e.g. '2026-03-01'")


def _count(head: Mapping[str, Any]) -> int:
    value = head.get(REINFORCEMENT_COUNT, 0)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(REINFORCEMENT_COUNT, "expected a whole number, 0 or more")
    if not 0 <= value < REINFORCEMENT_LIMIT:
        raise InvalidInput(REINFORCEMENT_COUNT, f"expected 0 or more, below {REINFORCEMENT_LIMIT}")
    return value


def _extra(name: str, value: Any) -> str | int | float | bool:
    """A field this layout does not know, kept as one JSON value every backend reads."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, str | bool):
        return value
    if isinstance(value, int) and abs(value) < 2**63:
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    raise InvalidInput(name, "expected one value (text, a number, a date or true/false)")


def read_entry(
    entry: Entry,
    place: Place,
    workspace: str,
    existing: Mapping[str, Memory],
    arrival: datetime,
    source: str | None = None,
) -> Memory:
    """The memory an entry describes; what the file does not say (its vector's keys,
    review state, sources) is kept from the memory of the same id, if there is one.
    ``source`` is the file it is read from, kept in the payload (``FROM_FILE``)."""
    head = load_frontmatter(entry.head)
    if any(not isinstance(k, str) or not k.strip() for k in head):
        raise InvalidInput("frontmatter", "every field needs a name (text before ':')")
    for key, value in [*head.items(), ("content", entry.content)]:
        if holds_surrogate(value):
            raise InvalidInput(str(key), "contains text that is not valid UTF-8")
    memory_id = opt_id({"id": required(head, "id")}, "id") or ""
    if not entry.content:
        raise InvalidInput("content", "the entry has no text after its frontmatter")
    status_text = _choice(head, "status", tuple(s.value for s in MemoryStatus), "active")
    base = number_field(head, "importance", DEFAULT_IMPORTANCE, low=0.0, high=1.0)
    created, reinforced = _day(head, "created_at"), _day(head, LAST_REINFORCED)
    fields: dict[str, Any] = {
        "learning_type": _choice(head, "type", LEARNING_TYPES, DEFAULT_TYPE),
        "domain": _choice(head, "domain", DOMAINS, DEFAULT_DOMAIN),
        "phase": text_field(head, "phase"),
        REINFORCEMENT_COUNT: _count(head),
        LAST_REINFORCED: None if reinforced is None else reinforced.isoformat(),
        **{name: text_field(head, name) for name in OPTIONAL_TEXT},
        EXTRA: {k: _extra(k, head[k]) for k in sorted(head) if k not in KNOWN} or None,
        HAD: [str(k) for k in head],
        FROM_FILE: source,
    }
    agent = opt_id(head, AGENT)
    old = existing.get(memory_id)
    payload = {k: v for k, v in (old.payload if old else {}).items() if k not in GOVERNED}
    if payload.get(RETIRED_REASON) == REMOVED_REASON:
        # Back in the files: the removal no longer holds (its status is the file's).
        payload.pop(RETIRED_REASON)
        payload.pop(RETIRED_AT, None)
    payload.update({k: v for k, v in fields.items() if v is not None})
    if "status" in payload:  # learnings from sessions mirror their status there
        payload["status"] = status_text
    ts = arrival if old is None else old.ts
    if created is not None and (old is None or old.ts.date() != created):
        ts = datetime(created.year, created.month, created.day, tzinfo=UTC)
    same_text = old is not None and old.content == entry.content
    status = MemoryStatus(status_text)
    valid_from, valid_to, superseded_by = read_validity(head, memory_id, ts, status)
    return Memory(
        id=memory_id,
        workspace=workspace,
        ts=ts,
        type=INSTITUTIONAL if place.institutional else LEARNING,
        content=entry.content,
        severity=old.severity if old else "info",
        payload=payload,
        crew=place.crew,
        agent=agent,
        resource=place.project,
        conversation=place.job,
        base_importance=base,
        importance=old.importance if old and old.base_importance == base else base,
        reference_count=old.reference_count if old else 0,
        last_referenced_at=old.last_referenced_at if old else None,
        status=status,
        source_event_ids=old.source_event_ids if old else (),
        created_at=old.created_at if old else arrival,
        keys=old.keys if old and same_text else "",
        content_hash=content_hash(entry.content),
        stability=old.stability if old else None,
        difficulty=old.difficulty if old else None,
        last_reviewed_at=old.last_reviewed_at if old else None,
        consolidated_at=old.consolidated_at if old else None,
        valid_from=valid_from,
        valid_to=valid_to,
        superseded_by=superseded_by,
    )


def frontmatter(m: Memory, links: Sequence[Supersession] = ()) -> dict[str, Any]:
    """An entry's fields. An entry read from a file keeps that file's fields in its order,
    plus those the memory changed from what their absence meant (a reinforcement, a
    retirement), each where the seed's order puts it; the import date is never added.
    Any other entry gets the seed's order (``ORDER``: id, type, domain, importance,
    phase, reinforcement_count, last_reinforced, status, created_at, its optional ones,
    the agent). Then ours: a memory's validity and what it replaced, when it has them,
    and the fields this layout does not know, as the file had them."""
    p = m.payload
    kind = p.get("learning_type")
    domain = p.get("domain")
    values: dict[str, Any] = {
        "id": m.id,
        "type": kind if kind in LEARNING_TYPES else DEFAULT_TYPE,
        "domain": domain if domain in DOMAINS else DEFAULT_DOMAIN,
        "importance": float(m.base_importance),
        "phase": p.get("phase"),
        REINFORCEMENT_COUNT: reinforcement_of(p),
        LAST_REINFORCED: p.get(LAST_REINFORCED),
        "status": m.status.value,
        "created_at": m.ts.astimezone(UTC).date().isoformat(),
        **{name: p.get(name) for name in OPTIONAL_TEXT},
        AGENT: m.agent,
    }
    values = {k: v for k, v in values.items() if isinstance(v, str | int | float) and v != ""}
    validity = validity_frontmatter(m, links)
    extra = p.get(EXTRA)
    extras = {
        k: v for k, v in (extra.items() if isinstance(extra, Mapping) else ()) if k not in KNOWN
    }
    had = p.get(HAD)
    if isinstance(had, list) and "id" in had:
        every = {**values, **validity, **extras}
        kept = [name for name in had if name in every]
        gained = [n for n in ORDER if n in values and n not in had and _changed(n, values[n])]
        names = _placed(kept, gained)
        names += [n for n in [*validity, *sorted(extras)] if n not in had]
    else:
        names = [n for n in ORDER if n in values] + [*validity, *sorted(extras)]
    return {name: {**values, **validity, **extras}[name] for name in names}


# What a field's absence from an entry means; a field absent from the file is written
# only when the memory's value differs from it (never the import date).
_ABSENT: dict[str, Any] = {
    "type": DEFAULT_TYPE,
    "domain": DEFAULT_DOMAIN,
    "importance": DEFAULT_IMPORTANCE,
    "status": MemoryStatus.ACTIVE.value,
    REINFORCEMENT_COUNT: 0,
}


def _changed(name: str, value: Any) -> bool:
    return name != "created_at" and value != _ABSENT.get(name)


def _placed(kept: list[str], gained: list[str]) -> list[str]:
    """``kept`` in its order, each of ``gained`` inserted after the last field the seed's
    order puts before it."""
    rank = {name: i for i, name in enumerate(ORDER)}
    names = list(kept)
    for name in gained:
        at = 0
        for i, other in enumerate(names):
            if rank.get(other, len(rank)) < rank[name]:
                at = i + 1
        names.insert(at, name)
    return names


def clean_text(content: str) -> str:
    return content.replace("\r\n", "\n").replace("\r", "\n").strip()


def render_entry(m: Memory, links: Sequence[Supersession] = ()) -> str:
    head = yaml.safe_dump(
        frontmatter(m, links),
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=4096,
    )
    return f"{SEPARATOR}\n{head}{SEPARATOR}\n{clean_text(m.content)}\n"


# -- the tree ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Skipped:
    memory_id: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"id": self.memory_id, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class TeaPartyExport:
    directory: str
    workspace: str
    files: int = 0
    written: int = 0
    unchanged: int = 0
    entries: int = 0
    removed: int = 0  # entries deleted from the files (retired on import): not written back
    skipped: list[Skipped] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in self.__slots__ if name != "skipped"}
        out["skipped"] = [s.to_json() for s in self.skipped]
        return out


def check_workspace(workspace: str) -> str:
    checked = opt_id({"workspace": workspace}, "workspace")
    if not checked:
        raise InvalidInput("workspace", "required: the tree is read into (or written from) one")
    return checked


def export_teaparty(store: PortableStore, directory: Path, *, workspace: str) -> TeaPartyExport:
    """Write the workspace's learnings and institutional memories as a TeaParty tree."""
    ws = check_workspace(workspace)
    files: dict[PurePosixPath, list[Memory]] = {}
    skipped: list[Skipped] = []
    removed = 0
    for m in all_memories(store, ws, (LEARNING, INSTITUTIONAL)):
        rel = path_of_place(place_of_memory(m))
        if removed_from_files(m):
            removed += 1
        elif rel is None:
            skipped.append(Skipped(m.id, _unplaced(m)))
        elif any(line.strip() == SEPARATOR for line in clean_text(m.content).split("\n")):
            skipped.append(Skipped(m.id, "its text holds a '---' line, an entry boundary"))
        else:
            files.setdefault(rel, []).append(m)
    written = unchanged = 0
    for rel, memories in sorted(files.items()):
        memories.sort(key=lambda m: (m.created_at or m.ts, m.id))
        links = store.supersessions(ws, [m.id for m in memories])
        text = "\n".join(render_entry(m, links) for m in memories)
        if write_if_changed(directory.joinpath(*rel.parts), text.encode("utf-8")):
            written += 1
        else:
            unchanged += 1
    return TeaPartyExport(
        str(directory),
        ws,
        files=len(files),
        written=written,
        unchanged=unchanged,
        entries=sum(len(ms) for ms in files.values()),
        removed=removed,
        skipped=skipped,
    )


def removed_from_files(m: Memory) -> bool:
    """Whether ``m`` was retired because its entry was deleted from the files."""
    return m.status is MemoryStatus.RETIRED and m.payload.get(RETIRED_REASON) == REMOVED_REASON


def _unplaced(m: Memory) -> str:
    if m.type == INSTITUTIONAL or m.conversation is None:
        return (
            f"no file of the tree stands for crew {m.crew!r} here: an entry without a job "
            f"is global (no crew) or its project's (crew {PROJECT_CREW!r} and a resource)"
        )
    return (
        f"no file of the tree stands for crew {m.crew!r}: a job's entries belong to a "
        "task (its crew) or, institutional, to its project"
    )


def memory_files(directory: Path) -> Iterator[tuple[PurePosixPath, Place, Path]]:
    """The tree's memory files under ``directory``, in path order, with their places."""
    for path in sorted(directory.rglob("*")):
        if path.name not in (MEMORY_FILE, INSTITUTIONAL_FILE) or not path.is_file():
            continue
        rel = PurePosixPath(path.relative_to(directory).as_posix())
        place = place_of_path(rel)
        if place is not None:
            yield rel, place, path
