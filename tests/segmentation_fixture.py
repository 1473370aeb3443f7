"""The labelled segmentation fixture (``fixtures/segmentation.json``) and what runs it.

Each conversation carries the indices of the messages that start a new episode and why
("topic", "soft gap", "hard gap"); the conversations were written for these tests, not
taken from any data set. ``segment_fixture`` feeds them through ``Episodic`` as chat
messages, one ``segment(flush=True)`` per conversation (what ``on_complete`` and
``episodic index --once --flush`` do), and reads back where each episode starts.
``boundary_scores`` compares that with the labels.

The LLM path talks to a local chat-completions server whose topic answers come from the
labels (``LabelledResponder``): of the candidates it is asked about, it names exactly the
labelled boundaries. Its scores measure what the pipeline loses (a boundary the pre-filter
never offers, a surprise split the model cannot undo), not what a model knows. Used by
``tests/test_segmentation_fixture.py`` and ``benchmarks/bench_segmentation.py``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from chat_server import ChatServer, Recorded, Reply
from episodic import Episodic, Settings
from episodic.embed.base import Embedder
from episodic.llm.base import LLM
from episodic.llm.prompts import DEFAULT_PROMPTS
from episodic.store import open_store
from episodic.write.episodes import episode_json
from episodic.write.messages import Message, spoken_content

FIXTURE = Path(__file__).parent / "fixtures" / "segmentation.json"
WORKSPACE = "fixture"
KINDS = ("topic", "soft gap", "hard gap")


@dataclass(frozen=True, slots=True)
class Labelled:
    """One conversation of the fixture: its messages and labelled boundaries."""

    id: str
    about: str
    messages: tuple[Message, ...]
    boundaries: dict[int, str]  # message index -> kind

    def message_id(self, i: int) -> str:
        return f"{self.id}-{i:03d}"


def load_fixture(path: Path = FIXTURE) -> list[Labelled]:
    data = json.loads(path.read_text(encoding="utf-8"))
    out: list[Labelled] = []
    for c in data["conversations"]:
        messages = tuple(
            Message(
                id=f"{c['id']}-{i:03d}",
                role=m["role"],
                text=m["text"],
                ts=datetime.fromisoformat(m["at"]),
                name=m.get("name"),
            )
            for i, m in enumerate(c["messages"])
        )
        boundaries = {int(b["at"]): str(b["kind"]) for b in c["boundaries"]}
        out.append(Labelled(c["id"], c["about"], messages, boundaries))
    return out


@dataclass(frozen=True, slots=True)
class BoundaryScores:
    precision: float
    recall: float
    f1: float
    hits: int
    false: int
    missed: int

    def line(self) -> str:
        return (
            f"P {self.precision:.2f}  R {self.recall:.2f}  F1 {self.f1:.2f}  "
            f"({self.hits} found, {self.false} wrong, {self.missed} missed)"
        )


def boundary_scores(
    gold: Sequence[Sequence[int]], predicted: Sequence[Sequence[int]], tolerance: int = 0
) -> BoundaryScores:
    """Precision, recall and F1 of predicted boundaries against labelled ones, summed
    over conversations. A prediction within ``tolerance`` messages of a labelled boundary
    not matched yet counts once (the nearest first)."""
    hits = false = missed = 0
    for labels, guesses in zip(gold, predicted, strict=True):
        free = sorted(set(labels))
        for b in sorted(set(guesses)):
            near = [g for g in free if abs(g - b) <= tolerance]
            if near:
                free.remove(min(near, key=lambda g: (abs(g - b), g)))
                hits += 1
            else:
                false += 1
        missed += len(free)
    precision = hits / (hits + false) if hits + false else 0.0
    recall = hits / (hits + missed) if hits + missed else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return BoundaryScores(precision, recall, f1, hits, false, missed)


@dataclass(slots=True)
class FixtureRun:
    """Where each conversation's episodes start (0 left out), and each episode's
    (start, surprise, key moment)."""

    starts: dict[str, list[int]] = field(default_factory=dict)
    episodes: dict[str, list[tuple[int, float, bool]]] = field(default_factory=dict)

    def scores(self, conversations: Sequence[Labelled], tolerance: int = 0) -> BoundaryScores:
        return boundary_scores(
            [sorted(c.boundaries) for c in conversations],
            [self.starts[c.id] for c in conversations],
            tolerance,
        )

    def recall_of(self, conversations: Sequence[Labelled], kind: str) -> tuple[int, int]:
        """(found within one message, labelled) for the boundaries of one kind."""
        found = labelled = 0
        for c in conversations:
            for at, k in c.boundaries.items():
                if k == kind:
                    labelled += 1
                    found += any(abs(at - s) <= 1 for s in self.starts[c.id])
        return found, labelled


def segment_fixture(
    conversations: Sequence[Labelled],
    embedder: Embedder | None,
    llm: LLM | None = None,
    responder: LabelledResponder | None = None,
) -> FixtureRun:
    """Each conversation through a fresh in-memory service: messages in, one flushing
    ``segment``, episodes out."""
    clock = [datetime.now().astimezone()]
    mem = Episodic(
        store=open_store("sqlite:///:memory:"),
        embedder=embedder,
        settings=Settings(),
        clock=lambda: clock[0],
        llm=llm,
    )
    run = FixtureRun()
    try:
        for c in conversations:
            if responder is not None:
                responder.current = c
            for i, m in enumerate(c.messages):
                mem.add_message(
                    m.text,
                    workspace=WORKSPACE,
                    conversation=c.id,
                    role=m.role,
                    name=m.name,
                    ts=m.ts,
                    id=c.message_id(i),
                )
            clock[0] = c.messages[-1].ts + timedelta(minutes=1)
            mem.segment(flush=True, workspace=WORKSPACE, conversation=c.id)
            index = {c.message_id(i): i for i in range(len(c.messages))}
            found = mem.recent(workspace=WORKSPACE, conversation=c.id, limit=len(c.messages))
            shown = sorted((index[e.source_event_ids[0]], episode_json(e)) for e in found)
            run.starts[c.id] = [start for start, _ in shown if start > 0]
            run.episodes[c.id] = [(s, e["surprise"], e["key_moment"]) for s, e in shown]
    finally:
        mem.close()
    return run


_CANDIDATES = re.compile(r"Candidate messages: \[([\d,\s]*)\]")


class LabelledResponder:
    """Answers a chat-completions request from the fixture's labels: the topic prompt with
    the labelled boundaries among the candidates it lists (every message, for a prompt
    that lists none), the other steps with minimal valid replies (their offline fallbacks
    would do as well; this keeps the run quiet). Counts the topic requests and the
    candidates they asked about."""

    def __init__(self) -> None:
        self.current: Labelled | None = None
        self.topic_requests = 0
        self.candidates_asked = 0

    def __call__(self, request: Recorded) -> Reply:
        system = request.body["messages"][0]["content"]
        user = request.body["messages"][1]["content"]
        if system == DEFAULT_PROMPTS.topics_system:
            assert self.current is not None
            listed = _CANDIDATES.search(user)
            asked = (
                [int(x) for x in listed.group(1).split(",") if x.strip()]
                if listed
                else list(range(1, len(self.current.messages)))
            )
            self.topic_requests += 1
            self.candidates_asked += len(asked)
            starts = [i for i in asked if i in self.current.boundaries]
            return 200, ChatServer.completion(json.dumps({"starts": starts})), 0.0
        return other_step_reply(system)


def other_step_reply(system: str) -> Reply:
    """A minimal valid reply to the describe, extract or learnings prompt (``system``)."""
    reply: object
    if system == DEFAULT_PROMPTS.describe_system:
        reply = {
            "title": "An episode of a conversation, described by a scripted model",
            "summary": "What was said in this part of the conversation.",
            "keyphrases": [],
        }
    elif system == DEFAULT_PROMPTS.extract_system:
        reply = {"entries": []}
    else:
        reply = {"learnings": []}
    return 200, ChatServer.completion(json.dumps(reply)), 0.0


def opening_surprises(
    conversations: Sequence[Labelled], embedder: Embedder
) -> list[tuple[str, int, float]]:
    """For every spoken turn that starts no labelled episode (and follows at least three
    spoken messages of its own), the surprise the episode would get if the topic channel
    opened one there: (conversation, index, surprise). What an ordinary turn scores."""
    from episodic.write.segment import segment

    out: list[tuple[str, int, float]] = []
    for c in conversations:
        spoken = [i for i, m in enumerate(c.messages) if m.spoken]
        texts = [spoken_content(m.role, m.text, m.name) for m in c.messages]
        matrix = embedder.embed_batch(texts)
        vectors = [matrix[i] if m.spoken else None for i, m in enumerate(c.messages)]
        now = c.messages[-1].ts
        for n, i in enumerate(spoken):
            opened = max([0, *(b for b in c.boundaries if b <= i)])
            if i in c.boundaries or len([j for j in spoken[:n] if j >= opened]) < 3:
                continue
            # The labelled boundaries too, so the episode before is the one it follows.
            named = sorted({*c.boundaries, i})
            segs = segment(list(c.messages), vectors, now=now, flush=True, topic_starts=named)
            at = next((s for s in segs if s.start == i), None)
            if at is not None:
                out.append((c.id, i, at.surprise))
    return out
