"""Who is calling: the bearer API key read from the request and checked by the service
(``principal``), and ``Caller``, the dependency every ``/v1`` route takes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from episodic.http.deps import Mem
from episodic.logs import current_request
from episodic.tenancy import Principal


def bearer_secret(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


# Declares the bearer key in the OpenAPI spec; ``principal`` reads and checks the header
# itself, so a missing or bad key is the API's own 401 body.
_BEARER = HTTPBearer(auto_error=False, description="an API key: `episodic keys create`")


def principal(
    request: Request,
    mem: Mem,
    _: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)],
) -> Principal:
    """The caller: the API key in ``Authorization: Bearer``."""
    caller = mem.authenticate(bearer_secret(request))
    info = current_request()
    if info is not None:
        info.workspace = caller.workspace_id  # for the request's log line
    return caller


Caller = Annotated[Principal, Depends(principal)]
