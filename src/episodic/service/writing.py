"""The service's write area: the journal (events, chat messages), segmentation into
episodes, and the indexer that embeds what was written.

Bad items never stop a batch: each is reported by position with the field at fault, and
the good ones are stored.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from episodic import metrics
from episodic.config import Settings
from episodic.errors import EmbedderError, IdTaken, InvalidInput, NotFound
from episodic.model import Event, ScopeFilter
from episodic.payloads import check_json
from episodic.service.context import Context
from episodic.write.events import (
    OLD_ID_FIELDS,
    LineError,
    check_says_something,
    parse_event,
    read_jsonl,
)
from episodic.write.indexer import SweepResult
from episodic.write.journal import (
    NOT_ADMITTED_LISTED,
    NotAdmitted,
    NotAdmittedCount,
    admitted_memories,
    count_by_reason,
    sort_events,
)
from episodic.write.messages import MESSAGE_TYPE

# Segmentation loads with the first conversation segmented, not with the service: a
# recall never needs it.
if TYPE_CHECKING:
    from episodic.write.episodes import EpisodeWriter, SegmentReport

INGEST_BATCH = 1000
# A note's or message's fields as its caller names them, by the journal's names.
_CALLER_FIELDS = {
    "summary": "content",
    "payload.role": "role",
    "payload.name": "name",
}
# What one message of ``add_messages`` may say.
MESSAGE_FIELDS = frozenset(
    ("content", "role", "name", "ts", "id", "conversation", "agent", "crew", "resource", "payload")
)


def parse_note(obj: Mapping[str, Any], *, settings: Settings, now: datetime) -> Event:
    """``parse_event`` of a note or a message built from a caller's arguments: a bad
    field is refused under the caller's name for it (``content``, not the journal's
    ``summary``)."""
    try:
        return parse_event(obj, settings=settings, now=now)
    except InvalidInput as exc:
        if exc.field in _CALLER_FIELDS:
            raise InvalidInput(_CALLER_FIELDS[exc.field], exc.message) from None
        raise


def message_event(
    text: str,
    *,
    workspace: str,
    conversation: str | None,
    role: str = "user",
    agent: str | None = None,
    resource: str | None = None,
    crew: str | None = None,
    name: str | None = None,
    ts: datetime | str | None = None,
    id: str | None = None,
    payload: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The journal event (as ``parse_event`` reads it) of one chat message."""
    body: dict[str, Any] = {**(payload or {}), "role": role}
    if name is not None:
        body["name"] = name
    return {
        "workspace": workspace,
        "conversation": conversation,
        "agent": agent,
        "resource": resource,
        "crew": crew,
        "type": MESSAGE_TYPE,
        "summary": text,
        "payload": body,
        "id": id,
        "ts": ts.isoformat() if isinstance(ts, datetime) else ts,
    }


@dataclass(frozen=True, slots=True)
class IndexOne:
    """What embedding one memory on demand did: ``indexed`` False says why in
    ``detail`` (sparse-only, or the embedder failed)."""

    id: str
    indexed: bool
    detail: str

    def __bool__(self) -> bool:
        # Read like ``index_one``'s answer: true when the memory now has its vector.
        return self.indexed

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "indexed": self.indexed, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class SessionEnd:
    """What ending a session did: the episodes its pending messages became (when the
    session is a conversation) and the memories its recalls returned, reinforced once
    each (seed 001's ``reinforcement_count``), by id."""

    session: str
    episodes: int
    reinforced: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"session": self.session, "episodes": self.episodes, "reinforced": self.reinforced}


@dataclass(slots=True)
class IngestReport:
    received: int = 0
    stored: int = 0
    duplicates: int = 0
    admitted: int = 0
    errors: list[LineError] = field(default_factory=list)
    # Old field names the input used (``workspace_id`` for ``workspace`` ...): still read
    # for one minor version; every interface passes the notice on.
    deprecated_fields: list[str] = field(default_factory=list)
    # The events admission refused (stored in the journal, not kept as memories): the
    # first ``NOT_ADMITTED_LISTED`` one by one, all of them counted by reason.
    not_admitted: list[NotAdmitted] = field(default_factory=list)
    not_admitted_by_reason: list[NotAdmittedCount] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_json(self) -> dict[str, Any]:
        return {
            "received": self.received,
            "stored": self.stored,
            "duplicates": self.duplicates,
            "admitted": self.admitted,
            "errors": [
                {"line": e.line, "field": e.field, "message": e.message} for e in self.errors
            ],
            "deprecated_fields": list(self.deprecated_fields),
            "not_admitted": [n.to_json() for n in self.not_admitted],
            "not_admitted_by_reason": [c.to_json() for c in self.not_admitted_by_reason],
        }


def deprecation_note(old_names: Iterable[str]) -> str:
    """What a caller using old field names is told (the same words on every interface)."""
    names = ", ".join(f"{old} -> {OLD_ID_FIELDS[old]}" for old in sorted(old_names))
    return f"deprecated field names (read for one more minor version): {names}"


def _warn_deprecated(report: IngestReport) -> IngestReport:
    if report.deprecated_fields:
        warnings.warn(deprecation_note(report.deprecated_fields), DeprecationWarning, 3)
    return report


@dataclass(slots=True)
class MessagesReport:
    """What ``add_messages`` did: the counts and errors (each at its message's 0-based
    index) of ``ingest``, and each message's id (None for one refused)."""

    ingest: IngestReport
    ids: list[str | None]

    def to_json(self) -> dict[str, Any]:
        report = self.ingest
        return {
            "received": report.received,
            "stored": report.stored,
            "duplicates": report.duplicates,
            "ids": self.ids,
            "errors": [
                {"index": e.line, "field": e.field, "message": e.message} for e in report.errors
            ],
            "not_admitted": [
                {"index": n.line, **{k: v for k, v in n.to_json().items() if k != "line"}}
                for n in report.not_admitted
            ],
        }


def _message_obj(
    item: Mapping[str, Any],
    i: int,
    now: datetime,
    workspace: str,
    conversation: str | None,
    agent: str | None,
    crew: str | None,
    resource: str | None,
) -> dict[str, Any]:
    """Message ``i`` of a batch as its journal event; ``InvalidInput`` for an unknown
    field or no text."""
    if not isinstance(item, Mapping):
        raise InvalidInput("message", "expected an object")
    unknown = sorted(str(k) for k in item if k not in MESSAGE_FIELDS)
    if unknown:
        raise InvalidInput(unknown[0], f"unknown field; use {', '.join(sorted(MESSAGE_FIELDS))}")
    text = item.get("content")
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("content", "required: the message's text")
    payload = item.get("payload")
    if payload is not None and not isinstance(payload, Mapping):
        raise InvalidInput("payload", "expected an object")
    return message_event(
        text,
        workspace=workspace,
        conversation=item.get("conversation", conversation),
        role=item.get("role", "user"),
        agent=item.get("agent", agent),
        resource=item.get("resource", resource),
        crew=item.get("crew", crew),
        name=item.get("name"),
        # Stamped a microsecond apart: a batch keeps its order on both backends.
        ts=item.get("ts") or now + timedelta(microseconds=i),
        id=item.get("id"),
        payload=payload,
    )


class Writing:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    # -- the journal ---------------------------------------------------------------
    def ingest(self, items: Iterable[Mapping[str, Any] | Event]) -> IngestReport:
        """Validate and store events (JSON objects or ``Event``s). Bad items are reported
        by position (1-based) and skipped; the good ones are stored."""
        now = self.ctx.clock()
        settings = self.ctx.settings
        old: set[str] = set()

        def numbered() -> Iterable[tuple[int, Event | LineError]]:
            for n, item in enumerate(items, start=1):
                try:
                    if isinstance(item, Event):
                        # Built by the caller, past the parser: its JSON still gets checked.
                        check_json("payload", item.payload)
                        check_json("refs", item.refs)
                        check_says_something(
                            item.type, item.severity, item.summary, item.payload, item.refs
                        )
                        event = item
                    else:
                        event = parse_event(item, settings=settings, now=now, deprecated=old)
                except InvalidInput as exc:
                    yield n, LineError(n, exc.field, exc.message)
                    continue
                yield n, event

        return _warn_deprecated(self._store_parsed(numbered(), now, deprecated=old))

    def ingest_lines(
        self, lines: Iterable[bytes | str], progress: Callable[[int], None] | None = None
    ) -> IngestReport:
        """Ingest JSON lines; malformed lines are reported by line number and skipped."""
        now = self.ctx.clock()
        old: set[str] = set()
        parsed = read_jsonl(lines, settings=self.ctx.settings, now=now, deprecated=old)
        return _warn_deprecated(self._store_parsed(parsed, now, progress, deprecated=old))

    def add_event(self, obj: Mapping[str, Any]) -> Event:
        """Store one event; raises ``InvalidInput`` naming the bad field."""
        now = self.ctx.clock()
        old: set[str] = set()
        event = parse_event(obj, settings=self.ctx.settings, now=now, deprecated=old)
        if old:
            warnings.warn(deprecation_note(old), DeprecationWarning, 2)
        self.ctx.store.append(
            [event], admitted_memories([event], now, keys=self.ctx.settings.key_expansion)
        )
        return event

    def add_message(
        self,
        content: str | None = None,
        *,
        workspace: str,
        conversation: str,
        role: str = "user",
        agent: str | None = None,
        resource: str | None = None,
        crew: str | None = None,
        name: str | None = None,
        ts: datetime | str | None = None,
        id: str | None = None,
        payload: Mapping[str, Any] | None = None,
        text: str | None = None,
    ) -> Event:
        """Append one chat message to a conversation (``role``: user, assistant, tool or
        system; ``name`` the speaker's name). It is stored at once; segmentation turns
        the conversation's messages into episodes on the next ``segment`` (or indexer
        sweep). ``text`` is the old name of ``content``."""
        if text is not None:
            warnings.warn(
                "add_message(text=...) is deprecated: use content=", DeprecationWarning, 2
            )
            if content is not None and content != text:
                raise InvalidInput("text", "the old name of 'content', which says otherwise")
            content = text
        if content is None:
            raise InvalidInput("content", "required (what was said)")
        obj = message_event(
            content,
            workspace=workspace,
            conversation=conversation,
            role=role,
            agent=agent,
            resource=resource,
            crew=crew,
            name=name,
            ts=ts,
            id=id,
            payload=payload,
        )
        now = self.ctx.clock()
        event = parse_note(obj, settings=self.ctx.settings, now=now)
        self.ctx.store.append(
            [event], admitted_memories([event], now, keys=self.ctx.settings.key_expansion)
        )
        return event

    def add_messages(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        workspace: str,
        conversation: str | None = None,
        agent: str | None = None,
        crew: str | None = None,
        resource: str | None = None,
    ) -> MessagesReport:
        """Append a batch of chat messages, in order. Each is a mapping of
        ``MESSAGE_FIELDS`` (``content`` required; ``conversation``, ``agent``, ``crew``
        and ``resource`` default to the arguments). Messages without a ``ts`` are
        stamped now, a microsecond apart, so they keep the batch's order. A bad message
        is reported by its 0-based index and the field at fault, and skipped; the
        others are stored (as ``POST /v1/events`` does)."""
        now = self.ctx.clock()
        settings = self.ctx.settings
        ids: list[str | None] = []

        def parsed() -> Iterable[tuple[int, Event | LineError]]:
            for i, item in enumerate(messages):
                try:
                    event = parse_note(
                        _message_obj(item, i, now, workspace, conversation, agent, crew, resource),
                        settings=settings,
                        now=now,
                    )
                except InvalidInput as exc:
                    ids.append(None)
                    yield i, LineError(i, exc.field, exc.message)
                    continue
                ids.append(event.id)
                yield i, event

        report = self._store_parsed(parsed(), now)
        refused = {e.line for e in report.errors}
        return MessagesReport(
            ingest=report, ids=[None if i in refused else x for i, x in enumerate(ids)]
        )

    def _store_parsed(
        self,
        parsed: Iterable[tuple[int, Event | LineError]],
        now: datetime,
        progress: Callable[[int], None] | None = None,
        deprecated: set[str] | None = None,
    ) -> IngestReport:
        report = IngestReport()
        batch: list[tuple[int, Event]] = []
        store, keys = self.ctx.store, self.ctx.settings.key_expansion

        def flush() -> None:
            if not batch:
                return
            done = len(batch)
            while batch:
                events = [e for _, e in batch]
                memories, not_kept = sort_events(events, now, keys=keys)
                try:
                    result = store.append(events, memories)
                except IdTaken as exc:
                    # Another workspace's id: that line is refused, the rest go in.
                    refused = set(exc.refused)
                    for line, e in batch:
                        if (e.workspace, e.id) in refused:
                            report.errors.append(LineError(line, exc.field, exc.message))
                    batch[:] = [(n, e) for n, e in batch if (e.workspace, e.id) not in refused]
                    continue
                report.stored += result.events_inserted
                report.duplicates += result.events_duplicate
                report.admitted += result.memories_inserted
                metrics.ingested(
                    result.memories_inserted,
                    result.events_duplicate,
                    [decided.rule for _, decided in not_kept],
                )
                for n, decided in not_kept:
                    line, event = batch[n]
                    count_by_reason(report.not_admitted_by_reason, decided)
                    if len(report.not_admitted) < NOT_ADMITTED_LISTED:
                        report.not_admitted.append(
                            NotAdmitted(
                                line,
                                event.id,
                                event.type,
                                event.severity,
                                decided.rule,
                                decided.reason,
                                decided.fix,
                            )
                        )
                break
            if progress is not None:
                progress(done)
            batch.clear()

        for line, item in parsed:
            report.received += 1
            if isinstance(item, LineError):
                report.errors.append(item)
                if progress is not None:
                    progress(1)
                continue
            batch.append((line, item))
            if len(batch) >= INGEST_BATCH:
                flush()
        flush()
        report.errors.sort(key=lambda e: e.line)
        report.deprecated_fields = sorted(deprecated or ())
        return report

    # -- episodes --------------------------------------------------------------------
    def episode_writer(self) -> EpisodeWriter:
        """Segmentation, description and extraction over pending conversations, with this
        service's embedder, LLM (or offline fallbacks) and clock."""
        from episodic.write.episodes import EpisodeWriter

        return EpisodeWriter(
            self.ctx.store,
            embedder=self.ctx.models.embedder_for_writes(),
            llm=self.ctx.models.llm,
            clock=self.ctx.clock,
            key_expansion=self.ctx.settings.key_expansion,
        )

    def segment(
        self,
        *,
        flush: bool = False,
        workspace: str | None = None,
        conversation: str | None = None,
        outcome: str | None = None,
    ) -> SegmentReport:
        """Turn pending conversation messages into episodes. The last open segment of each
        conversation waits for more messages unless ``flush`` (end of session) is set or
        the conversation has been idle for over 3 hours. ``outcome`` (seed 002: how the
        run that wrote ``conversation`` ended) is kept on each episode closed now. With an
        embedder, the episodes, entries and learnings made are embedded before this
        returns (searchable by vector at once); those the embedder failed on are counted
        in the report's ``unembedded`` and wait for the indexer's next sweep."""
        if outcome is not None:
            if not isinstance(outcome, str):
                raise InvalidInput("outcome", "expected text")
            for name, value in (("workspace", workspace), ("conversation", conversation)):
                if value is None:
                    raise InvalidInput(name, "an outcome belongs to one run's conversation")
        return self.episode_writer().run(
            flush=flush,
            workspace_id=workspace,
            conversation_id=conversation,
            outcome=(outcome or "").strip() or None,
        )

    # -- the indexer -----------------------------------------------------------------
    def index_once(self) -> SweepResult:
        """Embed everything pending now (``episodic index --once``; the CLI then runs
        ``segment``)."""
        indexer = self.ctx.models.indexer()
        if indexer is None:
            return SweepResult(0, 0, "no embedder: sparse-only, nothing to index")
        return indexer.drain()

    def index_one(self, workspace_id: str, memory_id: str) -> bool:
        """Embed one memory now, before the next sweep (a hot path that wants it
        searchable by vector at once); False when sparse-only or the embedder failed (the
        sweeper picks it up later)."""
        indexer = self.ctx.models.indexer()
        return False if indexer is None else indexer.index_one(workspace_id, memory_id)

    def index_one_in(self, flt: ScopeFilter, memory_id: str) -> IndexOne:
        """``index_one`` for a caller that sees ``flt`` (an API key's view, a CLI's
        workspace): ``NotFound`` for a memory it cannot see, and when the memory could
        not be embedded now, why (it is still found by keywords, and the background
        indexer embeds it later)."""
        from episodic.store.sql import scope_allows

        found = self.ctx.store.get_memories(flt.workspace_id, [memory_id])
        if not found or not scope_allows(flt, found[0]):
            raise NotFound(memory_id)
        indexer = self.ctx.models.indexer()
        if indexer is None:
            _, why = self.ctx.models.embedder_status()
            return IndexOne(memory_id, False, f"sparse-only ({why}): found by keywords only")
        if indexer.index_one(flt.workspace_id, memory_id):
            return IndexOne(memory_id, True, f"embedded with {indexer.embedder.model_id}")
        return IndexOne(
            memory_id,
            False,
            "the embedder failed: found by keywords until the background indexer embeds it "
            "(see `episodic doctor`)",
        )

    def embed_ahead(self, content: object) -> None:
        """Embed a note's text before the write that stores it (``remember``), so that
        the write finds its vector in the embedding cache. A server does it before the
        write takes its slot: embedding is most of a note's write, and other writes wait
        for the slot, not for the model. Best effort: anything wrong is left for the
        write itself to find and report, as it would without this."""
        if not isinstance(content, str) or not content.strip():
            return
        try:
            indexer = self.ctx.models.indexer()
            if indexer is not None:
                indexer.embedder.embed_batch([content])
        except EmbedderError:
            return

    def start_indexer(self) -> bool:
        """Start the background sweeper; False (with a warning) when sparse-only."""
        indexer = self.ctx.models.indexer()
        if indexer is None:
            self.ctx.models.warn_if_sparse_only()
            return False
        indexer.start()
        return True

    def reindex(self) -> SweepResult:
        """Drop every vector and embed all memories again with the current embedder; long
        memories' passages are written into the keyword index again first."""
        embedder = self.ctx.models.embedder
        if embedder is None:
            raise InvalidInput(
                "embedder",
                "reindex needs an embedder; set EPISODIC_EMBEDDER (see `episodic doctor`)",
            )
        self.ctx.store.rebuild_text_passages()
        self.ctx.store.clear_vectors()
        self.ctx.models.vectors_cleared(embedder)
        indexer = self.ctx.models.indexer()
        assert indexer is not None
        return indexer.drain()
