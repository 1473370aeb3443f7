"""The server's log lines: what one request is (``RequestInfo``, held in a context
variable for the request's whole life, threads included), and the two formats a line takes
(``EPISODIC_LOG_FORMAT``: ``text``, the default, or ``json``, one object per line with the
request's id, workspace, route, status and duration, for log collectors)."""

from __future__ import annotations

import json
import logging
import os
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from episodic.errors import InvalidInput

LOG_FORMATS = ("text", "json")
TEXT_FORMAT = "%(levelname)s %(name)s: %(message)s"


@dataclass(slots=True)
class RequestInfo:
    """One HTTP request as its log lines name it. Mutable, and shared by reference: a
    handler run on a worker thread sees a copy of the context, but the same object, so
    what it fills in (the caller's workspace) reaches the line logged when it ends."""

    request_id: str
    method: str = ""
    route: str | None = None
    workspace: str | None = None
    status: int | None = None
    duration_ms: float | None = None


CURRENT_REQUEST: ContextVar[RequestInfo | None] = ContextVar("episodic_request", default=None)


def current_request() -> RequestInfo | None:
    return CURRENT_REQUEST.get()


def current_request_id() -> str | None:
    info = CURRENT_REQUEST.get()
    return None if info is None else info.request_id


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (UTC, ISO 8601), level, logger, message, and the
    request's id, workspace, route, status and duration in ms (null outside a request);
    an exception's traceback under ``exc_info``."""

    def format(self, record: logging.LogRecord) -> str:
        info = CURRENT_REQUEST.get()
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": info.request_id if info else None,
            "workspace": info.workspace if info else None,
            "route": info.route if info else None,
            "status": info.status if info else None,
            "duration_ms": info.duration_ms if info else None,
        }
        if record.exc_info:
            line["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def log_format(environ: dict[str, str] | None = None) -> str:
    """``EPISODIC_LOG_FORMAT``: ``text`` (the default) or ``json``; anything else is an
    error that names the variable."""
    value = (os.environ if environ is None else environ).get("EPISODIC_LOG_FORMAT", "text")
    value = value.strip().lower() or "text"
    if value not in LOG_FORMATS:
        raise InvalidInput("EPISODIC_LOG_FORMAT", f"'{value}': use one of {', '.join(LOG_FORMATS)}")
    return value


def formatter(kind: str) -> logging.Formatter:
    return JsonFormatter() if kind == "json" else logging.Formatter(TEXT_FORMAT)


def configure_logging(level: int, environ: dict[str, str] | None = None) -> None:
    """The root logger's handler in the chosen format (what the CLI sets up); with
    ``json``, uvicorn's own loggers write through the same handler, so every line of the
    server's output is one JSON object."""
    kind = log_format(environ)
    logging.basicConfig(level=level, format=TEXT_FORMAT)
    root = logging.getLogger()
    for handler in root.handlers:
        handler.setFormatter(formatter(kind))
    if kind == "json":
        # Each request's own line (episodic.http.request_context) carries its id, route,
        # status and duration; uvicorn's access line would say less, twice.
        logging.getLogger("episodic.access").setLevel(logging.INFO)
        for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
            uv = logging.getLogger(name)
            uv.handlers.clear()
            uv.propagate = True


def uvicorn_options() -> dict[str, Any]:
    """uvicorn's logging settings: in JSON mode, no config of its own (its loggers write
    through the root handler, as JSON) and no access line (each request's own line says
    more: episodic.http.request_context); its defaults otherwise."""
    if log_format() == "json":
        return {"log_config": None, "access_log": False}
    return {}
