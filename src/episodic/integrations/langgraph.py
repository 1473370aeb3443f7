"""``EpisodicStore``: episodic as a LangGraph ``BaseStore`` (the ``[langgraph]`` extra).

    store = EpisodicStore.open("sqlite:///./.episodic/memory.db")
    graph = builder.compile(store=store)

How LangGraph's items map onto episodic's memories:

- **Namespace**: ``(workspace,)``, ``(workspace, agent)`` or ``(workspace, agent,
  resource)``. These are episodic's own scope ids, so what a graph stores is recalled,
  exported and forgotten like any other memory of that workspace, agent or resource
  (``episodic forget --agent ...`` reaches it). A deeper namespace is refused: there is no
  level of episodic to put it in, and silently flattening it would mix two namespaces.
- **Key**: unique within its namespace, while an episodic memory id is unique within a
  workspace; so the memory id is derived from namespace and key (``lg-`` and a hash), and
  the key and namespace are kept in the memory's payload under ``"langgraph"``.
- **Value**: a JSON object. Its ``"content"`` field, when it is text, is the memory's
  ``content`` (what is embedded, keyword-indexed and recalled); the other fields go to the
  payload, and ``get`` gives the object back as it was put. A value with no text
  ``"content"`` is recalled by the text of the fields ``put(..., index=[...])`` names,
  else by the whole object written as JSON. ``put`` on an existing key is an episodic
  ``update`` (the old version goes to the memory's history); ``delete`` forgets it.
- **search** with ``query`` runs episodic's recall: hybrid (keyword + vector), decay and
  importance, the scope weights; each hit is marked referenced, as any recall is. The
  ``score`` is recall's. ``EpisodicStore.recall`` gives the full ``RecallResult`` (with
  ``explain=True``, the trace of every stage). A query search sees recall's best 50 at
  most (recall's own bound), before ``filter`` and ``offset``. Without ``query``,
  ``search`` lists the
  namespace's memories newest first. Memories written other ways (episodes, messages,
  ``remember``) are found too: their key is the memory id, their namespace their
  workspace, agent and resource, their value ``{"content", "type", "payload"}``.
- **filter**: LangGraph's: equal fields, or ``$eq $ne $gt $gte $lt $lte`` on a field.
- **TTL** is not supported (LangGraph refuses a ``ttl`` for such a store); episodic's
  decay and retention (``forget --older-than-days``) do that work.
"""

from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from episodic.extras import require

require("langgraph", "episodic.integrations.langgraph")

import anyio.to_thread  # noqa: E402
from langgraph.store.base import (  # noqa: E402
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from episodic.errors import InvalidInput, NotFound  # noqa: E402
from episodic.model import Memory, Scope, ScopeFilter  # noqa: E402
from episodic.recall.engine import RecallResult  # noqa: E402
from episodic.service import Episodic  # noqa: E402

PAYLOAD_KEY = "langgraph"
TEXT_FIELD = "content"
MAX_RECALL_K = 50  # recall's own bound
PAGE = 200


def memory_id(namespace: tuple[str, ...], key: str) -> str:
    """The episodic id of LangGraph's ``(namespace, key)``: stable, and distinct for the
    same key in two namespaces of one workspace."""
    digest = hashlib.sha256(json.dumps([list(namespace), key]).encode()).hexdigest()
    return f"lg-{digest[:40]}"


def scope_of(namespace: tuple[str, ...]) -> tuple[str, str | None, str | None]:
    """``(workspace, agent, resource)`` of a namespace (or namespace prefix)."""
    if not 1 <= len(namespace) <= 3:
        raise InvalidInput(
            "namespace",
            "use (workspace,), (workspace, agent) or (workspace, agent, resource); "
            f"got {namespace!r}",
        )
    parts = [*namespace, None, None]
    return parts[0] or "", parts[1], parts[2]


def namespace_of(m: Memory) -> tuple[str, ...]:
    stored = m.payload.get(PAYLOAD_KEY)
    if isinstance(stored, Mapping) and isinstance(stored.get("namespace"), list):
        return tuple(stored["namespace"])
    if m.agent is None:
        return (m.workspace,)
    return (m.workspace, m.agent) if m.resource is None else (m.workspace, m.agent, m.resource)


def text_of(value: Mapping[str, Any], index: Sequence[str] | None) -> tuple[str, bool]:
    """The text to recall ``value`` by, and whether it is the ``content`` field itself
    (then the payload does not keep a second copy)."""
    content = value.get(TEXT_FIELD)
    if isinstance(content, str) and content.strip():
        return content, True
    if index:
        parts = [_as_text(value[f]) for f in index if f in value]
        text = "\n".join(p for p in parts if p.strip())
        if text.strip():
            return text, False
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str), False


def _as_text(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)


def item_parts(m: Memory) -> tuple[tuple[str, ...], str, dict[str, Any]]:
    """``(namespace, key, value)`` of a memory, as ``get`` and ``search`` show it."""
    stored = m.payload.get(PAYLOAD_KEY)
    if isinstance(stored, Mapping) and isinstance(stored.get("key"), str):
        value = dict(stored.get("value") or {})
        if stored.get("text_is_content"):
            value = {TEXT_FIELD: m.content, **value}
        return namespace_of(m), stored["key"], value
    return namespace_of(m), m.id, {"content": m.content, "type": m.type, "payload": dict(m.payload)}


ORDERINGS: dict[str, Callable[[float, float], bool]] = {
    "$gt": operator.gt,
    "$gte": operator.ge,
    "$lt": operator.lt,
    "$lte": operator.le,
}


def matches(value: Any, flt: Mapping[str, Any] | None) -> bool:
    """Whether ``value`` passes LangGraph's ``filter``: equal fields (nested objects
    field by field), or ``{"$eq"|"$ne"|"$gt"|"$gte"|"$lt"|"$lte": x}`` on a field."""
    if not flt:
        return True
    if not isinstance(value, Mapping):
        return False
    return all(_field_matches(value.get(k), want) for k, want in flt.items())


def check_filter(flt: Mapping[str, Any] | None) -> None:
    """Refuse an unknown operator before anything is read, even when nothing would match."""
    for want in (flt or {}).values():
        if isinstance(want, Mapping):
            for op in want:
                if str(op).startswith("$") and op not in ("$eq", "$ne", *ORDERINGS):
                    raise InvalidInput(
                        "filter", f"unknown operator {op!r}; use $eq $ne $gt $gte $lt $lte"
                    )
            check_filter({k: v for k, v in want.items() if not str(k).startswith("$")})


def _field_matches(have: Any, want: Any) -> bool:
    if not isinstance(want, Mapping):
        return bool(have == want)
    if not any(str(k).startswith("$") for k in want):
        return matches(have, want)
    return all(_compare(have, op, arg) for op, arg in want.items())


def _compare(have: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return bool(have == arg)
    if op == "$ne":
        return bool(have != arg)
    numbers = (int, float)
    if isinstance(have, bool) or not isinstance(have, numbers) or not isinstance(arg, numbers):
        return False  # a missing or non-numeric field is outside every range
    return ORDERINGS[op](have, arg)


def _when(m: Memory) -> datetime:
    return m.created_at or m.ts


def _updated(m: Memory) -> datetime:
    stored = m.payload.get(PAYLOAD_KEY)
    at = stored.get("updated_at") if isinstance(stored, Mapping) else None
    try:
        return datetime.fromisoformat(at) if isinstance(at, str) else _when(m)
    except ValueError:  # edited by hand into something else: the memory's own time
        return _when(m)


def namespace_matches(namespace: tuple[str, ...], cond: MatchCondition) -> bool:
    """LangGraph's prefix/suffix conditions; ``"*"`` matches any one label."""
    path = tuple(cond.path)
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if cond.match_type == "prefix" else namespace[-len(path) :]
    return all(p in ("*", n) for p, n in zip(path, part, strict=True)) if path else True


class EpisodicStore(BaseStore):
    """A LangGraph store backed by an open ``Episodic`` (see the module docstring)."""

    supports_ttl = False

    def __init__(self, mem: Episodic) -> None:
        self.mem = mem

    @classmethod
    def open(cls, db_url: str | None = None) -> EpisodicStore:
        return cls(Episodic.open(db_url))

    def close(self) -> None:
        self.mem.close()

    # -- LangGraph's interface ---------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return [self._run(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        # The model and the database work in a worker thread, off the event loop.
        todo = list(ops)
        return await anyio.to_thread.run_sync(self.batch, todo)

    def recall(self, namespace_prefix: tuple[str, ...], query: str, **kwargs: Any) -> RecallResult:
        """Episodic's recall in a namespace: ``Episodic.recall``'s keywords (``k``,
        ``explain``, ``policy``...) pass through."""
        workspace, agent, resource = scope_of(namespace_prefix)
        if agent is not None:
            # Recall only weighs the asking agent's memories higher; the namespace is a
            # boundary, so the agent's own are all it may see (the resource narrows by
            # itself).
            kwargs.setdefault("scope", Scope.OWN)
        return self.mem.recall(query, workspace=workspace, agent=agent, resource=resource, **kwargs)

    # -- one operation -----------------------------------------------------------------
    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise InvalidInput("op", f"not a LangGraph store operation: {type(op).__name__}")

    def _get(self, op: GetOp) -> Item | None:
        workspace, _, _ = scope_of(op.namespace)
        try:
            m = self.mem.memory(
                ScopeFilter(workspace_id=workspace), memory_id(op.namespace, op.key)
            )
        except NotFound:
            return None
        namespace, key, value = item_parts(m)
        return Item(
            value=value, key=key, namespace=namespace, created_at=_when(m), updated_at=_updated(m)
        )

    def _put(self, op: PutOp) -> None:
        workspace, agent, resource = scope_of(op.namespace)
        mid = memory_id(op.namespace, op.key)
        if op.value is None:
            self.mem.forget(workspace=workspace, memory=mid)
            return
        if not isinstance(op.value, Mapping):
            raise InvalidInput("value", f"expected a JSON object, got {type(op.value).__name__}")
        value = dict(op.value)
        text, is_content = text_of(value, op.index if isinstance(op.index, list) else None)
        if is_content:
            value.pop(TEXT_FIELD)
        payload = {
            PAYLOAD_KEY: {
                "namespace": list(op.namespace),
                "key": op.key,
                "value": value,
                "text_is_content": is_content,
                # An overwrite keeps the memory's first time; LangGraph shows both.
                "updated_at": self.mem.clock().isoformat(),
            }
        }
        if self.mem.memories(ScopeFilter(workspace_id=workspace), [mid]):
            self.mem.update(mid, workspace=workspace, content=text, payload=payload, by="langgraph")
        else:
            self.mem.remember(
                text,
                workspace=workspace,
                agent=agent,
                resource=resource,
                payload=payload,
                id=mid,
            )

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        check_filter(op.filter)
        wanted = op.offset + op.limit
        if op.query:
            # A filter is applied to recall's hits, so it gets recall's whole bound to
            # choose from; without one, the hits asked for are enough.
            k = MAX_RECALL_K if op.filter else min(MAX_RECALL_K, max(wanted, 1))
            hits = self.recall(prefix, op.query, k=k).hits
            scored: Iterator[tuple[Memory, float | None]] = ((h.memory, h.score) for h in hits)
        else:
            scored = ((m, None) for m in self._memories(prefix))
        found: list[SearchItem] = []
        for m, score in scored:
            namespace, key, value = item_parts(m)
            if namespace[: len(prefix)] != prefix or not matches(value, op.filter):
                continue
            found.append(
                SearchItem(
                    namespace=namespace,
                    key=key,
                    value=value,
                    created_at=_when(m),
                    updated_at=_updated(m),
                    score=score,
                )
            )
            if len(found) >= wanted:
                break
        return found[op.offset :]

    def _memories(self, prefix: tuple[str, ...]) -> Iterator[Memory]:
        """Every memory under ``prefix``, newest first, a page at a time."""
        workspace, agent, resource = scope_of(prefix)
        flt = ScopeFilter(workspace_id=workspace, agent_id=agent, resource_id=resource)
        cursor: str | None = None
        while True:
            page = self.mem.list_memories(flt, limit=PAGE, cursor=cursor)
            yield from page.items
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = op.match_conditions or ()
        first = next(
            (
                c.path[0]
                for c in conditions
                if c.match_type == "prefix" and c.path and c.path[0] != "*"
            ),
            None,
        )
        workspaces = [first] if first is not None else self.mem.store.workspaces()
        seen: set[tuple[str, ...]] = set()
        for workspace in workspaces:
            for m in self._memories((workspace,)):
                namespace = namespace_of(m)
                if all(namespace_matches(namespace, c) for c in conditions):
                    depth = op.max_depth
                    seen.add(namespace if depth is None else namespace[:depth])
        return sorted(seen)[op.offset : op.offset + op.limit]
