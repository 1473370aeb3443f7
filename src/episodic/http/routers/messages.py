"""``POST /v1/messages``: append one chat message to a conversation."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, Field

from episodic.http.auth import Caller
from episodic.http.deps import Mem
from episodic.http.errors import ERRORS
from episodic.http.models import Id, NonEmptyText, Strict

router = APIRouter()


class MessageIn(Strict):
    conversation: Id
    text: NonEmptyText
    role: Literal["user", "assistant", "tool", "system"] = "user"
    name: Id | None = None
    agent: Id | None = None
    crew: Id | None = None
    resource: Id | None = None
    ts: Id | None = Field(default=None, description="ISO 8601; default now")
    id: Id | None = None
    workspace: Id | None = None


class MessageOut(BaseModel):
    id: str
    workspace_id: str
    conversation_id: str | None
    ts: str


@router.post(
    "/v1/messages",
    response_model=MessageOut,
    status_code=201,
    responses=ERRORS,
    tags=["write"],
)
def post_message(body: MessageIn, caller: Caller, mem: Mem) -> dict[str, Any]:
    """Append one chat message to a conversation; episodes follow on segmentation."""
    event = mem.add_message(
        body.text,
        workspace=caller.workspace(body.workspace),
        conversation=body.conversation,
        role=body.role,
        agent=caller.agent(body.agent),
        crew=caller.crew(body.crew),
        resource=body.resource,
        name=body.name,
        ts=body.ts,
        id=body.id,
    )
    return {
        "id": event.id,
        "workspace_id": event.workspace_id,
        "conversation_id": event.conversation_id,
        "ts": event.ts.isoformat(),
    }
