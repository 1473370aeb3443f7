"""Markdown as the portable source of truth (seed 001).

``export_markdown`` writes every memory as one markdown file: YAML frontmatter with its
fields, then its content as the body. Files are laid out by scope::

    DIR/<workspace>/<id>.md                              no crew, no agent
    DIR/<workspace>/crews/<crew>/<id>.md                 a crew's
    DIR/<workspace>/crews/<crew>/agents/<agent>/<id>.md  an agent's in a crew
    DIR/<workspace>/agents/<agent>/<id>.md               an agent's outside any crew
    DIR/<workspace>/_journal.jsonl                       the events the memories cite

The folder is only for people browsing; the frontmatter is what counts, so a file moved
to another folder keeps its scope. ``_journal.jsonl`` holds the journal events the
memories cite (with the episode each message went into), so a database rebuilt from the
folder keeps every memory's sources and does not segment those messages again.

``import_markdown`` reads such a folder back. It remembers each file's path, mtime, size
and sha256 (the ``import_files`` table): a re-run reads only files whose mtime or size
moved and writes only those whose content changed. A file edited by hand updates its
memory; changed text drops the memory's vector, and the indexer embeds it again through
the embedding cache (keyed by content hash), so unchanged text is never re-embedded.
Malformed files are reported by path and skipped; the rest import.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

import yaml

from episodic.errors import EpisodicError, InvalidInput
from episodic.model import Event, Memory, MemoryStatus, ScopeFilter, severity_choices, severity_of
from episodic.payloads import check_json
from episodic.portable.fields import (
    holds_surrogate,
    load_frontmatter,
    mapping_field,
    number_field,
    opt_number_field,
    required,
    text_field,
    when_field,
)
from episodic.portable.validity import (
    VALIDITY_FIELDS,
    read_links,
    read_validity,
    validity_frontmatter,
)
from episodic.store.service import ImportedFile, ServiceStore
from episodic.store.supersession import Supersession, SupersessionStore

JOURNAL_FILE = "_journal.jsonl"
FRONTMATTER = "---"
EXPORT_PAGE = 1000
# Frontmatter keys, in the order they are written.
FIELDS = (
    "id",
    "type",
    "workspace",
    "crew",
    "agent",
    "resource",
    "conversation",
    "status",
    "importance",
    "base_importance",
    "reinforcement",
    "last_reinforced",
    "ts",
    *VALIDITY_FIELDS,
    "created_at",
    "severity",
    "source",
    "evidence",
    "keys",
    "content_hash",
    "stability",
    "difficulty",
    "last_reviewed",
    "consolidated_at",
    "sources",
    "payload",
)
_KNOWN = frozenset(FIELDS)


class PortableStore(ServiceStore, SupersessionStore, Protocol):
    """What markdown export and import read and write: memories, their journal events
    and who replaced whom."""

    def supersessions(self, workspace_id: str, memory_ids: Sequence[str]) -> list[Supersession]:
        """The links with either end among ``memory_ids`` (as ``SearchStore``'s)."""
        ...


@dataclass(frozen=True, slots=True)
class FileError:
    path: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.field}: {self.message}"

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "field": self.field, "message": self.message}


@dataclass(frozen=True, slots=True)
class ExportReport:
    directory: str
    workspaces: int = 0
    written: int = 0
    unchanged: int = 0
    removed: int = 0
    events: int = 0

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(frozen=True, slots=True)
class ImportReport:
    directory: str
    files: int = 0
    skipped_unchanged: int = 0  # same mtime and size as last time: not even read
    read: int = 0
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0  # read, but nothing in it differed from the database
    removed: int = 0  # memories no file holds any more (mirror; a tree: retired or forgotten)
    events_inserted: int = 0
    embedded: int = 0
    embed_error: str | None = None
    errors: list[FileError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what was left as it is, and why

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_json(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in self.__slots__ if name != "errors"}
        out["errors"] = [e.to_json() for e in self.errors]
        out["warnings"] = list(self.warnings)
        return out


# -- writing ---------------------------------------------------------------------------
def _segment(value: str) -> str:
    """One path component for an id: readable where safe, percent-encoded otherwise."""
    text = quote(value, safe="@+,=")
    if text.startswith("."):
        text = "%2E" + text[1:]
    return text


def relative_path(m: Memory) -> Path:
    parts = [_segment(m.workspace)]
    if m.crew:
        parts += ["crews", _segment(m.crew)]
    if m.agent:
        parts += ["agents", _segment(m.agent)]
    return Path(*parts, _segment(m.id) + ".md")


def _ts(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat()


def frontmatter(m: Memory, links: Sequence[Supersession] = ()) -> dict[str, Any]:
    payload = dict(m.payload)
    source = payload.pop("source") if isinstance(payload.get("source"), str) else None
    evidence = payload.pop("evidence") if isinstance(payload.get("evidence"), str) else None
    values: dict[str, Any] = {
        "id": m.id,
        "type": m.type,
        "workspace": m.workspace,
        "crew": m.crew,
        "agent": m.agent,
        "resource": m.resource,
        "conversation": m.conversation,
        "status": m.status.value,
        "importance": m.importance,
        "base_importance": m.base_importance,
        "reinforcement": m.reference_count,
        "last_reinforced": _ts(m.last_referenced_at),
        "ts": _ts(m.ts),
        **validity_frontmatter(m, links),
        "created_at": _ts(m.created_at),
        "severity": m.severity,
        "source": source,
        "evidence": evidence,
        "keys": m.keys,
        "content_hash": m.content_hash,
        "stability": m.stability,
        "difficulty": m.difficulty,
        "last_reviewed": _ts(m.last_reviewed_at),
        "consolidated_at": _ts(m.consolidated_at),
        "sources": list(m.source_event_ids),
        "payload": payload,
    }
    # Leave out what is empty, so hand-written files can be short too.
    return {k: v for k, v in values.items() if v is not None and v != "" and v != [] and v != {}}


def render_file(m: Memory, links: Sequence[Supersession] = ()) -> str:
    """A memory's file; ``links`` are the supersessions it is the newer end of."""
    head = yaml.safe_dump(
        frontmatter(m, links),
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=100,
    )
    return f"{FRONTMATTER}\n{head}{FRONTMATTER}\n{m.content}\n"


def write_if_changed(path: Path, data: bytes) -> bool:
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return True


def event_json(event: Event, episode_id: str | None) -> dict[str, Any]:
    return {
        "id": event.id,
        "workspace": event.workspace,
        "crew": event.crew,
        "agent": event.agent,
        "resource": event.resource,
        "conversation": event.conversation,
        "ts": _ts(event.ts),
        "type": event.type,
        "severity": event.severity,
        "summary": event.summary,
        "payload": dict(event.payload),
        "refs": dict(event.refs),
        "episode_id": episode_id,
    }


def export_markdown(
    store: PortableStore, directory: Path, *, workspace: str | None = None
) -> ExportReport:
    """Write the memories of one workspace (or all) under ``directory``. Markdown files of
    an exported workspace that no memory wrote are removed, so the folder is a snapshot."""
    names = [workspace] if workspace is not None else store.workspaces()
    written = unchanged = removed = events = 0
    for ws in names:
        root = directory / _segment(ws)
        kept: set[Path] = set()
        cited: list[str] = []
        for page in memory_pages(store, ws):
            links = store.supersessions(ws, [m.id for m in page])
            for m in page:
                path = directory / relative_path(m)
                if path in kept:
                    raise EpisodicError(f"two memories map to {path}; ids must differ")
                kept.add(path)
                cited.extend(m.source_event_ids)
                if write_if_changed(path, render_file(m, links).encode("utf-8")):
                    written += 1
                else:
                    unchanged += 1
        rows = store.events_with_episodes(ws, cited)
        events += len(rows)
        journal = "".join(
            json.dumps(event_json(e, ep), ensure_ascii=False, sort_keys=True) + "\n"
            for e, ep in rows
        )
        if rows or (root / JOURNAL_FILE).exists():
            write_if_changed(root / JOURNAL_FILE, journal.encode("utf-8"))
        if root.is_dir():
            for stale in root.rglob("*.md"):
                if stale not in kept:
                    stale.unlink()
                    removed += 1
    return ExportReport(
        str(directory),
        len(names),
        written=written,
        unchanged=unchanged,
        removed=removed,
        events=events,
    )


def all_memories(
    store: ServiceStore, workspace: str, types: tuple[str, ...] | None = None
) -> Iterator[Memory]:
    """Every memory of a workspace (of those types), any status, page by page."""
    for page in memory_pages(store, workspace, types):
        yield from page


def memory_pages(
    store: ServiceStore, workspace: str, types: tuple[str, ...] | None = None
) -> Iterator[list[Memory]]:
    """``all_memories`` a page at a time (superseded ones too: history is exported)."""
    before: tuple[datetime, str] | None = None
    while True:
        page = store.list_memories(ScopeFilter(workspace, types=types), EXPORT_PAGE, before=before)
        if page:
            yield page
        if len(page) < EXPORT_PAGE:
            return
        before = (page[-1].ts, page[-1].id)


# -- reading ---------------------------------------------------------------------------
def parse_file(text: str) -> Memory:
    """A memory from a markdown file's text; ``InvalidInput`` naming the field."""
    return parse_document(text)[0]


def parse_document(text: str) -> tuple[Memory, list[Supersession]]:
    """A memory and the supersessions it is the newer end of, from a markdown file's
    text; ``InvalidInput`` naming the field."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.startswith(FRONTMATTER + "\n"):
        raise InvalidInput("frontmatter", "the file must start with a '---' line")
    end = text.find("\n" + FRONTMATTER + "\n", len(FRONTMATTER))
    if end < 0:
        if text.endswith("\n" + FRONTMATTER):
            end, body = len(text) - len(FRONTMATTER) - 1, ""
        else:
            raise InvalidInput("frontmatter", "no closing '---' line")
    else:
        body = text[end + len(FRONTMATTER) + 2 :]
    head = load_frontmatter(text[len(FRONTMATTER) + 1 : end + 1])
    unknown = sorted("" if k is None else str(k) for k in head if k not in _KNOWN)
    if unknown and not unknown[0].strip():
        # A key of nothing ("? " or "'': x" in YAML) cannot name the field at fault.
        raise InvalidInput(
            "frontmatter", f"a field with an empty name; known fields are {', '.join(FIELDS)}"
        )
    if unknown:
        raise InvalidInput(unknown[0], f"unknown field; known fields are {', '.join(FIELDS)}")
    content = body[:-1] if body.endswith("\n") else body
    if not content.strip():
        raise InvalidInput("content", "the body (the memory's text) is empty")
    # YAML's "\ud800" escape gives a lone surrogate, which no database can store.
    for key, value in [*head.items(), ("content", content)]:
        if holds_surrogate(value):
            raise InvalidInput(str(key), "contains text that is not valid UTF-8")
    payload = mapping_field(head, "payload")
    for name in ("source", "evidence"):
        value = text_field(head, name)
        if value is not None:
            payload[name] = value
    created = when_field(head, "created_at")
    importance = number_field(head, "importance", 0.5, low=0.0, high=1.0)
    severity = severity_of(text_field(head, "severity") or "info")
    if severity is None:
        raise InvalidInput("severity", f"use one of {severity_choices()}")
    status = text_field(head, "status") or MemoryStatus.ACTIVE.value
    try:
        parsed_status = MemoryStatus(status)
    except ValueError:
        raise InvalidInput("status", "use active, retired, compacted or superseded") from None
    sources = head.get("sources", [])
    if not isinstance(sources, list) or not all(isinstance(s, str) and s for s in sources):
        raise InvalidInput("sources", "expected a list of event ids")
    reinforcement = head.get("reinforcement", 0)
    if isinstance(reinforcement, bool) or not isinstance(reinforcement, int) or reinforcement < 0:
        raise InvalidInput("reinforcement", "expected a whole number, 0 or more")
    memory_id = required(head, "id")
    ts = when_field(head, "ts") or created or datetime.now(UTC)
    valid_from, valid_to, superseded_by = read_validity(head, memory_id, ts, parsed_status)
    memory = Memory(
        id=memory_id,
        workspace=required(head, "workspace"),
        ts=ts,
        type=text_field(head, "type") or "note",
        content=content,
        severity=severity,
        payload=payload,
        # An empty scope id is none (as in the file layout, which has no empty folder).
        crew=text_field(head, "crew") or None,
        agent=text_field(head, "agent") or None,
        resource=text_field(head, "resource") or None,
        conversation=text_field(head, "conversation") or None,
        base_importance=number_field(head, "base_importance", importance, low=0.0, high=1.0),
        importance=importance,
        reference_count=reinforcement,
        last_referenced_at=when_field(head, "last_reinforced"),
        status=parsed_status,
        source_event_ids=tuple(sources),
        created_at=created,
        keys=text_field(head, "keys") or "",
        content_hash=text_field(head, "content_hash"),
        stability=opt_number_field(head, "stability"),
        difficulty=opt_number_field(head, "difficulty"),
        last_reviewed_at=when_field(head, "last_reviewed"),
        consolidated_at=when_field(head, "consolidated_at"),
        valid_from=valid_from,
        valid_to=valid_to,
        superseded_by=superseded_by,
    )
    return memory, read_links(head, memory)


def _either(obj: Mapping[str, Any], name: str) -> Any:
    """A journal line's id field, under its name or the one exports used before (``_id``)."""
    value = obj.get(name)
    return obj.get(name + "_id") if value is None else value


def _event(obj: Any) -> tuple[Event, str | None]:
    if not isinstance(obj, Mapping):
        raise InvalidInput("event", "expected a JSON object")
    try:
        ts = datetime.fromisoformat(str(obj["ts"]))
        event = Event(
            id=str(obj["id"]),
            workspace=str(_either(obj, "workspace") or obj["workspace"]),
            ts=ts if ts.tzinfo else ts.replace(tzinfo=UTC),
            type=str(obj["type"]),
            severity=str(obj.get("severity", "info")),
            summary=str(obj.get("summary", "")),
            payload=dict(obj.get("payload") or {}),
            refs=dict(obj.get("refs") or {}),
            crew=_either(obj, "crew"),
            agent=_either(obj, "agent"),
            resource=_either(obj, "resource"),
            conversation=_either(obj, "conversation"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInput("event", f"malformed journal line: {exc}") from None
    check_json("payload", event.payload)
    check_json("refs", event.refs)
    episode = obj.get("episode_id")
    return event, episode if isinstance(episode, str) else None


class _Journals:
    """Each workspace's ``_journal.jsonl``, read once when a memory needs it."""

    def __init__(self, directory: Path, report: list[FileError]) -> None:
        self.directory = directory
        self.errors = report
        self._by_ws: dict[str, dict[str, tuple[Event, str | None]]] = {}

    def events_for(self, m: Memory) -> list[tuple[Event, str | None]]:
        if not m.source_event_ids:
            return []
        ws = m.workspace
        if ws not in self._by_ws:
            self._by_ws[ws] = self._load(ws)
        known = self._by_ws[ws]
        return [known[i] for i in m.source_event_ids if i in known]

    def _load(self, ws: str) -> dict[str, tuple[Event, str | None]]:
        path = self.directory / _segment(ws) / JOURNAL_FILE
        found: dict[str, tuple[Event, str | None]] = {}
        if not path.is_file():
            return found
        rel = path.relative_to(self.directory).as_posix()
        with path.open(encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    event, episode = _event(json.loads(line))
                except (json.JSONDecodeError, InvalidInput) as exc:
                    self.errors.append(FileError(f"{rel}:{n}", "event", str(exc)))
                    continue
                if event.workspace == ws:
                    found[event.id] = (event, episode)
        return found


def restore_links(
    store: PortableStore,
    read: list[tuple[str, Memory, list[Supersession]]],
    errors: list[FileError],
) -> None:
    """Write the supersessions the files read name, and take the memories they hold off
    the list checked for what they replace: an export carries the decisions already
    taken, so importing one never decides them again."""
    for rel, memory, replaced in read:
        try:
            if replaced:
                store.restore_supersessions(memory.workspace, replaced)
        except InvalidInput as exc:
            errors.append(FileError(rel, exc.field, exc.message))
    store.mark_supersession_checked([memory.id for _, memory, _ in read])


def import_markdown(store: PortableStore, directory: Path, *, mirror: bool = False) -> ImportReport:
    """Import the markdown memories under ``directory``; with ``mirror``, memories of the
    workspaces found there that no file holds (any more) are removed too (their events
    stay)."""
    if not directory.is_dir():
        raise InvalidInput("DIR", f"no such directory: {directory}")
    root = str(directory.resolve())
    state = store.import_state(root)
    errors: list[FileError] = []
    journals = _Journals(directory, errors)
    counts = dict.fromkeys(
        ("files", "skipped", "read", "inserted", "updated", "unchanged", "events"), 0
    )
    seen: set[str] = set()
    ids_by_ws: dict[str, set[str]] = {}
    owner: dict[str, str] = {}
    fresh: list[ImportedFile] = []
    # Written once every file is in: the memory a link replaced may come later.
    links: list[tuple[str, Memory, list[Supersession]]] = []
    for path in sorted(directory.rglob("*.md")):
        if not path.is_file():
            continue
        rel = path.relative_to(directory).as_posix()
        seen.add(rel)
        counts["files"] += 1
        stat = path.stat()
        prev = state.get(rel)
        if prev is not None and (prev.mtime_ns, prev.size) == (stat.st_mtime_ns, stat.st_size):
            counts["skipped"] += 1
            if prev.workspace_id and prev.memory_id:
                ids_by_ws.setdefault(prev.workspace_id, set()).add(prev.memory_id)
                owner.setdefault(prev.memory_id, rel)
            continue
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        if prev is not None and prev.sha256 == digest:
            counts["skipped"] += 1
            fresh.append(
                ImportedFile(
                    rel, stat.st_mtime_ns, stat.st_size, digest, prev.workspace_id, prev.memory_id
                )
            )
            if prev.workspace_id and prev.memory_id:
                ids_by_ws.setdefault(prev.workspace_id, set()).add(prev.memory_id)
                owner.setdefault(prev.memory_id, rel)
            continue
        counts["read"] += 1
        try:
            memory, replaced = parse_document(data.decode("utf-8"))
            if memory.id in owner and owner[memory.id] != rel:
                raise InvalidInput("id", f"{memory.id} is also the id of {owner[memory.id]}")
            result = store.restore(memory, journals.events_for(memory))
        except UnicodeDecodeError:
            errors.append(FileError(rel, "file", "not UTF-8 text"))
            continue
        except InvalidInput as exc:
            errors.append(FileError(rel, exc.field, exc.message))
            continue
        owner[memory.id] = rel
        links.append((rel, memory, replaced))
        ids_by_ws.setdefault(memory.workspace, set()).add(memory.id)
        counts["inserted"] += result.inserted
        counts["updated"] += result.updated
        counts["unchanged"] += result.unchanged
        counts["events"] += result.events_inserted
        fresh.append(
            ImportedFile(rel, stat.st_mtime_ns, stat.st_size, digest, memory.workspace, memory.id)
        )
    restore_links(store, links, errors)
    gone = [p for p in state if p not in seen]
    store.save_import_state(root, fresh, gone)
    removed = 0
    # A file that failed to parse may hold any memory: remove nothing until it is fixed.
    if mirror and not errors:
        for ws, keep in ids_by_ws.items():
            drop = [m.id for m in all_memories(store, ws) if m.id not in keep]
            removed += store.delete_memories(ws, drop)
    return ImportReport(
        str(directory),
        files=counts["files"],
        skipped_unchanged=counts["skipped"],
        read=counts["read"],
        inserted=counts["inserted"],
        updated=counts["updated"],
        unchanged=counts["unchanged"],
        removed=removed,
        events_inserted=counts["events"],
        errors=errors,
    )
