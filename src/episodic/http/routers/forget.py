"""``POST /v1/forget``: remove data everywhere, by agent, resource, conversation, one
memory and/or age."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from episodic.http.auth import Caller
from episodic.http.deps import Mem
from episodic.http.errors import ERRORS
from episodic.http.models import ForgetOut, Id, Strict

MAX_FORGET_DAYS = 36_500

router = APIRouter()


class ForgetIn(Strict):
    agent: Id | None = None
    resource: Id | None = None
    conversation: Id | None = None
    memory: Id | None = None
    older_than_days: float | None = Field(default=None, gt=0, le=MAX_FORGET_DAYS)
    workspace: Id | None = None


@router.post("/v1/forget", response_model=ForgetOut, responses=ERRORS, tags=["forget"])
def forget(body: ForgetIn, caller: Caller, mem: Mem) -> dict[str, Any]:
    """Remove data everywhere: by agent, resource, conversation, one memory and/or
    age. Needs an admin key, except for one memory of the key's own agent."""
    ws = caller.workspace(body.workspace)
    only_memory = body.memory is not None and not any(
        (body.agent, body.resource, body.conversation, body.older_than_days)
    )
    if only_memory and not caller.is_admin:
        assert body.memory is not None
        return mem.forget_memory_as(caller, body.memory).to_json()
    caller.require_admin("forgetting more than one memory")
    return mem.forget(
        workspace=ws,
        agent=body.agent,
        resource=body.resource,
        conversation=body.conversation,
        memory=body.memory,
        older_than_days=body.older_than_days,
    ).to_json()
