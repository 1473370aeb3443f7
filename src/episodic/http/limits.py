"""What bounds the load one server takes: the request body size limit (``BodyLimit``, an
ASGI wrapper around the app), the recalls in flight and their line (``RecallQueue``) and
the writes in line (``WriteCount``), each shedding load with 503 + Retry-After
(``Overloaded``) before a request would wait too long."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from episodic.config import _num
from episodic.errors import InvalidInput
from episodic.http.errors import error_body

T = TypeVar("T")

# A request body larger than this is refused with 413 before it is parsed.
MAX_BODY_BYTES = 4 * 1024 * 1024


def env_number(name: str, default: float) -> float:
    """A positive number from the environment, or ``default``; a bad value is an error
    that names the variable (the server would otherwise start with a silent default)."""
    return _num(os.environ, name, default)


# Recalls in flight per process. The store's reads, the query embedding and the ranking
# share two cores; more recalls at once than that only interleave them (and take more
# memory), fewer leave a core idle while one recall waits on the database. Four let the
# query embedding of some overlap the store work of others (measured in-process, 16
# threads over 100k memories: 48.6 vs 37.9 recalls/s, p95 513 vs 749 ms on a busy machine).
RECALL_SLOTS = int(env_number("EPISODIC_RECALL_SLOTS", 4))
# The longest a recall is let wait in line for a slot, estimated when it arrives. A recall
# usually feeds a prompt an agent is about to send: past a couple of seconds of queueing
# it is better told at once to come back (503 + Retry-After) than left to queue further,
# which makes every request behind it later still and ends in client timeouts.
RECALL_MAX_WAIT_S = env_number("EPISODIC_RECALL_MAX_WAIT", 2.0)
# Writes waiting or running at once per process beyond which a write is refused with 503.
# A write takes ~5-20 ms on the one writer (SQLite) or a pooled connection (PostgreSQL),
# so 256 in line is already seconds of work: only a flood gets there, and it is shed
# rather than left to time out.
MAX_WRITES_QUEUED = int(env_number("EPISODIC_MAX_WRITES_QUEUED", 256))
# What a recall is assumed to take before one has been measured, and how much each new
# measurement moves the moving average (about the last ten recalls count).
FIRST_RECALL_GUESS_S = 0.1
SERVICE_TIME_WEIGHT = 0.1


class Overloaded(StarletteHTTPException):
    """A request shed before it queued: 503 with ``Retry-After``, rendered by the app's
    HTTP error handler (``episodic.http.errors``) as the ``overloaded`` JSON error."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(503, message, headers={"Retry-After": str(retry_after_s)})
        self.retry_after_s = retry_after_s


def expected_wait(waiting: int, busy: int, slots: int, service_s: float) -> float:
    """Seconds a new arrival waits for one of ``slots``, ``busy`` of them taken and
    ``waiting`` callers ahead of it, when each holds a slot ``service_s`` on average."""
    if busy < slots and waiting == 0:
        return 0.0
    return (waiting + 1) / slots * service_s


def retry_after(wait_s: float) -> int:
    """Whole seconds to tell a shed caller: about when the line it saw will have gone."""
    return max(1, math.ceil(wait_s))


class RecallQueue:
    """The recalls of one process: at most ``slots`` run, each in a worker thread, and
    the rest wait in arrival order on the event loop (an anyio ``CapacityLimiter``
    is FIFO), holding no thread; so a line of recalls never takes the threads that
    writes and cheap reads run on. A recall whose expected wait is over ``max_wait_s``
    is refused with ``Overloaded`` instead."""

    def __init__(self, slots: int, max_wait_s: float) -> None:
        if slots < 1:
            raise InvalidInput("slots", f"must be at least 1, got {slots}")
        self.slots = slots
        self.max_wait_s = max_wait_s
        self.service_s = FIRST_RECALL_GUESS_S
        self.shed = 0  # recalls refused so far
        self._limiter: anyio.CapacityLimiter | None = None

    def limiter(self) -> anyio.CapacityLimiter:
        # Made on first use: a limiter belongs to the event loop it is first used on.
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.slots)
        return self._limiter

    def wait_s(self) -> float:
        stats = self.limiter().statistics()
        return expected_wait(stats.tasks_waiting, stats.borrowed_tokens, self.slots, self.service_s)

    async def run(self, work: Callable[[], T]) -> T:
        """``work()`` in a worker thread once a slot is free, or ``Overloaded``."""
        wait = self.wait_s()
        if wait > self.max_wait_s:
            self.shed += 1
            raise Overloaded(
                f"too many recalls waiting: about {wait:.1f} s in line, over the "
                f"{self.max_wait_s:g} s this server lets one wait; retry after the "
                "Retry-After seconds",
                retry_after(wait - self.max_wait_s),
            )
        return await anyio.to_thread.run_sync(self._timed, work, limiter=self.limiter())

    def _timed(self, work: Callable[[], T]) -> T:
        start = time.perf_counter()
        try:
            return work()
        finally:
            took = time.perf_counter() - start
            self.service_s += SERVICE_TIME_WEIGHT * (took - self.service_s)


class WriteCount:
    """Writes waiting or running in this process; past ``limit`` one is refused with
    ``Overloaded`` rather than queued behind a flood."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.active = 0

    @contextmanager
    def admit(self) -> Iterator[None]:
        if self.active >= self.limit:
            raise Overloaded(
                f"too many writes waiting: {self.active} in line, the most this server "
                "queues; retry after the Retry-After seconds, or send larger batches",
                1,
            )
        self.active += 1
        try:
            yield
        finally:
            self.active -= 1


class _TooLarge(StarletteHTTPException):
    """Raised from inside ``receive``: FastAPI passes HTTP exceptions through its body
    parsing, and the app's HTTP exception handler (``episodic.http.errors``) renders it
    as the 413 JSON error."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body over {limit} bytes; send smaller batches")


ASGIApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]],
    Awaitable[None],
]


class BodyLimit:
    """Refuse request bodies over ``limit`` bytes with 413, by Content-Length up front or
    by counting a chunked body as it arrives."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[Any]],
        send: Callable[[Any], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.limit:
                    await self._refuse(send)
                    return
        seen = 0
        started = False

        async def counting_receive() -> Any:
            nonlocal seen
            message = await receive()
            if message.get("type") == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge(self.limit)
            return message

        async def tracking_send(message: Any) -> None:
            nonlocal started
            if message.get("type") == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._refuse(send)

    async def _refuse(self, send: Callable[[Any], Awaitable[None]]) -> None:
        body = JSONResponse(
            error_body(
                "payload_too_large",
                f"request body over {self.limit} bytes; send smaller batches",
                "body",
            ),
            status_code=413,
        )
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": body.raw_headers,
            }
        )
        await send({"type": "http.response.body", "body": body.body})
