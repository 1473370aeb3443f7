# TEMPORARY STUB
import hashlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Entry:
    content: str
    source: str
    evidence: str
    message_id: str
    extractor: str


@dataclass(frozen=True, slots=True)
class Dropped:
    content: str
    reason: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Extraction:
    entries: tuple[Entry, ...]
    dropped: tuple[Dropped, ...]


def normalise(text: str) -> str:
    return " ".join(text.split())


def content_hash(text: str) -> str:
    return hashlib.sha256(normalise(text).encode()).hexdigest()


def extract_entries(messages: Any, llm: Any, **kw: Any) -> Extraction:
    out = [
        Entry(m.text, "user_assertion", m.text, m.id, "offline")
        for m in messages
        if m.role == "user" and len(m.text.split()) >= 6 and not m.text.endswith("?")
    ]
    return Extraction(tuple(out[:5]), ())
