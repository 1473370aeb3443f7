# TEMPORARY STUB
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class EpisodeText:
    title: str
    summary: str
    keyphrases: tuple[str, ...]
    source: str


def describe_episode(messages: Any, vectors: Any, llm: Any, **kw: Any) -> EpisodeText:
    spoken = [m for m in messages if m.spoken]
    first = spoken[0].text if spoken else ""
    return EpisodeText(
        " ".join(first.split()[:10]), " ".join(m.text for m in spoken)[:600], (), "offline:stub"
    )
