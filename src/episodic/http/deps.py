"""What one app keeps in ``app.state`` for its handlers, as dependencies: the service
(``Mem``), the line of recalls (``Recalls``) and the count of writes in line
(``WriteAdmission``, which refuses a write past the bound). ``create_app`` puts them
there."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Request

from episodic.http.limits import RecallQueue, WriteCount
from episodic.service import Episodic


# All are async so that FastAPI calls them on the event loop, not through its thread pool
# (the write count is only ever touched there, so it needs no lock).
async def episodic_of(request: Request) -> Episodic:
    mem: Episodic = request.app.state.episodic
    return mem


async def recalls_of(request: Request) -> RecallQueue:
    queue: RecallQueue = request.app.state.recalls
    return queue


async def write_admission(request: Request) -> AsyncIterator[None]:
    writes: WriteCount = request.app.state.writes
    with writes.admit():
        yield


Mem = Annotated[Episodic, Depends(episodic_of)]
Recalls = Annotated[RecallQueue, Depends(recalls_of)]
WriteAdmission = Depends(write_admission)
