"""``POST /v1/messages``: append one chat message to a conversation."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Response
from pydantic import BaseModel, Field

from episodic.errors import InvalidInput
from episodic.http.auth import Caller
from episodic.http.deps import Mem
from episodic.http.errors import ERRORS
from episodic.http.models import Id, NonEmptyText, Strict

router = APIRouter()


class MessageIn(Strict):
    conversation: Id
    content: NonEmptyText | None = Field(default=None, description="what was said (required)")
    text: NonEmptyText | None = Field(
        default=None, deprecated=True, description="the old name of content"
    )
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
    workspace: str
    conversation: str | None
    ts: str


@router.post(
    "/v1/messages",
    response_model=MessageOut,
    status_code=201,
    responses=ERRORS,
    tags=["write"],
)
def post_message(body: MessageIn, caller: Caller, mem: Mem, response: Response) -> dict[str, Any]:
    """Append one chat message to a conversation; episodes follow on segmentation."""
    content = body.content
    if body.text is not None:
        if content is not None and content != body.text:
            raise InvalidInput("text", "the old name of 'content', which says otherwise")
        content = body.text
        response.headers["Deprecation"] = "true"
        response.headers["X-Episodic-Deprecated"] = "text -> content"
    if content is None:
        raise InvalidInput("content", "required (what was said)")
    event = mem.add_message(
        content,
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
        "workspace": event.workspace,
        "conversation": event.conversation,
        "ts": event.ts.isoformat(),
    }
