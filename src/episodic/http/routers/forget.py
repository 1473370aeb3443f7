"""``POST /v1/forget``: remove data everywhere, by agent, resource, conversation, one
memory and/or age, or the whole workspace when the body says ``"all": true``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from episodic.errors import InvalidInput
from episodic.http.auth import Caller
from episodic.http.deps import Mem, WriteAdmission
from episodic.http.errors import ERRORS
from episodic.http.models import ForgetOut, Id, Strict

MAX_FORGET_DAYS = 36_500

# Every route here writes: each is counted in the line of writes (503 past its bound).
router = APIRouter(dependencies=[WriteAdmission])


class ForgetIn(Strict):
    agent: Id | None = None
    resource: Id | None = None
    conversation: Id | None = None
    memory: Id | None = None
    older_than_days: float | None = Field(default=None, gt=0, le=MAX_FORGET_DAYS)
    all: bool = Field(
        default=False,
        description="true to forget the whole workspace; a body naming nothing is refused",
    )
    workspace: Id | None = None


@router.post("/v1/forget", response_model=ForgetOut, responses=ERRORS, tags=["forget"])
def forget(body: ForgetIn, caller: Caller, mem: Mem) -> dict[str, Any]:
    """Remove data everywhere: by agent, resource, conversation, one memory and/or
    age, or the whole workspace with ``"all": true``. Needs an admin key, except for one
    memory of the key's own agent."""
    ws = caller.workspace(body.workspace)
    selectors = (body.agent, body.resource, body.conversation, body.memory, body.older_than_days)
    named = any(value is not None for value in selectors)
    # A body that names nothing (an empty object, a client that dropped its filter) must
    # never read as "everything": the whole workspace goes only when asked for by name.
    if not named and not body.all:
        raise InvalidInput(
            "all",
            "name what to forget (agent, resource, conversation, memory, older_than_days), "
            'or send "all": true to forget the whole workspace',
        )
    if named and body.all:
        raise InvalidInput("all", '"all": true forgets the whole workspace; name nothing else')
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
        all=body.all,
    ).to_json()
