"""What bounds the load one server takes: the request body size limit (``BodyLimit``, an
ASGI wrapper around the app), and the recalls and the writes in flight with their lines
(a ``Lane`` each), which shed load with 503 + Retry-After (``Overloaded``) before a
request would wait too long."""

from __future__ import annotations

import asyncio
import math
import os
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from episodic import metrics
from episodic.config import positive_number, whole_number
from episodic.errors import InvalidInput
from episodic.http.errors import error_body
from episodic.http.request_context import REQUEST_ID_HEADER, request_id_of
from episodic.http.request_context import SCOPE_KEY as REQUEST_SCOPE_KEY
from episodic.priority import lower_priority

T = TypeVar("T")

# A request body larger than this is refused with 413 before it is parsed. Room for one
# message at the content cap (1 Mi characters) even at four UTF-8 bytes a character.
MAX_BODY_BYTES = 6 * 1024 * 1024


def env_number(name: str, default: float) -> float:
    """A positive number from the environment, or ``default``; a bad value is an error
    that names the variable (the server would otherwise start with a silent default)."""
    return positive_number(os.environ, name, default)


# Recalls in flight per process. The store's reads, the query embedding and the ranking
# share two cores; more recalls at once than that only interleave them (and take more
# memory), fewer leave a core idle while one recall waits on the database. Four let the
# query embedding of some overlap the store work of others (measured in-process, 16
# threads over 100k memories: 48.6 vs 37.9 recalls/s, p95 513 vs 749 ms on a busy machine).
# Measured again with recalls in a lane of their own (64 clients of the mixed load, 120 s,
# SQLite, a machine at load 9-10): two slots did 26.8 requests/s, four 40.8.
RECALL_SLOTS = int(env_number("EPISODIC_RECALL_SLOTS", 4))
# Worker processes `episodic serve` runs recalls in (episodic.service.recall_processes;
# 0: in the server's own process). Each holds the embedder and, on SQLite, a copy of the
# dense index (~0.25 GB with MiniLM and a small store). Under the 64-client mixed load on
# two cores (SQLite, 120 s; benchmarks/README.md, "Recalls in processes of their own"),
# the writes' p95 was 206 ms with none, 41-47 with one and 131 with two (requests/s 117,
# 118-123 and 128); over 300 s, one and two did 77.3 and 79.9 requests/s, the writes'
# p95 59 and 143 ms: the two cores were full either way. One is the default: the writes'
# goal with room to spare, at a quarter of a GB instead of half. On PostgreSQL (same load,
# 150 s, its server on the same two cores) one did 46.0 reads/s with the writes' p95 at
# 97 ms, two 53-56 reads/s at 171-180 ms: PostgreSQL's backends run the recalls' statements
# at the writes' priority ("PostgreSQL under the mixed load").
RECALL_PROCESSES = whole_number(os.environ, "EPISODIC_RECALL_PROCESSES", 1)
# How often a serving process's threads may take the GIL from one another (Python's
# default: every 5 ms). A write's handler takes the GIL back a dozen times (after each
# store call, each hand-over of the event loop), and each time waited for a thread that
# runs Python without pause (the indexer's sweeps, a consolidation comparing memories, a
# recall's result arriving from its worker) to be made to give it up. SQLite, 64 clients,
# 300 s (benchmarks/README.md, "Where a read's CPU goes"): at 1 ms the writes' p95 / p99
# were 68 / 149 ms and none over 1 s, against 78 / 235 ms and 3 over 1 s, for 2% fewer
# requests a second.
GIL_SWITCH_INTERVAL_S = env_number("EPISODIC_SWITCH_INTERVAL_MS", 1.0) / 1000.0
# The longest a recall is let wait in line for a slot, estimated when it arrives. A recall
# usually feeds a prompt an agent is about to send: past a couple of seconds of queueing
# it is better told at once to come back (503 + Retry-After) than left to queue further,
# which makes every request behind it later still and ends in client timeouts.
RECALL_MAX_WAIT_S = env_number("EPISODIC_RECALL_MAX_WAIT", 2.0)
# Writes in flight per process; the rest wait in line, in arrival order. SQLite has one
# writer and PostgreSQL's write pool six connections (the indexer and upkeep take two):
# more writes at once only wait on a lock inside the store, and Python's locks are not
# fair, so under a flood a few writes lost it again and again (a 64-client load showed
# writes' p99 at 5 s with every write let in at once).
WRITE_SLOTS = int(env_number("EPISODIC_WRITE_SLOTS", 4))
# The longest a write is let wait in line. A write is data an agent wants kept, so it may
# wait longer than a recall; still well under clients' timeouts, so a flood of writes is
# shed (503 + Retry-After) rather than left to time out.
WRITE_MAX_WAIT_S = env_number("EPISODIC_WRITE_MAX_WAIT", 5.0)
# What a recall and a write are assumed to take before one has been measured, and how
# much each new measurement moves the moving average (about the last ten count).
FIRST_RECALL_GUESS_S = 0.1
FIRST_WRITE_GUESS_S = 0.02
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


class Lane:
    """One kind of request of one process (``kind``: recall, write): at most ``slots``
    run at once and the rest wait in line on the event loop, in arrival order (an anyio
    ``CapacityLimiter`` is FIFO), holding no thread. One whose expected wait is over
    ``max_wait_s`` is refused with ``Overloaded`` instead of joining the line.

    With ``nice`` > 0, ``run`` uses threads of the lane's own (``slots`` of them, made on
    first use, ``close`` ends them) whose CPU priority is lowered by ``nice``."""

    def __init__(
        self, kind: str, slots: int, max_wait_s: float, first_guess_s: float, nice: int = 0
    ) -> None:
        if slots < 1:
            raise InvalidInput("slots", f"must be at least 1, got {slots}")
        self.kind = kind
        self.slots = slots
        self.max_wait_s = max_wait_s
        self.nice = nice
        self.service_s = first_guess_s  # a moving average of the time a slot is held
        self.shed = 0  # requests refused so far
        self._limiter: anyio.CapacityLimiter | None = None
        self._ahead: anyio.CapacityLimiter | None = None
        self._threads: ThreadPoolExecutor | None = None
        self._threads_lock = threading.Lock()

    def limiter(self) -> anyio.CapacityLimiter:
        # Made on first use: a limiter belongs to the event loop it is first used on.
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.slots)
        return self._limiter

    def wait_s(self) -> float:
        stats = self.limiter().statistics()
        return expected_wait(stats.tasks_waiting, stats.borrowed_tokens, self.slots, self.service_s)

    def admit(self) -> None:
        """Refuse a request that would wait too long (``Overloaded``)."""
        wait = self.wait_s()
        if wait > self.max_wait_s:
            self.shed += 1
            metrics.shed(self.kind)
            raise Overloaded(
                f"too many {self.kind}s waiting: about {wait:.1f} s in line, over the "
                f"{self.max_wait_s:g} s this server lets one wait; retry after the "
                "Retry-After seconds",
                retry_after(wait - self.max_wait_s),
            )

    async def run(self, work: Callable[[], T]) -> T:
        """``work()`` in a worker thread once a slot is free (the thread pool that sync
        handlers share is not taken from), or ``Overloaded``."""
        self.admit()
        if self.nice <= 0:
            return await anyio.to_thread.run_sync(self._timed, work, limiter=self.limiter())
        async with self.limiter():
            done = asyncio.get_running_loop().run_in_executor(self._pool(), self._timed, work)
            # As anyio's threads do: a request given up on still holds its slot until the
            # thread has finished its work, so the slots bound the threads busy.
            with anyio.CancelScope(shield=True):
                result = await done
        return result

    async def ahead(self, work: Callable[[], T]) -> T:
        """``work()`` in a worker thread before the request takes its slot: what it needs
        done that holds nothing others wait for (a note's embedding). As many at once as
        the lane has slots, in a line of their own; ``Overloaded`` when the lane's line
        is already too long (the request would be refused at its slot anyway)."""
        self.admit()
        if self._ahead is None:
            self._ahead = anyio.CapacityLimiter(self.slots)
        return await anyio.to_thread.run_sync(work, limiter=self._ahead)

    def _pool(self) -> ThreadPoolExecutor:
        with self._threads_lock:
            if self._threads is None:
                self._threads = ThreadPoolExecutor(
                    self.slots,
                    thread_name_prefix=f"episodic-{self.kind}",
                    initializer=lower_priority,
                    initargs=(self.nice,),
                )
            return self._threads

    def close(self) -> None:
        """End the lane's own threads (after the work they have)."""
        with self._threads_lock:
            threads, self._threads = self._threads, None
        if threads is not None:
            threads.shutdown(wait=True)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold a slot for the body (a sync handler's run), or ``Overloaded``."""
        self.admit()
        async with self.limiter():
            start = time.perf_counter()
            try:
                yield
            finally:
                self._measured(time.perf_counter() - start)

    def _timed(self, work: Callable[[], T]) -> T:
        start = time.perf_counter()
        try:
            return work()
        finally:
            self._measured(time.perf_counter() - start)

    def _measured(self, took: float) -> None:
        self.service_s += SERVICE_TIME_WEIGHT * (took - self.service_s)


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
                    await self._refuse(scope, send)
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
                await self._refuse(scope, send)

    async def _refuse(
        self, scope: MutableMapping[str, Any], send: Callable[[Any], Awaitable[None]]
    ) -> None:
        # Refused by Content-Length, the app (and its request ids) never saw the request.
        info = scope.get(REQUEST_SCOPE_KEY)
        request_id = info.request_id if info else request_id_of(scope.get("headers", []))
        error = error_body(
            "payload_too_large",
            f"request body over {self.limit} bytes; send smaller batches",
            "body",
        )
        error["error"]["request_id"] = request_id
        body = JSONResponse(error, status_code=413, headers={REQUEST_ID_HEADER: request_id})
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": body.raw_headers,
            }
        )
        await send({"type": "http.response.body", "body": body.body})
