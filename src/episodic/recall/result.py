"""What a recall returns, in a module of its own over the vocabulary only, so a process
that reads results it did not rank (the HTTP client, the command line asking a server)
does not load the recall engine."""

from __future__ import annotations

from dataclasses import dataclass, field

from episodic.model import Candidate, Hit
from episodic.recall.trace import Trace


@dataclass(frozen=True, slots=True)
class RecallResult:
    hits: list[Hit]
    mode: str  # "vector" or "sparse-only"
    policy: str
    legs: dict[str, list[Candidate]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    trace: Trace | None = None
    # Institutional memories (seed 001's standing knowledge): loaded apart from the
    # ranking, newest first under their own budget, in addition to the k hits.
    institutional: list[Hit] = field(default_factory=list)
