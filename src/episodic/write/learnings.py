# TEMPORARY STUB
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Learning:
    content: str
    type: str
    domain: str
    importance: float
    evidence: str
    message_id: str | None
    extractor: str


def extract_learnings(messages: Any, llm: Any, **kw: Any) -> list[Learning]:
    return []
