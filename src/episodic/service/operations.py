"""The service's operator area: API keys, browsing and editing memories one by one,
remembering a note directly, forgetting, and markdown export/import.

The HTTP API, the MCP server, the operator's page and the CLI all reach these through
``Episodic``; none of them touches the store. A caller acting for an API key sees only
what the key's scope allows, and finds no trace of the rest (``NotFound``, never a hint).
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from episodic.errors import Forbidden, InvalidInput, NotFound, Unauthenticated
from episodic.model import Event, Memory, MemoryStatus, Role, ScopeFilter
from episodic.service.context import Context
from episodic.service.pages import (
    DEFAULT_PAGE,
    MAX_PAGE,
    MAX_Q_CHARS,
    REMEMBER_TYPE,
    SOURCES,
    MemoryPage,
)
from episodic.service.writing import Writing, parse_note
from episodic.store.service import ForgetCounts, ForgetSpec
from episodic.store.sql import scope_allows
from episodic.store.writes import WorkspaceCounts
from episodic.tenancy import (
    KEY_PREFIX,
    ApiKey,
    Principal,
    hash_secret,
    new_secret,
    parse_role,
)
from episodic.write.journal import memory_from_event
from episodic.write.messages import MESSAGE_TYPE, message_keys, message_of

if TYPE_CHECKING:
    from episodic.portable import ExportReport, ImportReport
    from episodic.portable.teaparty import TeaPartyExport

MAX_SECRET_CHARS = 200
# A sign-in to the operator's page: a random id (never the key) that lasts this long.
SESSION_PREFIX = "ep_s_"
SESSION_BYTES = 32
SESSION_LASTS = timedelta(hours=12)
# Who decided a replacement a caller asked for by name.
EXPLICIT = "explicit"


def encode_cursor(m: Memory) -> str:
    raw = json.dumps([m.ts.isoformat(), m.id], separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        ts, memory_id = json.loads(raw)
        if not isinstance(ts, str) or not isinstance(memory_id, str):
            raise ValueError("not a cursor")
        stamp = datetime.fromisoformat(ts)
        if stamp.tzinfo is None:
            raise ValueError("not a cursor")
        return stamp, memory_id
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        raise InvalidInput(
            "cursor", "not a cursor this server gave out; start again without one"
        ) from None


# One message for an unknown and a revoked key (which it was is not the caller's to learn),
# with the next step: keys are shown once, when made.
UNKNOWN_KEY = (
    "unknown or revoked API key: whoever runs the server lists the keys with "
    "`episodic keys list` and makes a new one with `episodic keys create --workspace W`"
)


class Operations:
    def __init__(self, ctx: Context, writing: Writing) -> None:
        self.ctx = ctx
        self.writing = writing
        # Run on each remembered note before ``remember`` returns (the facade checks it
        # for older memories it replaces).
        self.after_remember: Callable[[Memory], object] | None = None

    # -- API keys ----------------------------------------------------------------------
    def create_key(
        self,
        workspace: str,
        *,
        role: Role | str = Role.AGENT,
        agent: str | None = None,
        crew: str | None = None,
        label: str = "",
    ) -> tuple[ApiKey, str]:
        """A new API key for ``workspace``: (the stored key, its secret). The secret is
        shown only here; the store keeps its hash."""
        if not isinstance(workspace, str) or not workspace.strip():
            raise InvalidInput("workspace", "required: a key belongs to one workspace")
        for name, value in (("workspace", workspace), ("agent", agent), ("crew", crew)):
            if value is not None and (not value.strip() or len(value) > 256):
                raise InvalidInput(name, "must be 1-256 characters")
        chosen = parse_role(role)
        # A key is for reading with its role's scope: "own" needs an agent, "crew_shared"
        # a crew. Without one every recall with the key would be refused.
        if chosen is Role.AGENT and not agent:
            raise InvalidInput(
                "agent",
                "an agent key reads as one agent: name it (--agent), or pick role lead/admin",
            )
        if chosen is Role.LEAD and not crew:
            raise InvalidInput(
                "crew", "a lead key reads as one crew: name it (--crew), or pick role admin"
            )
        key_id, secret = new_secret()
        key = ApiKey(
            id=key_id,
            workspace_id=workspace,
            role=chosen,
            agent_id=agent,
            crew_id=crew,
            label=label,
            created_at=self.ctx.clock(),
        )
        self.ctx.store.add_api_key(key, hash_secret(secret))
        return key, secret

    def workspaces(self) -> list[WorkspaceCounts]:
        """Every workspace of the database that holds memories or events, sorted, with
        how many of each."""
        return self.ctx.store.workspace_counts()

    def list_keys(self, workspace: str | None = None) -> list[ApiKey]:
        """Every key (of one workspace), oldest first, revoked ones included."""
        return self.ctx.store.api_keys(workspace)

    def revoke_key(self, key_id: str) -> ApiKey:
        """Revoke a key (a second revoke keeps the first time); ``NotFound`` for no such
        key."""
        key = self.ctx.store.revoke_api_key(key_id, self.ctx.clock())
        if key is None:
            raise NotFound(key_id)
        return key

    def authenticate(self, secret: str | None) -> Principal:
        """The caller behind a bearer secret; ``Unauthenticated`` for a missing, unknown
        or revoked key (the same message for the last two)."""
        if not secret:
            raise Unauthenticated(
                "an API key is required: send Authorization: Bearer <key> (whoever runs the "
                "server creates one with `episodic keys create --workspace W --role admin`)"
            )
        if not secret.startswith(KEY_PREFIX) or len(secret) > MAX_SECRET_CHARS:
            raise Unauthenticated(UNKNOWN_KEY)
        key = self.ctx.store.api_key_by_hash(hash_secret(secret))
        if key is None or not key.active:
            raise Unauthenticated(UNKNOWN_KEY)
        return Principal(key)

    def sign_in(self, secret: str, lasts: timedelta = SESSION_LASTS) -> str:
        """Sign in to the operator's page with an API key: a new random session id for the
        browser's cookie, which stands for the key until it expires (``lasts``), is ended,
        or the key is revoked. Only hashes of the id and the key are stored, so neither
        the cookie nor the database holds the key. ``Unauthenticated`` as ``authenticate``."""
        self.authenticate(secret)
        session = SESSION_PREFIX + secrets.token_urlsafe(SESSION_BYTES)
        now = self.ctx.clock()
        self.ctx.store.add_ui_session(
            hash_secret(session), hash_secret(secret), created_at=now, expires_at=now + lasts
        )
        return session

    def signed_in_caller(self, session: str | None) -> Principal:
        """The caller a session id stands for; ``Unauthenticated`` when it is missing,
        unknown, expired, ended, or its key was revoked."""
        if not session or not session.startswith(SESSION_PREFIX) or len(session) > 100:
            raise Unauthenticated("not signed in, or the sign-in expired: sign in again")
        key_hash = self.ctx.store.ui_session_key(hash_secret(session), self.ctx.clock())
        key = None if key_hash is None else self.ctx.store.api_key_by_hash(key_hash)
        if key is None or not key.active:
            raise Unauthenticated("not signed in, or the sign-in expired: sign in again")
        return Principal(key)

    def sign_out(self, session: str | None) -> None:
        """Sign out: the session id is refused from now on (nothing when it is unknown)."""
        if session and session.startswith(SESSION_PREFIX) and len(session) <= 100:
            self.ctx.store.end_ui_session(hash_secret(session))

    # -- memories one by one -------------------------------------------------------------
    def list_memories(
        self,
        flt: ScopeFilter,
        *,
        status: MemoryStatus | str | None = None,
        limit: int = DEFAULT_PAGE,
        cursor: str | None = None,
        q: str | None = None,
    ) -> MemoryPage:
        """Memories ``flt`` can see, newest first, ``limit`` at a time; pass the page's
        ``next_cursor`` back for the next page. ``q`` keeps only memories holding every
        word of it (keyword search's matching: stemmed, long words also as prefixes,
        stopwords left out); the order and the cursor stay the same."""
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidInput("limit", f"must be 1-{MAX_PAGE}")
        _check_q(q)
        statuses = None if status is None else [_status(status)]
        before = None if cursor is None else decode_cursor(cursor)
        items = self.ctx.store.list_memories(
            flt, limit + 1, statuses=statuses, before=before, matching=q
        )
        more = len(items) > limit
        items = items[:limit]
        return MemoryPage(items, encode_cursor(items[-1]) if more and items else None)

    def count_memories(
        self, flt: ScopeFilter, *, q: str | None = None
    ) -> dict[tuple[str, str], int]:
        """How many memories ``flt`` can see (holding every word of ``q``, as
        ``list_memories`` matches) there are of each (type, status)."""
        _check_q(q)
        return self.ctx.store.count_memories(flt, matching=q)

    def memory(self, flt: ScopeFilter, memory_id: str) -> Memory:
        """One memory ``flt`` can see; ``NotFound`` otherwise (also for another
        workspace's or another agent's id: no existence hints)."""
        found = self.ctx.store.get_memories(flt.workspace_id, [memory_id])
        if not found or not scope_allows(flt, found[0]):
            raise NotFound(memory_id)
        return found[0]

    def memories(self, flt: ScopeFilter, ids: list[str]) -> list[Memory]:
        """Those of ``ids`` that ``flt`` can see, in the order asked."""
        found = self.ctx.store.get_memories(flt.workspace_id, ids)
        return [m for m in found if scope_allows(flt, m)]

    def retire(self, flt: ScopeFilter, memory_id: str) -> Memory:
        """Mark a memory retired: kept, exported, never recalled again."""
        self.memory(flt, memory_id)
        return self.ctx.store.set_status(flt.workspace_id, memory_id, MemoryStatus.RETIRED)

    def remember(
        self,
        content: str,
        *,
        workspace: str,
        agent: str | None = None,
        crew: str | None = None,
        resource: str | None = None,
        conversation: str | None = None,
        type: str = REMEMBER_TYPE,
        importance: float | None = None,
        source: str | None = None,
        evidence: str | None = None,
        payload: Mapping[str, Any] | None = None,
        id: str | None = None,
        replaces: str | None = None,
        reason: str | None = None,
        by: str = EXPLICIT,
    ) -> Memory:
        """Store one memory now (admitted whatever its type; embedded at once when an
        embedder is there). ``source`` and ``evidence`` follow seed 004's provenance.
        ``replaces`` names a memory this one supersedes (kept, out of default recall),
        recorded with ``reason`` as decided by ``by``; otherwise the new memory is
        checked for older ones it replaces."""
        if not isinstance(content, str) or not content.strip():
            raise InvalidInput("content", "required: the text to remember")
        old = None if replaces is None else self.replaceable(workspace, replaces)
        if type == MESSAGE_TYPE:
            raise InvalidInput("type", "messages belong to a conversation; add them as messages")
        if importance is not None and not 0.0 <= importance <= 1.0:
            raise InvalidInput("importance", "must be between 0 and 1")
        if source is not None and source not in SOURCES:
            raise InvalidInput("source", f"use one of {', '.join(SOURCES)}")
        if evidence is not None and not evidence.strip():
            raise InvalidInput("evidence", "give the exact words it rests on, or leave it out")
        body: dict[str, Any] = dict(payload or {})
        if source is not None:
            body["source"] = source
        if evidence is not None:
            body["evidence"] = evidence
        now = self.ctx.clock()
        if old is not None and old.valid_since > now:
            raise InvalidInput("replaces", f"memory {replaces} is newer than this note")
        if not isinstance(by, str) or not by.strip():
            raise InvalidInput("by", "name who decided the replacement")
        event = parse_note(
            {
                "id": id,
                "workspace": workspace,
                "agent": agent,
                "crew": crew,
                "resource": resource,
                "conversation": conversation,
                "type": type,
                "summary": content,
                "payload": body,
                "refs": {"episodic": True},
            },
            settings=self.ctx.settings,
            now=now,
        )
        memory = memory_from_event(event, now, keys=self.ctx.settings.key_expansion)
        if importance is not None:
            memory = replace(memory, base_importance=importance, importance=importance)
        self.ctx.store.append([event], [memory])
        self.writing.index_one(event.workspace, event.id)
        if old is not None:
            why = (reason or "").strip() or "replaced on request"
            self.replace(old, event.id, by=by, reason=why)
            self.ctx.store.mark_supersession_checked([event.id])
        elif self.after_remember is not None:
            self.after_remember(self.ctx.store.get_memory(event.workspace, event.id))
        return self.ctx.store.get_memory(event.workspace, event.id)

    def replaceable(self, workspace: str, memory_id: str, field: str = "replaces") -> Memory:
        """The memory ``memory_id`` if it may be superseded (``InvalidInput`` naming
        ``field`` when it is not active, ``NotFound`` when absent). An episode may be:
        when a message it was made from is replaced it goes with it, so a user may
        replace it by name too."""
        if not isinstance(memory_id, str) or not memory_id.strip():
            raise InvalidInput(field, "the id of the memory being replaced")
        old = self.memory(ScopeFilter(workspace_id=workspace), memory_id)
        if old.status is not MemoryStatus.ACTIVE:
            raise InvalidInput(field, f"memory {memory_id} is {old.status.value}, not active")
        return old

    def replace(self, old: Memory, new_id: str, *, by: str, reason: str) -> None:
        # An explicit request overrules an earlier ``restore`` of the same pair.
        self.ctx.store.supersede(
            old.workspace,
            old.id,
            new_id,
            decided_by=by,
            reason=reason,
            at=self.ctx.clock(),
            overrule=True,
        )

    # -- forgetting ----------------------------------------------------------------------
    def forget(
        self,
        *,
        workspace: str,
        agent: str | None = None,
        resource: str | None = None,
        conversation: str | None = None,
        memory: str | None = None,
        older_than_days: float | None = None,
        all: bool = False,
    ) -> ForgetCounts:
        """Remove a workspace's data (what matches every filter given, or with ``all=True``
        and no filter all of it) from every table it reaches, with what was derived from
        it. ``older_than_days`` keeps what is newer (a retention policy)."""
        if not isinstance(workspace, str) or not workspace.strip():
            raise InvalidInput("workspace", "required: forgetting runs inside one workspace")
        named = any(v is not None for v in (agent, resource, conversation, memory, older_than_days))
        # A call that names nothing (a caller that dropped its filter) must never read as
        # "everything": the whole workspace goes only when asked for by name.
        if not named and all is not True:
            raise InvalidInput(
                "all",
                "name what to forget (agent, resource, conversation, memory, older_than_days), "
                "or pass all=True to forget the whole workspace",
            )
        if named and all:
            raise InvalidInput("all", "all=True forgets the whole workspace; name nothing else")
        for name, value in (
            ("agent", agent),
            ("resource", resource),
            ("conversation", conversation),
            ("memory", memory),
        ):
            if value is not None and not value.strip():
                raise InvalidInput(name, "must not be empty")
        before = None
        if older_than_days is not None:
            if not older_than_days > 0:
                raise InvalidInput("older_than_days", "must be a positive number of days")
            try:
                before = self.ctx.clock() - timedelta(days=older_than_days)
            except OverflowError:
                raise InvalidInput("older_than_days", "too large") from None
        expand = self.ctx.settings.key_expansion

        def rekey(event: Event) -> str:
            if not expand:
                return ""
            message = message_of(event)
            return message_keys(message.name, message.role, message.ts)

        counts = self.ctx.store.forget(
            ForgetSpec(
                workspace_id=workspace,
                agent_id=agent,
                resource_id=resource,
                conversation_id=conversation,
                memory_id=memory,
                before=before,
            ),
            rekey=rekey,
        )
        self.ctx.models.forget_query_cache()
        return counts

    def forget_memory_as(self, caller: Principal, memory_id: str) -> ForgetCounts:
        """Forget one memory on behalf of an API key (or an MCP binding): an admin key any
        memory of its workspace, a key bound to an agent that agent's own memories;
        ``NotFound`` for what the key cannot see, ``Forbidden`` for what it can see but
        does not own."""
        self.owned_by(caller, memory_id, "forget")
        return self.forget(workspace=caller.workspace_id, memory=memory_id)

    def retire_as(self, caller: Principal, memory_id: str) -> Memory:
        """Retire one memory on behalf of a key; the same rule as ``forget_memory_as``."""
        self.owned_by(caller, memory_id, "retire")
        return self.ctx.store.set_status(caller.workspace_id, memory_id, MemoryStatus.RETIRED)

    def owned_by(self, caller: Principal, memory_id: str, verb: str) -> Memory:
        if not caller.is_admin and caller.key.agent_id is None:
            raise Forbidden(f"to {verb} needs an admin key, or a key bound to the memory's agent")
        found = self.memory(caller.reading(), memory_id)
        if not caller.is_admin and found.agent != caller.key.agent_id:
            raise Forbidden(f"this key may {verb} only agent {caller.key.agent_id!r}'s memories")
        return found

    # -- markdown --------------------------------------------------------------------------
    def export_markdown(
        self, directory: str | Path, *, workspace: str | None = None
    ) -> ExportReport:
        """Write memories as markdown files with YAML frontmatter (seed 001)."""
        from episodic.portable import export_markdown

        return export_markdown(self.ctx.store, Path(directory), workspace=workspace)

    def import_markdown(self, directory: str | Path, *, mirror: bool = False) -> ImportReport:
        """Read markdown memories back (only files changed since the last import), then
        embed what changed; ``mirror`` also removes memories no file holds."""
        from episodic.portable import import_markdown

        report = import_markdown(self.ctx.store, Path(directory), mirror=mirror)
        result = self.writing.index_once()
        return replace(report, embedded=result.embedded, embed_error=result.error)

    def export_teaparty(self, directory: str | Path, *, workspace: str) -> TeaPartyExport:
        """Write a workspace's learnings and institutional memories as seed 001's tree
        (``MEMORY.md`` and ``institutional.md`` files by level, several entries each)."""
        from episodic.portable.teaparty import export_teaparty

        return export_teaparty(self.ctx.store, Path(directory), workspace=workspace)

    def import_teaparty(
        self, directory: str | Path, *, workspace: str, prune: str = "retire"
    ) -> ImportReport:
        """Read seed 001's tree into ``workspace`` (each file's level from its place in
        the tree; files unchanged since the last import are not read), then embed what
        changed. An entry deleted from the files since an earlier import is retired with
        the reason "removed from markdown" (``prune="forget"``: forgotten; ``"keep"``:
        left as it is)."""
        from episodic.portable.teaparty_import import import_teaparty

        report = import_teaparty(
            self.ctx.store,
            Path(directory),
            workspace=workspace,
            now=self.ctx.clock(),
            prune=prune,
        )
        result = self.writing.index_once()
        return replace(report, embedded=result.embedded, embed_error=result.error)


def _status(value: MemoryStatus | str) -> MemoryStatus:
    try:
        return MemoryStatus(value)
    except ValueError:
        raise InvalidInput(
            "status", f"unknown status {value!r}; use active, retired, compacted or superseded"
        ) from None


def _check_q(q: object) -> None:
    if q is not None and (not isinstance(q, str) or not q.strip() or len(q) > MAX_Q_CHARS):
        raise InvalidInput("q", f"give 1-{MAX_Q_CHARS} characters of text to search for")
