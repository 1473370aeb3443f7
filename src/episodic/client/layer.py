"""``MemoryLayer`` over HTTP: seed 002's hooks (``init``, ``recall`` within a token
budget, ``on_complete``) for an agent loop whose memory runs in ``episodic serve``.

    with Client(url, key) as mem:
        ops = mem.layer(agent="ops-bot", resource="team:payments")
        block = ops.recall(800).text
        ...
        ops.on_complete(transcript, outcome="success")

Each method has ``MemoryLayer``'s name, arguments and result. The layer keeps its session
between requests, as ``MemoryLayer`` does: the one named at creation, or one of its own
per run, which ``on_complete`` ends (each memory its recalls returned is reinforced once)
and replaces."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from episodic.client import calls
from episodic.client.calls import Call, LayerOptions
from episodic.errors import InvalidInput
from episodic.layer import LayerState, Order, Recalled, new_session
from episodic.model import Memory

T = TypeVar("T")


class _Common:
    def __init__(
        self,
        where: LayerOptions,
        *,
        session: str | None,
        order: Order,
        policy: str | None,
    ) -> None:
        if order not in ("recent", "relevant"):
            raise InvalidInput("order", "use recent or relevant")
        if session is not None and (not isinstance(session, str) or not session.strip()):
            raise InvalidInput("session", "expected the session's id (text), or none")
        self.where = where
        self.order: Order = order
        self.policy = policy
        self._own_session = session is None
        self.session = session or new_session()
        # What the last session's end reinforced (``on_complete``).
        self.reinforced: list[str] = []

    def _recall(self, budget_tokens: int, query: str | None, order: Order | None) -> Call[Recalled]:
        return calls.layer_recall(
            self.where, self.session, budget_tokens, query, order or self.order, self.policy
        )

    def _complete(
        self,
        transcript: Sequence[Mapping[str, Any]],
        conversation: str | None,
        outcome: str | None,
    ) -> Call[tuple[list[Memory], list[str]]]:
        return calls.layer_complete(self.where, self.session, transcript, conversation, outcome)

    def _completed(self, answer: tuple[list[Memory], list[str]]) -> list[Memory]:
        episodes, self.reinforced = answer
        if self._own_session:
            self.session = new_session()
        return episodes


class RemoteLayer(_Common):
    """``MemoryLayer`` through a ``Client`` (``Client.layer``)."""

    def __init__(
        self,
        send: Callable[[Call[Any]], Any],
        where: LayerOptions,
        *,
        session: str | None = None,
        order: Order = "recent",
        policy: str | None = None,
    ) -> None:
        super().__init__(where, session=session, order=order, policy=policy)
        self._send = send

    def init(self) -> LayerState:
        result: LayerState = self._send(calls.layer_init(self.where))
        return result

    def recall(
        self, budget_tokens: int, query: str | None = None, *, order: Order | None = None
    ) -> Recalled:
        result: Recalled = self._send(self._recall(budget_tokens, query, order))
        return result

    def on_complete(
        self,
        transcript: Sequence[Mapping[str, Any]],
        *,
        conversation: str | None = None,
        outcome: str | None = None,
    ) -> list[Memory]:
        return self._completed(self._send(self._complete(transcript, conversation, outcome)))


class AsyncRemoteLayer(_Common):
    """``MemoryLayer`` through an ``AsyncClient`` (``AsyncClient.layer``), awaited."""

    def __init__(
        self,
        send: Callable[[Call[Any]], Awaitable[Any]],
        where: LayerOptions,
        *,
        session: str | None = None,
        order: Order = "recent",
        policy: str | None = None,
    ) -> None:
        super().__init__(where, session=session, order=order, policy=policy)
        self._send = send

    async def init(self) -> LayerState:
        result: LayerState = await self._send(calls.layer_init(self.where))
        return result

    async def recall(
        self, budget_tokens: int, query: str | None = None, *, order: Order | None = None
    ) -> Recalled:
        result: Recalled = await self._send(self._recall(budget_tokens, query, order))
        return result

    async def on_complete(
        self,
        transcript: Sequence[Mapping[str, Any]],
        *,
        conversation: str | None = None,
        outcome: str | None = None,
    ) -> list[Memory]:
        answer = await self._send(self._complete(transcript, conversation, outcome))
        return self._completed(answer)
