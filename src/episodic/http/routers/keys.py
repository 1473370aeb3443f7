"""``GET /v1/whoami``: what the caller's API key is bound to."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel

from episodic.http.auth import Caller
from episodic.http.errors import ERRORS
from episodic.http.models import ScopeName

router = APIRouter()


class WhoAmIOut(BaseModel):
    key_id: str
    workspace: str
    role: Literal["agent", "lead", "admin"]
    agent: str | None
    crew: str | None
    scope: ScopeName | None


@router.get("/v1/whoami", response_model=WhoAmIOut, responses=ERRORS, tags=["keys"])
def whoami(caller: Caller) -> dict[str, Any]:
    """The key's workspace, role and bindings."""
    from episodic.model import scope_for_role

    scope = scope_for_role(caller.role)
    return {
        "key_id": caller.key.id,
        "workspace": caller.workspace_id,
        "role": caller.role.value,
        "agent": caller.key.agent_id,
        "crew": caller.key.crew_id,
        "scope": None if scope is None else scope.value,
    }
