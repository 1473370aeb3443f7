"""What one app keeps in ``app.state`` for its handlers, as dependencies: the service
(``Mem``), the line of recalls (``Recalls``) and the line of writes (``WriteAdmission``,
a slot held while a write handler runs, or 503 past the line's bound; ``Writes``, the
lane itself, for a handler that takes its slot later). ``create_app`` puts
them there."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Request

from episodic.http.limits import Lane
from episodic.service import Episodic


# All are async so that FastAPI calls them on the event loop, not through its thread pool:
# a write waits for its slot there, holding no thread, then its sync handler runs.
async def episodic_of(request: Request) -> Episodic:
    mem: Episodic = request.app.state.episodic
    return mem


async def recalls_of(request: Request) -> Lane:
    lane: Lane = request.app.state.recalls
    return lane


async def write_admission(request: Request) -> AsyncIterator[None]:
    writes: Lane = request.app.state.writes
    async with writes.slot():
        yield


async def writes_of(request: Request) -> Lane:
    lane: Lane = request.app.state.writes
    return lane


Mem = Annotated[Episodic, Depends(episodic_of)]
Recalls = Annotated[Lane, Depends(recalls_of)]
Writes = Annotated[Lane, Depends(writes_of)]
WriteAdmission = Depends(write_admission)
