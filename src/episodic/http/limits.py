"""What bounds the load one server takes: the request body size limit (``BodyLimit``, an
ASGI wrapper around the app) and the gate on recalls in flight (``FairGate``)."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from episodic.http.errors import error_body

# A request body larger than this is refused with 413 before it is parsed.
MAX_BODY_BYTES = 4 * 1024 * 1024

# Recalls in flight per process. The store serialises its reads on one connection and
# Python's locks are not fair, so with many more threads than that a few requests can
# lose the lock again and again; a FIFO gate keeps the order of arrival. Four let the
# query embedding of some overlap the store work of others (measured in-process, 16
# threads over 100k memories: 48.6 vs 37.9 recalls/s, p95 513 vs 749 ms on a busy machine).
RECALL_SLOTS = 4


class FairGate:
    """A FIFO semaphore: a released slot goes to the longest waiter."""

    def __init__(self, slots: int) -> None:
        self._free = slots
        self._lock = threading.Lock()
        self._waiters: deque[threading.Event] = deque()

    def __enter__(self) -> None:
        with self._lock:
            if self._free > 0 and not self._waiters:
                self._free -= 1
                return
            turn = threading.Event()
            self._waiters.append(turn)
        turn.wait()

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            if self._waiters:
                self._waiters.popleft().set()  # the slot passes straight to the next
            else:
                self._free += 1


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
