"""Each request's id and its one log line: ``RequestContext`` (an ASGI wrapper) takes the
caller's ``X-Request-ID`` when it is well-formed or makes a new one, holds it for the
request's life (``episodic.logs.CURRENT_REQUEST``: error bodies and log lines read it),
sends it back on every response, and when the response is done logs the request with its
route template, status and duration and hands it to the observers (the metrics). With
traces on (``episodic.tracing``), the request is a span, continuing the caller's trace
when its headers carry one."""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from episodic import tracing
from episodic.logs import CURRENT_REQUEST, RequestInfo

log = logging.getLogger("episodic.access")

REQUEST_ID_HEADER = "X-Request-ID"
_HEADER = REQUEST_ID_HEADER.lower().encode()
# What a caller's id may be: short, and nothing a log line or a header could be bent by.
WELL_FORMED_ID = re.compile(r"[A-Za-z0-9._-]{1,128}")
# Where the request is left in the scope: for the size limit's refusal, and so that a
# second wrapper (an app mounted in another) does not start another.
SCOPE_KEY = "episodic.request"

Observer = Callable[[RequestInfo], None]


def new_request_id() -> str:
    return uuid.uuid4().hex


def request_id_of(headers: list[tuple[bytes, bytes]]) -> str:
    """The caller's id if it sent a well-formed one, else a new one."""
    for name, value in headers:
        if name.lower() == _HEADER:
            try:
                sent = value.decode("ascii")
            except UnicodeDecodeError:
                break
            if WELL_FORMED_ID.fullmatch(sent):
                return sent
            break
    return new_request_id()


def route_of(scope: MutableMapping[str, Any]) -> str | None:
    """The route's template (``/v1/memories/{memory_id}``), never the path itself: a
    path holds ids, which would make a label or a log field per memory. None when no
    route matched (a 404) or the request was refused before routing."""
    route = scope.get("route")
    path = getattr(route, "path_format", None) or getattr(route, "path", None)
    if isinstance(path, str):
        return scope.get("root_path", "") + path if scope.get("root_path") else path
    return None


def text_headers(scope: MutableMapping[str, Any]) -> dict[str, str]:
    """The request's headers as text, lower-cased names (what a trace propagator reads)."""
    return {
        name.decode("latin-1").lower(): value.decode("latin-1")
        for name, value in scope.get("headers", [])
    }


class RequestContext:
    """The request's id, its header on the response, and its log line at the end."""

    def __init__(self, app: Any, observers: tuple[Observer, ...] = ()) -> None:
        self.app = app
        self.observers = observers

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[Any]],
        send: Callable[[Any], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http" or SCOPE_KEY in scope:
            await self.app(scope, receive, send)
            return
        info = RequestInfo(request_id=request_id_of(scope.get("headers", [])))
        info.method = scope.get("method", "")
        scope[SCOPE_KEY] = info
        # Not reset on leaving: the 500 handler runs after this frame has unwound, and
        # still names the request; each request runs in a task of its own, so the value
        # goes no further.
        CURRENT_REQUEST.set(info)
        if not tracing.ACTIVE:
            await self._answer(scope, receive, send, info)
            return
        with tracing.server_span(info.method, text_headers(scope)) as found:
            try:
                await self._answer(scope, receive, send, info)
            finally:
                tracing.finish_server_span(found, info.route, info.status or 500, info.request_id)

    async def _answer(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[Any]],
        send: Callable[[Any], Awaitable[None]],
        info: RequestInfo,
    ) -> None:
        header = (_HEADER, info.request_id.encode())
        started = time.perf_counter()

        async def with_id(message: Any) -> None:
            if message.get("type") == "http.response.start":
                info.status = int(message["status"])
                headers = list(message.get("headers", []))
                if not any(name.lower() == _HEADER for name, _ in headers):
                    headers.append(header)
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, with_id)
        except BaseException:
            info.status = info.status or 500
            raise
        finally:
            info.route = route_of(scope)
            info.duration_ms = round((time.perf_counter() - started) * 1000.0, 3)
            self._done(info)

    def _done(self, info: RequestInfo) -> None:
        log.info("%s %s %s", info.method, info.route or "-", info.status)
        for observe in self.observers:
            try:
                observe(info)
            except Exception:  # an observer's bug must not fail the request
                log.exception("request observer failed")
