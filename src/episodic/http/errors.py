"""Errors as HTTP answers: the table from error to status and code, the JSON error body,
the error responses every ``/v1`` route declares (``ERRORS``) and the exception handlers
that render them."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from episodic.errors import (
    EmbedderError,
    EpisodicError,
    Forbidden,
    InvalidInput,
    LLMError,
    ModelMismatch,
    NotFound,
    StoreBusy,
    StoreError,
    Unauthenticated,
    UnknownPolicy,
)
from episodic.logs import current_request_id

log = logging.getLogger("episodic.http")

# Seconds a client is told to wait before retrying a call the database was too busy for.
BUSY_RETRY_AFTER_S = 1

# The one table from error to HTTP status: (error type, status, code). First match wins.
ERROR_STATUS: tuple[tuple[type[Exception], int, str], ...] = (
    (Unauthenticated, 401, "unauthenticated"),
    (Forbidden, 403, "forbidden"),
    (InvalidInput, 422, "invalid_input"),
    (UnknownPolicy, 422, "unknown_policy"),
    (NotFound, 404, "not_found"),
    (ModelMismatch, 409, "model_mismatch"),
    (EmbedderError, 503, "embedder_unavailable"),
    (StoreBusy, 503, "store_busy"),
    (StoreError, 503, "store_unavailable"),
    (LLMError, 502, "llm_failed"),
    (EpisodicError, 400, "error"),
)


def error_status(exc: Exception) -> tuple[int, str]:
    for kind, status, code in ERROR_STATUS:
        if isinstance(exc, kind):
            return status, code
    return 500, "internal"


def error_body(code: str, message: str, field: str | None = None) -> dict[str, Any]:
    """The JSON error body, with the request's id (``X-Request-ID``) to find its log line."""
    return {
        "error": {
            "code": code,
            "field": field,
            "message": message,
            "request_id": current_request_id(),
        }
    }


class ErrorDetail(BaseModel):
    code: str
    field: str | None
    message: str
    request_id: str | None = None


class ErrorOut(BaseModel):
    error: ErrorDetail


ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorOut} for status in (400, 401, 403, 404, 409, 413, 422, 503)
}


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(EpisodicError)
    async def episodic_error(request: Request, exc: EpisodicError) -> Response:
        status, code = error_status(exc)
        field = getattr(exc, "field", None)
        if isinstance(exc, UnknownPolicy):
            field = "policy"
        message = exc.message if isinstance(exc, InvalidInput) else str(exc)
        if isinstance(exc, NotFound):
            message = f"no {exc.id} here" if exc.id == "health snapshot" else str(exc)
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        if isinstance(exc, StoreBusy):
            headers = {"Retry-After": str(BUSY_RETRY_AFTER_S)}
        return JSONResponse(error_body(code, message, field), status_code=status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Response:
        first = exc.errors()[0] if exc.errors() else {}
        loc = list(first.get("loc", ()))
        source = loc[0] if loc else None
        if source in ("body", "query", "path", "header", "cookie"):
            loc = loc[1:]  # where it came from; the rest names the field
        field = ".".join(str(part) for part in loc) or "body"
        if first.get("type") == "json_invalid":
            field = "body"
        message = str(first.get("msg", "invalid request"))
        sent_as = request.headers.get("content-type", "")
        if source == "body" and "json" not in sent_as.lower():
            # A body not declared JSON (curl -d sends it as a form) is never parsed as
            # JSON: pydantic's own message ("a valid dictionary") does not say that.
            message = (
                f"the body must be JSON sent with Content-Type: application/json (this one "
                f"came as {sent_as or 'no content type'}): {message}"
            )
        elif source == "body" and not loc and first.get("type") == "model_attributes_type":
            # A JSON array or string where the route takes an object (a batch of events
            # is {"events": [...]}, not the list itself).
            message = (
                f"the body must be a JSON object with this route's fields (see "
                f"/openapi.json): {message}"
            )
        return JSONResponse(error_body("invalid_input", message, field), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        code = {
            400: "bad_request",
            404: "not_found",
            405: "method_not_allowed",
            413: "payload_too_large",
            503: "overloaded",  # episodic.http.limits sheds load with it
        }.get(exc.status_code, "error")
        field = "body" if exc.status_code in (400, 413) else None
        return JSONResponse(
            error_body(code, _routing_message(request, exc), field),
            status_code=exc.status_code,
            headers=getattr(exc, "headers", None),
        )

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Response:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        body = error_body("internal", "unexpected server error; see the server log")
        # Sent past the request-id wrapper (Starlette answers a 500 from outside it).
        request_id = body["error"]["request_id"]
        headers = {"X-Request-ID": request_id} if request_id else None
        return JSONResponse(body, status_code=500, headers=headers)


# Starlette's own details when no route matched the path, or none took the method.
_NO_ROUTE = "Not Found"
_NO_METHOD = "Method Not Allowed"


def _routing_message(request: Request, exc: StarletteHTTPException) -> str:
    """``exc``'s detail, and for a request no route answers (a first try in a browser or
    curl), where the routes are."""
    detail = str(exc.detail)
    where = f"{request.method} {request.url.path}"
    if exc.status_code == 404 and detail == _NO_ROUTE:
        return (
            f"no route answers {where}: the API is under /v1 (every route in /openapi.json), "
            "the operator's page at /ui, health at /healthz"
        )
    headers = getattr(exc, "headers", None) or {}
    allowed = next((v for k, v in headers.items() if k.lower() == "allow"), None)
    if exc.status_code == 405 and detail == _NO_METHOD and allowed:
        return f"{request.url.path} does not take {request.method}: send {allowed}"
    return detail
