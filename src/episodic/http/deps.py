"""What one app keeps in ``app.state`` for its handlers, as dependencies: the service
(``Mem``) and the gate on recalls in flight (``RecallGate``). ``create_app`` puts them
there."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from episodic.http.limits import FairGate
from episodic.service import Episodic


# Both are async so that FastAPI calls them on the event loop, not through its thread pool.
async def episodic_of(request: Request) -> Episodic:
    mem: Episodic = request.app.state.episodic
    return mem


async def recall_gate_of(request: Request) -> FairGate:
    gate: FairGate = request.app.state.recall_gate
    return gate


Mem = Annotated[Episodic, Depends(episodic_of)]
RecallGate = Annotated[FairGate, Depends(recall_gate_of)]
