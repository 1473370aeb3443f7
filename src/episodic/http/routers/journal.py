"""``GET /v1/journal``: keyword search of the journal itself (seed 000's ``?q=``), every
event whether or not it became a memory, archived ones included and marked."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from episodic.http.auth import Caller
from episodic.http.deps import Mem
from episodic.http.errors import ERRORS
from episodic.http.models import MAX_TEXT_CHARS, Id
from episodic.store.journal import DEFAULT_JOURNAL_HITS, MAX_JOURNAL_HITS

router = APIRouter()


class JournalEventOut(BaseModel):
    id: str
    ts: str
    type: str
    severity: str
    agent: str | None
    crew: str | None
    summary: str
    archived: bool = Field(description="found in the archive (its payload cut to 400 chars)")
    score: float = Field(description="BM25, higher is better")


class JournalOut(BaseModel):
    events: list[JournalEventOut] = Field(description="best match first")


@router.get("/v1/journal", response_model=JournalOut, responses=ERRORS, tags=["journal"])
def search_journal(
    caller: Caller,
    mem: Mem,
    q: Annotated[str, Query(min_length=1, max_length=MAX_TEXT_CHARS, pattern=r"\S")],
    type: Annotated[list[Id] | None, Query(max_length=20)] = None,
    since: Annotated[str | None, Query(max_length=64, description="ISO 8601")] = None,
    k: Annotated[int, Query(ge=1, le=MAX_JOURNAL_HITS)] = DEFAULT_JOURNAL_HITS,
    agent: Annotated[Id | None, Query()] = None,
    crew: Annotated[Id | None, Query()] = None,
    workspace: Annotated[Id | None, Query()] = None,
) -> dict[str, Any]:
    """Journal events whose summary or payload hold the words of ``q``, best match
    first. An agent key searches its agent's events, a lead key its own and its crew's,
    an admin key the whole workspace (narrowed by ``agent`` / ``crew`` if given)."""
    flt = caller.reading(workspace=workspace, agent=agent, crew=crew)
    hits = mem.search_journal(
        q,
        workspace=flt.workspace_id,
        types=type,
        since=since,
        k=k,
        agent=flt.agent_id,
        crew=flt.crew_id,
        scope=flt.scope,
    )
    return {"events": [h.to_json() for h in hits]}
