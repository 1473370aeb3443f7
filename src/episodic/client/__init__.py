"""``Client`` and ``AsyncClient``: the HTTP API of an ``episodic serve`` with the method
names, parameters, results and exceptions of the in-process ``Episodic``.

    with Client("http://127.0.0.1:8765", key) as mem:
        mem.remember("the deploy needs the VPN", agent="ops")
        result = mem.recall("how do I deploy?")

What a call means lives once: its request and retries in ``calls``, how its answer
becomes a ``RecallResult``, a ``Memory`` ... or an exception in ``answers``; the two
classes differ only in how they send. ``workspace`` defaults to the key's. A 503 is
retried, waiting what ``Retry-After`` says, up to ``attempts`` tries in all."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar, Unpack

from episodic.client import answers, calls
from episodic.client.answers import Episode, ServerError, ServerHealth
from episodic.client.calls import (
    BatchOptions,
    Call,
    ForgetOptions,
    LayerOptions,
    ListOptions,
    MessageOptions,
    RecallOptions,
    RecentOptions,
    RememberOptions,
    RenderOptions,
)
from episodic.client.layer import AsyncRemoteLayer, RemoteLayer
from episodic.errors import InvalidInput
from episodic.model import Event, Memory
from episodic.recall.result import RecallResult
from episodic.service.pages import MemoryPage

# Only for annotations: each answer's type loads with the first answer of its kind
# (``answers``), so a process that only recalls does not load the service or the store.
if TYPE_CHECKING:
    # httpx is imported by the first client made: a process that only reads ``calls`` and
    # ``answers`` (the command line's own transport) does not load it.
    import httpx

    from episodic.layer import Order
    from episodic.service.decisions import Decision
    from episodic.service.editing import Version
    from episodic.service.writing import IndexOne, IngestReport, MessagesReport, SessionEnd
    from episodic.store.service import ForgetCounts
    from episodic.store.supersession import Supersession
    from episodic.upkeep.health import HealthView

__all__ = [
    "AsyncClient",
    "AsyncRemoteLayer",
    "Client",
    "Episode",
    "RemoteLayer",
    "ServerError",
    "ServerHealth",
]

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 60.0


class _Base:
    """The settings both clients keep, and the answer of one attempt read."""

    def __init__(self, base_url: str, key: str | None, attempts: int, timeout: float) -> None:
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            raise InvalidInput("attempts", "a whole number of tries, at least 1")
        self.base_url = base_url.rstrip("/")
        self.attempts = attempts
        headers = {"authorization": f"Bearer {key}"} if key else {}
        self._options: dict[str, Any] = {
            "base_url": self.base_url,
            "headers": headers,
            "timeout": timeout,
        }

    def _request(self, call: Call[Any]) -> dict[str, Any]:
        return {
            "method": call.method,
            "url": call.path,
            "json": call.json,
            "params": call.params,
        }

    def _wait(self, response: httpx.Response, attempt: int) -> float | None:
        """Seconds to wait before trying again, or None when this answer stands."""
        if response.status_code != 503:
            return None
        wait = calls.retry_after(response.headers.get("retry-after"), attempt)
        return wait if calls.should_retry(503, wait, attempt, self.attempts) else None

    @staticmethod
    def _result(call: Call[T], response: httpx.Response) -> T:
        try:
            body = response.json()
        except ValueError:
            body = response.text
        if response.is_error and response.status_code != call.absent:
            raise answers.error_of(response.status_code, body, response.headers.get("x-request-id"))
        return call.parse(body)


def _unreachable(base_url: str, exc: httpx.TransportError) -> ServerError:
    return ServerError(0, "unreachable", f"cannot reach {base_url}: {exc}")


class Client(_Base):
    """The HTTP API, called synchronously. Use as a context manager, or ``close()``."""

    def __init__(
        self,
        base_url: str,
        key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        attempts: int = calls.DEFAULT_ATTEMPTS,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        import httpx

        super().__init__(base_url, key, attempts, timeout)
        self._http = httpx.Client(transport=transport, **self._options)

    def _send(self, call: Call[T]) -> T:
        import httpx

        for attempt in range(self.attempts):
            try:
                response = self._http.request(**self._request(call))
            except httpx.TransportError as exc:
                raise _unreachable(self.base_url, exc) from exc
            wait = self._wait(response, attempt)
            if wait is None:
                break
            time.sleep(wait)
        return self._result(call, response)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # The same methods as ``AsyncClient``, each one line over ``calls``.
    def ingest(self, items: Iterable[Mapping[str, Any]]) -> IngestReport:
        return answers.merged_ingest([self._send(c) for c in calls.ingest(items)])

    def add_message(
        self, content: str, *, conversation: str, **options: Unpack[MessageOptions]
    ) -> Event:
        return self._send(calls.add_message(content, conversation, options))

    def add_messages(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        conversation: str | None = None,
        **options: Unpack[BatchOptions],
    ) -> MessagesReport:
        parts = calls.add_messages(messages, conversation, options)
        return answers.merged_messages([self._send(c) for c in parts])

    def remember(self, content: str, **options: Unpack[RememberOptions]) -> Memory:
        return self._send(calls.remember(content, options))

    def recall(self, query: str, **options: Unpack[RecallOptions]) -> RecallResult:
        return self._send(calls.recall(query, options))

    def render(self, query: str, **options: Unpack[RenderOptions]) -> str:
        return self._send(calls.render(query, options))

    def render_explained(
        self, query: str, **options: Unpack[RenderOptions]
    ) -> tuple[str, RecallResult]:
        """The block, and the recall's mode, policy, warnings and trace (its hits are in
        the block: the result's ``hits`` is empty)."""
        return self._send(calls.render_explained(query, options))

    def recent(self, **options: Unpack[RecentOptions]) -> list[Episode]:
        return self._send(calls.recent(options))

    def forget(self, **options: Unpack[ForgetOptions]) -> ForgetCounts:
        return self._send(calls.forget(options))

    def list_memories(self, **options: Unpack[ListOptions]) -> MemoryPage:
        """``Episodic.list_memories``, the filter given by name (``agent=``, ``types=``
        ...) as ``recall`` takes it; the key decides the rest."""
        return self._send(calls.list_memories(options))

    def memory(self, memory_id: str) -> Memory:
        return self._send(calls.memory(memory_id))

    def retire(self, memory_id: str) -> Memory:
        return self._send(calls.retire(memory_id))

    def index_one(self, memory_id: str) -> IndexOne:
        """``Episodic.index_one`` for a memory the key can see: embed it now; the answer
        is true when it has its vector, and its ``detail`` says why not."""
        return self._send(calls.index_one(memory_id))

    def update(
        self,
        memory_id: str,
        *,
        content: str | None = None,
        importance: float | None = None,
        payload: Mapping[str, Any] | None = None,
    ) -> Memory:
        return self._send(calls.update(memory_id, content, importance, payload))

    def supersede(self, old_id: str, new: str, *, reason: str | None = None) -> Memory:
        """``Episodic.supersede_as``: ``new`` (a memory's id or a new text) replaces
        ``old_id``; returns the memory that replaced it."""
        return self._send(calls.supersede(old_id, new, reason))

    def supersessions(self, memory_id: str) -> list[Supersession]:
        return self._send(calls.supersessions(memory_id))

    def decisions(self, memory_id: str) -> list[Decision]:
        """``Episodic.decisions_as``: what was decided about a memory and by what."""
        return self._send(calls.decisions(memory_id))

    def restore(self, memory_id: str) -> Memory:
        """``Episodic.restore_as``: undo a memory's supersession; returns it, active."""
        return self._send(calls.restore(memory_id))

    def history(self, memory_id: str) -> list[Version]:
        return self._send(calls.history(memory_id))

    def health(self) -> ServerHealth:
        return self._send(calls.health())

    def memory_health(
        self, workspace: str | None = None, crew: str | None = None, *, history: int = 30
    ) -> HealthView | None:
        return self._send(calls.memory_health(workspace, crew, history))

    def layer(
        self,
        *,
        session: str | None = None,
        order: Order = "recent",
        policy: str | None = None,
        **where: Unpack[LayerOptions],
    ) -> RemoteLayer:
        """``MemoryLayer(memory, workspace=..., agent=..., ...)`` over this server: seed
        002's hooks (``init``, ``recall``, ``on_complete``) with the same results."""
        return RemoteLayer(self._send, where, session=session, order=order, policy=policy)

    def end_session(
        self, session: str, *, workspace: str | None = None, outcome: str | None = None
    ) -> SessionEnd:
        return self._send(calls.end_session(session, workspace, outcome))


class AsyncClient(_Base):
    """The HTTP API, awaited. Use as an async context manager, or ``await aclose()``."""

    def __init__(
        self,
        base_url: str,
        key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        attempts: int = calls.DEFAULT_ATTEMPTS,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        import httpx

        super().__init__(base_url, key, attempts, timeout)
        self._http = httpx.AsyncClient(transport=transport, **self._options)

    async def _send(self, call: Call[T]) -> T:
        import anyio
        import httpx

        for attempt in range(self.attempts):
            try:
                response = await self._http.request(**self._request(call))
            except httpx.TransportError as exc:
                raise _unreachable(self.base_url, exc) from exc
            wait = self._wait(response, attempt)
            if wait is None:
                break
            await anyio.sleep(wait)
        return self._result(call, response)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # The same methods as ``Client``, each one line over ``calls``.
    async def ingest(self, items: Iterable[Mapping[str, Any]]) -> IngestReport:
        return answers.merged_ingest([await self._send(c) for c in calls.ingest(items)])

    async def add_message(
        self, content: str, *, conversation: str, **options: Unpack[MessageOptions]
    ) -> Event:
        return await self._send(calls.add_message(content, conversation, options))

    async def add_messages(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        conversation: str | None = None,
        **options: Unpack[BatchOptions],
    ) -> MessagesReport:
        parts = calls.add_messages(messages, conversation, options)
        return answers.merged_messages([await self._send(c) for c in parts])

    async def remember(self, content: str, **options: Unpack[RememberOptions]) -> Memory:
        return await self._send(calls.remember(content, options))

    async def recall(self, query: str, **options: Unpack[RecallOptions]) -> RecallResult:
        return await self._send(calls.recall(query, options))

    async def render(self, query: str, **options: Unpack[RenderOptions]) -> str:
        return await self._send(calls.render(query, options))

    async def render_explained(
        self, query: str, **options: Unpack[RenderOptions]
    ) -> tuple[str, RecallResult]:
        """As ``Client.render_explained``."""
        return await self._send(calls.render_explained(query, options))

    async def recent(self, **options: Unpack[RecentOptions]) -> list[Episode]:
        return await self._send(calls.recent(options))

    async def forget(self, **options: Unpack[ForgetOptions]) -> ForgetCounts:
        return await self._send(calls.forget(options))

    async def list_memories(self, **options: Unpack[ListOptions]) -> MemoryPage:
        """``Episodic.list_memories``, the filter given by name (``agent=``, ``types=``
        ...) as ``recall`` takes it; the key decides the rest."""
        return await self._send(calls.list_memories(options))

    async def memory(self, memory_id: str) -> Memory:
        return await self._send(calls.memory(memory_id))

    async def retire(self, memory_id: str) -> Memory:
        return await self._send(calls.retire(memory_id))

    async def index_one(self, memory_id: str) -> IndexOne:
        return await self._send(calls.index_one(memory_id))

    async def update(
        self,
        memory_id: str,
        *,
        content: str | None = None,
        importance: float | None = None,
        payload: Mapping[str, Any] | None = None,
    ) -> Memory:
        return await self._send(calls.update(memory_id, content, importance, payload))

    async def supersede(self, old_id: str, new: str, *, reason: str | None = None) -> Memory:
        """``Episodic.supersede_as``: ``new`` (a memory's id or a new text) replaces
        ``old_id``; returns the memory that replaced it."""
        return await self._send(calls.supersede(old_id, new, reason))

    async def supersessions(self, memory_id: str) -> list[Supersession]:
        return await self._send(calls.supersessions(memory_id))

    async def decisions(self, memory_id: str) -> list[Decision]:
        return await self._send(calls.decisions(memory_id))

    async def restore(self, memory_id: str) -> Memory:
        return await self._send(calls.restore(memory_id))

    async def history(self, memory_id: str) -> list[Version]:
        return await self._send(calls.history(memory_id))

    async def health(self) -> ServerHealth:
        return await self._send(calls.health())

    async def memory_health(
        self, workspace: str | None = None, crew: str | None = None, *, history: int = 30
    ) -> HealthView | None:
        return await self._send(calls.memory_health(workspace, crew, history))

    def layer(
        self,
        *,
        session: str | None = None,
        order: Order = "recent",
        policy: str | None = None,
        **where: Unpack[LayerOptions],
    ) -> AsyncRemoteLayer:
        """``MemoryLayer(memory, workspace=..., agent=..., ...)`` over this server, its
        hooks awaited: seed 002's ``init``, ``recall`` and ``on_complete``."""
        return AsyncRemoteLayer(self._send, where, session=session, order=order, policy=policy)

    async def end_session(
        self, session: str, *, workspace: str | None = None, outcome: str | None = None
    ) -> SessionEnd:
        return await self._send(calls.end_session(session, workspace, outcome))
