"""Event segmentation: where one episode of a conversation ends and the next begins.

Pure: messages, their vectors and the clock in; segments out. Seed 003's order:

1. **Rules.** Too few messages -> wait. A gap over ``HARD_GAP`` (3 h) always starts a new
   episode; a gap of at least ``SOFT_GAP`` (30 min) does when the running episode has its
   minimum size. An episode that reached ``MAX_EPISODE_MESSAGES`` or
   ``MAX_EPISODE_CHARS`` is split before the next message (the forced split).
2. **Surprise channel.** ``surprise = 1 - cosine(running centroid, new message)``, the
   centroid being the normalised mean of the running episode's spoken-message vectors. A
   boundary is where it *jumps*: at least ``SURPRISE_FLOOR`` and ``SURPRISE_JUMP_SIGMAS``
   standard deviations above the episode's own surprises so far (a conversation that
   wanders evenly never splits on noise; one that turns sharply does).
3. **Topic channel.** Indices an LLM named as topic starts (``write.topics``), when one is
   configured, count as boundaries too.

No boundary is placed before the running episode holds ``MIN_EPISODE_MESSAGES`` spoken
messages, except by the hard gap. The last segment stays open (waiting for more messages)
unless the caller flushes (end of session) or the conversation has been idle longer than
the hard gap.

Measured on LoCoMo's turns with all-MiniLM-L6-v2 (surprise against the session so far):
median 0.37, 95th percentile 0.58, 99th 0.66; seed 003's key moment (0.7) and flashbulb
(0.85) are rare by design.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
import numpy.typing as npt

from episodic.write.messages import Message

SOFT_GAP = timedelta(minutes=30)
HARD_GAP = timedelta(hours=3)
MIN_EPISODE_MESSAGES = 3  # seed 003: fewer than 3 messages never split
MAX_EPISODE_MESSAGES = 40
MAX_EPISODE_CHARS = 16_000
SURPRISE_FLOOR = 0.5
SURPRISE_JUMP_SIGMAS = 2.0
# A handful of surprises can agree by chance; their spread is taken as at least this.
SURPRISE_MIN_SPREAD = 0.05
# Below this many surprises an episode's spread says nothing; the floor alone decides.
_MIN_SAMPLES_FOR_SPREAD = 3

# Seed 003's thresholds on an episode's surprise.
KEY_MOMENT_SURPRISE = 0.7
FLASHBULB_SURPRISE = 0.85

REASON_START = "start"
REASON_HARD_GAP = "hard gap"
REASON_SOFT_GAP = "soft gap"
REASON_SIZE = "size cap"
REASON_SURPRISE = "surprise"
REASON_TOPIC = "topic"

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class Segment:
    """``messages[start:end]``; ``surprise`` and ``reason`` say what opened it."""

    start: int
    end: int
    surprise: float
    reason: str
    closed: bool

    def __len__(self) -> int:
        return self.end - self.start


def surprise(centroid: Vector | None, vector: Vector | None) -> float | None:
    """``1 - cosine(centroid, vector)`` clamped to [0, 1]; None when either is missing."""
    if centroid is None or vector is None:
        return None
    norm = float(np.linalg.norm(centroid)) * float(np.linalg.norm(vector))
    if norm == 0.0:
        return None
    return min(1.0, max(0.0, 1.0 - float(centroid @ vector) / norm))


class _Running:
    """The episode being built: its spoken count, characters, centroid and surprises."""

    def __init__(self) -> None:
        self.spoken = 0
        self.messages = 0
        self.chars = 0
        self.total: Vector | None = None
        self.surprises: list[float] = []

    def add(self, message: Message, vector: Vector | None, s: float | None) -> None:
        self.messages += 1
        self.chars += len(message.text)
        if message.spoken:
            self.spoken += 1
        if vector is not None and message.spoken:
            self.total = vector.astype(np.float32) if self.total is None else self.total + vector
        if s is not None and message.spoken:
            self.surprises.append(s)

    def jumped(self, s: float) -> bool:
        if s < SURPRISE_FLOOR:
            return False
        if len(self.surprises) < _MIN_SAMPLES_FOR_SPREAD:
            return True
        mean = sum(self.surprises) / len(self.surprises)
        spread = math.sqrt(sum((x - mean) ** 2 for x in self.surprises) / len(self.surprises))
        return s >= mean + SURPRISE_JUMP_SIGMAS * max(spread, SURPRISE_MIN_SPREAD)


def segment(
    messages: Sequence[Message],
    vectors: Sequence[Vector | None],
    *,
    now: datetime,
    flush: bool = False,
    topic_starts: Collection[int] = (),
    previous_centroid: Vector | None = None,
) -> list[Segment]:
    """Split ``messages`` (one conversation, time order) into segments.

    ``vectors[i]`` is message i's embedding or None (tool output, or no embedder).
    ``previous_centroid`` is the centroid of the conversation's last closed episode, so the
    first segment's surprise is measured against what came before. Every segment but the
    last is closed; the last is closed when ``flush`` is set or the conversation has been
    idle for longer than ``HARD_GAP``. Fewer than ``MIN_EPISODE_MESSAGES`` messages and no
    flush or idle: nothing (wait)."""
    if len(vectors) != len(messages):
        raise ValueError("one vector (or None) per message")
    if not messages:
        return []
    idle = now - messages[-1].ts > HARD_GAP
    if len(messages) < MIN_EPISODE_MESSAGES and not (flush or idle):
        return []
    topics = set(topic_starts)
    segments: list[Segment] = []
    running = _Running()
    start, opened_by = 0, REASON_START
    opened_surprise = surprise(previous_centroid, _first_vector(messages, vectors)) or 0.0
    for i, (message, vector) in enumerate(zip(messages, vectors, strict=True)):
        s = surprise(running.total, vector) if message.spoken else None
        if i > start:
            reason = _boundary(messages[i - 1], message, running, s, i in topics)
            if reason is not None:
                segments.append(Segment(start, i, opened_surprise, opened_by, True))
                start, opened_by, opened_surprise = i, reason, s or 0.0
                running = _Running()
                s = None
        running.add(message, vector, s)
    closed = flush or idle
    segments.append(Segment(start, len(messages), opened_surprise, opened_by, closed))
    return segments


def _boundary(
    previous: Message, message: Message, running: _Running, s: float | None, topic: bool
) -> str | None:
    gap = message.ts - previous.ts
    if gap > HARD_GAP:
        return REASON_HARD_GAP
    if running.messages >= MAX_EPISODE_MESSAGES or running.chars >= MAX_EPISODE_CHARS:
        return REASON_SIZE
    if running.spoken < MIN_EPISODE_MESSAGES or not message.spoken:
        return None
    if gap >= SOFT_GAP:
        return REASON_SOFT_GAP
    if topic:
        return REASON_TOPIC
    if s is not None and running.jumped(s):
        return REASON_SURPRISE
    return None


def _first_vector(messages: Sequence[Message], vectors: Sequence[Vector | None]) -> Vector | None:
    for message, vector in zip(messages, vectors, strict=True):
        if message.spoken and vector is not None:
            return vector
    return None


def centroid(vectors: Sequence[Vector | None]) -> Vector | None:
    """The normalised mean of the vectors given (None when there are none)."""
    present = [v for v in vectors if v is not None]
    if not present:
        return None
    total = np.sum(np.stack(present), axis=0).astype(np.float32)
    norm = float(np.linalg.norm(total))
    return None if norm == 0.0 else total / np.float32(norm)
