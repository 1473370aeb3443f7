"""``GET /metrics``: the Prometheus text exposition of every server and recall process's
figures (``episodic.metrics``). It names no workspace, but it is still the server's
inside view: it needs an admin key of any workspace, or the bearer token in
``EPISODIC_METRICS_TOKEN`` (for a scraper given no API key). ``episodic serve
--metrics-port`` serves the same page on a port of its own, without a key. A server
installed without prometheus-client answers 501 with the install to run, and logs it
once."""

from __future__ import annotations

import hmac
import logging
import os

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from episodic import metrics
from episodic.errors import Forbidden
from episodic.http.auth import bearer_secret
from episodic.http.deps import Mem
from episodic.http.errors import error_body
from episodic.model import Role

log = logging.getLogger("episodic.http")
router = APIRouter()


def metrics_token() -> str | None:
    return os.environ.get("EPISODIC_METRICS_TOKEN") or None


@router.get(
    "/metrics",
    response_class=Response,
    responses={
        200: {"content": {"text/plain": {}}, "description": "Prometheus text format"},
        401: {"description": "no key, or not a valid one"},
        403: {"description": "a key, but not an admin's"},
        501: {"description": "prometheus-client (the [server] extra) is not installed"},
    },
    tags=["health"],
    include_in_schema=False,  # not JSON, not for API clients: for Prometheus
)
def scrape(request: Request, mem: Mem) -> Response:
    """The server's metrics (Prometheus text format): an admin key, or the bearer token
    ``EPISODIC_METRICS_TOKEN``. 501, naming the install, when prometheus-client is
    missing."""
    secret = bearer_secret(request)
    token = metrics_token()
    if not (token and secret and hmac.compare_digest(secret.encode(), token.encode())):
        caller = mem.authenticate(secret)  # 401 without a valid key
        if caller.role != Role.ADMIN:
            raise Forbidden("/metrics needs an admin key or EPISODIC_METRICS_TOKEN")
    missing = metrics.unavailable()
    if missing is not None:
        # A scraper asks every few seconds: the server says why once, not at each scrape.
        if not getattr(request.app.state, "metrics_missing_said", False):
            request.app.state.metrics_missing_said = True
            log.warning("GET /metrics answers 501: %s", missing)
        return JSONResponse(error_body("metrics_unavailable", missing), status_code=501)
    page = metrics.exposition(metrics.StoreFigures(mem.store))
    return Response(page, media_type=metrics.CONTENT_TYPE)
