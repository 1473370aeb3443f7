"""Mem0's open-source ``Memory`` API over ``episodic.Episodic``: swap the import, keep the code.

    from episodic.compat.mem0 import Memory      # was: from mem0 import Memory

    m = Memory()
    m.add("I'm vegetarian", user_id="alice")
    m.search("what can I cook?", user_id="alice")

The names map one to one: ``user_id`` is the resource ``user:<id>``, ``agent_id`` the
agent, ``run_id`` the conversation, and one ``Memory`` works in one workspace
(``default`` unless given). Results have Mem0's shape: ``{"results": [{"id", "memory",
"hash", "metadata", "created_at", "updated_at", "user_id", "agent_id", "run_id"}]}``
(``score`` too from ``search``). Mem0's metadata is kept in the memory's payload under
``metadata``.

``add`` with ``infer=True`` (the default) runs episodic's conversation path: the
messages are stored, segmented into an episode at once, entries are drawn from it and
checked for older memories they replace. Its events say what episodic decided: ``ADD``
for each memory stored, ``DELETE`` for an older memory a new one superseded (kept, out
of default recall, reversible), ``NONE`` for a candidate left out because it restates
what is known. With ``infer=False`` each message is stored as a memory as it is.
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from types import TracebackType
from typing import Any

from episodic.compat.mem0_config import DEFAULT_WORKSPACE, settings_from_config, warn_unused
from episodic.errors import InvalidInput, NotFound
from episodic.model import Memory as StoredMemory
from episodic.model import MemoryStatus, ScopeFilter
from episodic.service import Episodic
from episodic.write.extract import DUPLICATE, KNOWN_HASH, RESTATES_KNOWN, SIMILAR

__all__ = ["DEFAULT_WORKSPACE", "AsyncMemory", "Memory", "settings_from_config"]

USER_PREFIX = "user:"
# The conversation an ``add`` without ``run_id`` writes to: its own, so that flushing it
# closes only these messages; never reported back as a run id.
HIDDEN_RUN = "mem0-add-"
SEARCH_CAP = 50  # episodic recalls at most 50 hits
PAGE = 200  # list_memories' largest page
DEFAULT_LIMIT = 100  # Mem0's default for search and get_all
# Why a candidate was dropped that means "episodic already knows this" (Mem0's NONE).
KNOWN = frozenset({DUPLICATE, KNOWN_HASH, RESTATES_KNOWN, SIMILAR})
EDITOR = "mem0-compat"


def _iso(at: datetime | None) -> str | None:
    return None if at is None else at.isoformat()


def content_md5(text: str) -> str:
    """Mem0's ``hash`` of a memory: the md5 hex digest of its text (an identifier, not
    security)."""
    return hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()


def user_of(resource: str | None) -> str | None:
    if resource is not None and resource.startswith(USER_PREFIX):
        return resource[len(USER_PREFIX) :]
    return None


def run_of(conversation: str | None) -> str | None:
    if conversation is None or conversation.startswith(HIDDEN_RUN):
        return None
    return conversation


def metadata_of(memory: StoredMemory) -> dict[str, Any] | None:
    meta = memory.payload.get("metadata")
    return dict(meta) if isinstance(meta, Mapping) else None


class Memory:
    """Mem0's ``Memory`` over one episodic database and workspace. ``Memory()`` opens
    the database every episodic command would (``EPISODIC_DB``, else the nearest
    ``.episodic/`` folder, else the user's data folder) with the bundled local
    embedder: no key, no network."""

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        workspace: str | None = None,
        episodic: Episodic | None = None,
    ) -> None:
        settings, ws = settings_from_config(config or {})
        self.workspace = workspace or ws
        self._owned = episodic is None
        self.episodic = episodic if episodic is not None else Episodic.open(settings=settings)

    @classmethod
    def from_config(cls, config_dict: Mapping[str, Any]) -> Memory:
        return cls(config_dict)

    def close(self) -> None:
        if self._owned:
            self.episodic.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- the shape of a result ---------------------------------------------------------
    def _item(self, memory: StoredMemory, score: float | None = None) -> dict[str, Any]:
        created = memory.ts  # when it was said (an import keeps Mem0's created_at)
        versions = self.episodic.history(memory.id, workspace=self.workspace)
        updated: str | None = _iso(versions[0].written_at) if len(versions) > 1 else None
        if updated is None:
            imported = memory.payload.get("mem0")
            if isinstance(imported, Mapping) and isinstance(imported.get("updated_at"), str):
                updated = imported["updated_at"]
        item: dict[str, Any] = {
            "id": memory.id,
            "memory": memory.content,
            "hash": content_md5(memory.content),
            "metadata": metadata_of(memory),
            "created_at": _iso(created),
            "updated_at": updated or _iso(created),
            "user_id": user_of(memory.resource),
            "agent_id": memory.agent,
            "run_id": run_of(memory.conversation),
        }
        if score is not None:
            item["score"] = score
        return item

    def _scope(
        self,
        user_id: str | None,
        agent_id: str | None,
        run_id: str | None,
        filters: Mapping[str, Any] | None,
    ) -> tuple[ScopeFilter, dict[str, Any]]:
        """The episodic filter of Mem0's ids (given as arguments or inside ``filters``,
        as newer Mem0 versions take them), and the metadata filters left."""
        rest = dict(filters or {})
        if not isinstance(filters, Mapping | None):
            raise InvalidInput("filters", "expected a dict")
        ids = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        for key in ids:
            if key in rest:
                value = rest.pop(key)
                if ids[key] is not None and ids[key] != value:
                    raise InvalidInput(key, "given twice with different values")
                ids[key] = value
        for key, value in ids.items():
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise InvalidInput(key, "expected a non-empty string")
        for key, value in rest.items():
            if isinstance(value, Mapping) or key in ("AND", "OR", "NOT"):
                raise InvalidInput(f"filters.{key}", "only equality on a metadata key is supported")
        user = ids["user_id"]
        flt = ScopeFilter(
            workspace_id=self.workspace,
            agent_id=ids["agent_id"],
            resource_id=None if user is None else USER_PREFIX + user,
            conversation_id=ids["run_id"],
        )
        return flt, rest

    @staticmethod
    def _matches(memory: StoredMemory, flt: ScopeFilter, meta: Mapping[str, Any]) -> bool:
        if flt.agent_id is not None and memory.agent != flt.agent_id:
            return False
        if flt.resource_id is not None and memory.resource != flt.resource_id:
            return False
        if flt.conversation_id is not None and memory.conversation != flt.conversation_id:
            return False
        have = metadata_of(memory) or {}
        return all(k in have and have[k] == v for k, v in meta.items())

    # -- Mem0's methods ----------------------------------------------------------------
    def add(
        self,
        messages: str | Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        infer: bool = True,
        **unused: Any,
    ) -> dict[str, Any]:
        """Store ``messages`` (a string, one ``{"role", "content"}`` message or a list of
        them) for the ids given (at least one). Returns ``{"results": [{"id", "memory",
        "event"}]}``, one per decision episodic made."""
        warn_unused(sorted(unused), "arguments")
        flt, _ = self._scope(user_id, agent_id, run_id, None)
        if user_id is None and agent_id is None and run_id is None:
            raise InvalidInput("user_id", "give at least one of user_id, agent_id, run_id")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InvalidInput("metadata", "expected a dict")
        batch = _messages(messages)
        extra = {} if not metadata else {"metadata": dict(metadata)}
        if infer:
            return {"results": self._add_inferred(batch, flt, extra)}
        events: list[dict[str, Any]] = []
        for message in batch:
            stored = self.episodic.remember(
                message["content"],
                workspace=self.workspace,
                agent=flt.agent_id,
                resource=flt.resource_id,
                conversation=flt.conversation_id,
                payload={**extra, "role": message.get("role", "user")},
            )
            events.append({"id": stored.id, "memory": stored.content, "event": "ADD"})
            events.extend(self._replaced_by([stored.id]))
        return {"results": events}

    def _add_inferred(
        self, batch: list[dict[str, Any]], flt: ScopeFilter, extra: Mapping[str, Any]
    ) -> list[dict[str, Any]]:
        conversation = flt.conversation_id or HIDDEN_RUN + uuid.uuid4().hex
        where = ScopeFilter(workspace_id=self.workspace, conversation_id=conversation)
        before = {m.id for m in self._all(where, None)}
        items = [{**m, "payload": dict(extra)} if extra else m for m in batch]
        report = self.episodic.add_messages(
            items,
            workspace=self.workspace,
            conversation=conversation,
            agent=flt.agent_id,
            resource=flt.resource_id,
        )
        if report.ingest.errors:
            first = report.ingest.errors[0]
            raise InvalidInput(f"messages[{first.line}].{first.field}", first.message)
        segmented = self.episodic.segment(
            flush=True, workspace=self.workspace, conversation=conversation
        )
        new = [m for m in reversed(self._all(where, None)) if m.id not in before]
        if extra:
            new = [self._with_metadata(m, extra["metadata"]) for m in new]
        events: list[dict[str, Any]] = [
            {"id": m.id, "memory": m.content, "event": "ADD"} for m in new
        ]
        events.extend(self._replaced_by([m.id for m in new]))
        events.extend(
            {
                "id": None,
                "memory": d.content,
                "event": "NONE",
                "reason": d.reason,
                "detail": d.detail,
            }
            for d in segmented.dropped
            if d.reason in KNOWN
        )
        return events

    def _with_metadata(self, memory: StoredMemory, metadata: Mapping[str, Any]) -> StoredMemory:
        """``memory``, made by this ``add`` from its messages, given the call's metadata
        as Mem0 gives it to every memory an ``add`` makes (so a metadata filter finds
        the episode and the notes, not only the messages). Part of the memory's making,
        so written in place, not kept as an edit in its history."""
        if metadata_of(memory) is not None:
            return memory
        given = replace(memory, payload={**memory.payload, "metadata": dict(metadata)})
        self.episodic.store.restore(given)
        return given

    def _replaced_by(self, new_ids: list[str]) -> list[dict[str, Any]]:
        """A DELETE event for each older memory one of ``new_ids`` superseded."""
        out: list[dict[str, Any]] = []
        for new_id in new_ids:
            for link in self.episodic.supersessions(new_id, workspace=self.workspace):
                if link.new_id != new_id:
                    continue
                old = self.episodic.memory(ScopeFilter(workspace_id=self.workspace), link.old_id)
                out.append(
                    {
                        "id": old.id,
                        "memory": old.content,
                        "event": "DELETE",
                        "replaced_by": new_id,
                        "reason": link.reason,
                    }
                )
        return out

    def _all(self, flt: ScopeFilter, limit: int | None) -> list[StoredMemory]:
        """Active memories ``flt`` sees, newest first, ``limit`` of them (None: all)."""
        out: list[StoredMemory] = []
        cursor: str | None = None
        while limit is None or len(out) < limit:
            size = PAGE if limit is None else min(PAGE, limit - len(out))
            page = self.episodic.list_memories(
                flt, status=MemoryStatus.ACTIVE, limit=size, cursor=cursor
            )
            out.extend(page.items)
            cursor = page.next_cursor
            if cursor is None:
                break
        return out

    def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int = DEFAULT_LIMIT,
        filters: Mapping[str, Any] | None = None,
        threshold: float | None = None,
        top_k: int | None = None,
        **unused: Any,
    ) -> dict[str, Any]:
        """The memories that matter for ``query`` among those of the ids given, best
        first, each with its ``score``; ``threshold`` keeps those scoring at least it."""
        warn_unused(sorted(unused), "arguments")
        flt, meta = self._scope(user_id, agent_id, run_id, filters)
        wanted = top_k if top_k is not None else limit
        if isinstance(wanted, bool) or not isinstance(wanted, int) or wanted < 1:
            raise InvalidInput("limit", "expected a positive whole number")
        result = self.episodic.recall(
            query,
            workspace=self.workspace,
            agent=flt.agent_id,
            resource=flt.resource_id,
            conversation=flt.conversation_id,
            k=min(wanted, SEARCH_CAP),
        )
        hits = [
            h
            for h in result.hits
            if self._matches(h.memory, flt, meta) and (threshold is None or h.score >= threshold)
        ]
        return {"results": [self._item(h.memory, h.score) for h in hits[:wanted]]}

    def get(self, memory_id: str) -> dict[str, Any] | None:
        """One memory by id; None when there is none (as Mem0 answers)."""
        try:
            found = self.episodic.memory(ScopeFilter(workspace_id=self.workspace), memory_id)
        except NotFound:
            return None
        return self._item(found)

    def get_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: Mapping[str, Any] | None = None,
        limit: int = DEFAULT_LIMIT,
        top_k: int | None = None,
    ) -> dict[str, Any]:
        """The active memories of the ids given, newest first, ``limit`` of them."""
        flt, meta = self._scope(user_id, agent_id, run_id, filters)
        wanted = top_k if top_k is not None else limit
        if isinstance(wanted, bool) or not isinstance(wanted, int) or wanted < 1:
            raise InvalidInput("limit", "expected a positive whole number")
        found = self._all(flt, None if meta else wanted)
        kept = [m for m in found if self._matches(m, flt, meta)][:wanted]
        return {"results": [self._item(m) for m in kept]}

    def update(
        self,
        memory_id: str,
        text: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        *,
        data: str | None = None,
    ) -> dict[str, Any]:
        """Correct a memory's text and/or replace its metadata (the old version stays in
        ``history``). ``data`` is the older name of ``text`` (Mem0 1.x)."""
        if data is not None:
            if text is not None and text != data:
                raise InvalidInput("data", "the older name of 'text', which says otherwise")
            text = data
        if text is None and metadata is None:
            raise InvalidInput("text", "nothing to change: give text or metadata")
        payload = None
        if metadata is not None:
            if not isinstance(metadata, Mapping):
                raise InvalidInput("metadata", "expected a dict")
            old = self.episodic.memory(ScopeFilter(workspace_id=self.workspace), memory_id)
            payload = {**old.payload, "metadata": dict(metadata)}
        self.episodic.update(
            memory_id, workspace=self.workspace, content=text, payload=payload, by=EDITOR
        )
        return {"message": "Memory updated successfully!"}

    def delete(self, memory_id: str) -> dict[str, Any]:
        """Forget one memory, with what was derived from it."""
        self.episodic.memory(ScopeFilter(workspace_id=self.workspace), memory_id)
        self.episodic.forget(workspace=self.workspace, memory=memory_id)
        return {"message": "Memory deleted successfully!"}

    def delete_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> dict[str, Any]:
        """Forget every memory of the ids given; refused with none (``reset`` forgets
        the whole workspace)."""
        if user_id is None and agent_id is None and run_id is None:
            raise InvalidInput(
                "user_id",
                "give user_id, agent_id or run_id; reset(confirm=True) forgets everything",
            )
        flt, _ = self._scope(user_id, agent_id, run_id, None)
        self.episodic.forget(
            workspace=self.workspace,
            agent=flt.agent_id,
            resource=flt.resource_id,
            conversation=flt.conversation_id,
        )
        return {"message": "Memories deleted successfully!"}

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        """A memory's changes, oldest first, as Mem0 lists them: ``ADD`` for the text it
        was created with, ``UPDATE`` for each edit."""
        versions = list(reversed(self.episodic.history(memory_id, workspace=self.workspace)))
        out: list[dict[str, Any]] = []
        previous: str | None = None
        for v in versions:
            out.append(
                {
                    "id": f"{memory_id}:{v.version}",
                    "memory_id": memory_id,
                    "old_memory": previous,
                    "new_memory": v.content,
                    "event": "ADD" if previous is None else "UPDATE",
                    "created_at": _iso(versions[0].written_at),
                    "updated_at": None if previous is None else _iso(v.written_at),
                    "is_deleted": False,
                    "actor_id": v.written_by,
                    "role": None,
                }
            )
            previous = v.content
        return out

    def reset(self, *, confirm: bool = False) -> None:
        """Forget the whole workspace; only with ``confirm=True`` (Mem0's ``reset()``
        takes no argument, and a stray call must not wipe a memory store)."""
        if confirm is not True:
            raise InvalidInput("confirm", "reset forgets every memory; pass confirm=True")
        self.episodic.forget(workspace=self.workspace, all=True)


def _messages(
    messages: str | Mapping[str, Any] | Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """Mem0's accepted ``messages`` as a list of ``{"role", "content"}``."""
    if isinstance(messages, str):
        if not messages.strip():
            raise InvalidInput("messages", "nothing to remember: the text is empty")
        return [{"role": "user", "content": messages}]
    if isinstance(messages, Mapping):
        messages = [messages]
    if not isinstance(messages, Sequence) or not messages:
        raise InvalidInput("messages", "expected a string or a list of {role, content}")
    out: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            raise InvalidInput(f"messages[{i}]", "expected {role, content}")
        content = m.get("content")
        if not isinstance(content, str) or not content.strip():
            raise InvalidInput(f"messages[{i}].content", "required: the message's text")
        role = m.get("role", "user")
        if not isinstance(role, str):
            raise InvalidInput(f"messages[{i}].role", "expected a string")
        item: dict[str, Any] = {"role": role, "content": content}
        if isinstance(m.get("name"), str):
            item["name"] = m["name"]
        out.append(item)
    return out


class AsyncMemory:
    """Mem0's ``AsyncMemory``: ``Memory``'s methods, awaited, each run in a worker
    thread so the event loop is never held by the model or the database."""

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        workspace: str | None = None,
        episodic: Episodic | None = None,
    ) -> None:
        self.sync = Memory(config, workspace=workspace, episodic=episodic)

    @classmethod
    def from_config(cls, config_dict: Mapping[str, Any]) -> AsyncMemory:
        return cls(config_dict)

    async def add(self, messages: Any, **kwargs: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.add, messages, **kwargs)

    async def search(self, query: str, **kwargs: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.search, query, **kwargs)

    async def get(self, memory_id: str) -> dict[str, Any] | None:
        return await asyncio.to_thread(self.sync.get, memory_id)

    async def get_all(self, **kwargs: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.get_all, **kwargs)

    async def update(self, memory_id: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.update, memory_id, *args, **kwargs)

    async def delete(self, memory_id: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.delete, memory_id)

    async def delete_all(self, **kwargs: Any) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.delete_all, **kwargs)

    async def history(self, memory_id: str) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self.sync.history, memory_id)

    async def reset(self, *, confirm: bool = False) -> None:
        await asyncio.to_thread(self.sync.reset, confirm=confirm)

    async def close(self) -> None:
        await asyncio.to_thread(self.sync.close)
