"""``POST /v1/messages``: append chat messages to a conversation, one or a batch."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Response
from pydantic import BaseModel, Field, RootModel

from episodic.errors import InvalidInput
from episodic.http.auth import Caller
from episodic.http.deps import Mem, WriteAdmission
from episodic.http.errors import ERRORS
from episodic.http.models import Content, Id, Strict
from episodic.http.routers.events import ItemError, NotAdmittedOut

MAX_BATCH_MESSAGES = 1000

# Every route here writes: each is counted in the line of writes (503 past its bound).
router = APIRouter(dependencies=[WriteAdmission])


class MessageIn(Strict):
    """One message, or a batch of them in ``messages``. In a batch, each item takes
    ``content``, ``role``, ``name``, ``ts``, ``id``, ``payload`` and may override
    ``conversation``, ``agent``, ``crew`` and ``resource``, which default to the
    body's."""

    conversation: Id | None = Field(default=None, description="required for one message")
    content: Content | None = Field(
        default=None, description="what was said (required for one message)"
    )
    text: Content | None = Field(
        default=None,
        # Marked deprecated in the schema only: pydantic's own flag would warn on every
        # read of the field inside the server, not to the caller who sent it.
        json_schema_extra={"deprecated": True},
        description="deprecated: the old name of content",
    )
    role: Literal["user", "assistant", "tool", "system"] = "user"
    name: Id | None = None
    agent: Id | None = None
    crew: Id | None = None
    resource: Id | None = None
    ts: Id | None = Field(default=None, description="ISO 8601; default now")
    id: Id | None = None
    workspace: Id | None = None
    messages: list[Any] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_BATCH_MESSAGES,
        description="a batch, stored in order; bad items are reported by index and skipped",
    )


class MessageOut(BaseModel):
    id: str
    workspace: str
    conversation: str | None
    ts: str


class MessagesOut(BaseModel):
    received: int
    stored: int
    duplicates: int
    ids: list[str | None] = Field(description="each message's id, in order; null if refused")
    errors: list[ItemError]
    not_admitted: list[NotAdmittedOut] = Field(
        default_factory=list,
        description="messages stored with their conversation but not kept as memories "
        "(tool and system messages), each with the rule that refused it and how to keep it",
    )


class PostMessagesOut(RootModel[MessageOut | MessagesOut]):
    """One message's id and time, or a batch's report."""


# Fields that belong to one message: in a batch they go on each item.
_SINGLE_ONLY = ("content", "text", "role", "name", "ts", "id")


@router.post(
    "/v1/messages",
    response_model=PostMessagesOut,
    status_code=201,
    # A batch is answered 200 with its report (as POST /v1/events is): documented, so a
    # client generated from the schema expects it.
    responses={
        200: {"model": MessagesOut, "description": "a batch (``messages``): its report"},
        **ERRORS,
    },
    tags=["write"],
)
def post_message(body: MessageIn, caller: Caller, mem: Mem, response: Response) -> dict[str, Any]:
    """Append one chat message to a conversation, or a batch (``messages``, answered
    200 with a report like ``POST /v1/events``); episodes follow on segmentation."""
    workspace = caller.workspace(body.workspace)
    if body.messages is not None:
        for name in _SINGLE_ONLY:
            if name in body.model_fields_set:
                raise InvalidInput(name, "in a batch, give it on each message")
        response.status_code = 200
        return _post_batch(body, body.messages, workspace, caller, mem)
    content = body.content
    if body.text is not None:
        if content is not None and content != body.text:
            raise InvalidInput("text", "the old name of 'content', which says otherwise")
        content = body.text
        response.headers["Deprecation"] = "true"
        response.headers["X-Episodic-Deprecated"] = "text -> content"
    if body.conversation is None:
        raise InvalidInput("conversation", "required: the conversation it belongs to")
    if content is None:
        raise InvalidInput("content", "required (what was said)")
    event = mem.add_message(
        content,
        workspace=workspace,
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


def _post_batch(
    body: MessageIn, raw_items: list[Any], workspace: str, caller: Caller, mem: Mem
) -> dict[str, Any]:
    """A batch: each item's agent and crew bound by the key (``Forbidden`` for the whole
    batch when one names another, as ``POST /v1/events`` does); bad items reported."""
    items: list[Any] = []
    for raw in raw_items:
        if isinstance(raw, dict):
            item = dict(raw)
            for name, check in (("agent", caller.agent), ("crew", caller.crew)):
                value = item.get(name, getattr(body, name))
                if value is None or isinstance(value, str):
                    item[name] = check(value)
            items.append(item)
        else:
            items.append(raw)
    report = mem.add_messages(
        items,
        workspace=workspace,
        conversation=body.conversation,
        agent=caller.agent(body.agent),
        crew=caller.crew(body.crew),
        resource=body.resource,
    )
    return report.to_json()
