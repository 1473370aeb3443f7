"""Event segmentation: where one episode of a conversation ends and the next begins.

Pure: messages, their vectors and the clock in; segments out. Seed 003's order:

1. **Rules.** Too few messages -> wait. A gap over ``HARD_GAP`` (3 h) always starts a new
   episode; a gap of at least ``SOFT_GAP`` (30 min) does when the running episode has its
   minimum size. An episode that reached ``MAX_EPISODE_MESSAGES`` or
   ``MAX_EPISODE_CHARS`` is split before the next message (the forced split).
2. **Topic channel.** Indices the LLM named as topic starts (``write.topics``, asked only
   about the candidates its embedding pre-filter found) are boundaries, whatever the size
   of the running episode: the model judged that very message. A candidate it was asked
   about and did not name is not split by the surprise channel either.
3. **Surprise channel.** ``surprise = 1 - cosine(running centroid, new message)``, the
   centroid being the normalised mean of the running episode's spoken-message vectors. A
   boundary is where it *jumps*: at least ``SURPRISE_FLOOR`` and ``SURPRISE_JUMP_SIGMAS``
   standard deviations above the episode's own surprises so far, once there are
   ``MIN_SURPRISE_SAMPLES`` of them (a conversation that wanders evenly never splits on
   noise; one that turns sharply does). The message just before such a boundary moves to
   the new episode when it is more like the message that opened it than like the rest of
   the old one (the question that introduced the new subject goes with its answer).

No boundary but a hard gap or a named topic is placed before the running episode holds
``MIN_EPISODE_MESSAGES`` spoken messages. The last segment stays open (waiting for more
messages) unless the caller flushes (end of session) or the conversation has been idle
longer than the hard gap.

An episode's ``surprise`` is put on seed 003's scale (0 an expected turn, 0.3 a minor
gain, 0.7 a significant pivot, 1 model-breaking) by ``episode_surprise``: how far the
episode's opening (its first ``OPENING_MESSAGES`` spoken messages; an episode of fewer has
none) is from the event model before it, above what an ordinary turn scores.

The constants are measured on ``tests/fixtures/segmentation.json`` with all-MiniLM-L6-v2
(``benchmarks/bench_segmentation.py``): a lone chat message is a noisy sample, which is why
the surprise channel waits for six samples, asks for a floor of 0.7 and 1.5 spreads, and
why an episode's surprise reads two messages rather than one.
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
# Surprise a message needs (besides the jump) to open an episode. On the fixture, the
# median chat turn scores 0.56 against its own episode and one in ten 0.75: a floor of 0.5
# let ordinary turns through, 0.7 keeps the real turns (F1 within one message 0.71 with the
# other two constants below, against 0.62 at 0.5).
SURPRISE_FLOOR = 0.7
SURPRISE_JUMP_SIGMAS = 1.5
# A handful of surprises can agree by chance; their spread is taken as at least this.
SURPRISE_MIN_SPREAD = 0.05
# The jump is measured against the episode's own surprises, whose spread means little
# from a few samples (its relative error is about 1/sqrt(2(n-1)): 50% at 3, 32% at 6).
# Below this many the surprise channel stays silent, and only the gaps and the topic
# channel split. On the fixture, F1 within one message rises from 0.56 at 3 samples to
# 0.71 at 6 and stays there (0.73 at 7 to 10), while every sample more keeps a short
# episode from ever being split by surprise.
MIN_SURPRISE_SAMPLES = 6
# An episode's surprise reads its first two spoken messages, and an episode of one
# spoken message has none: a lone short turn ("Got it", "Thanks, that worked!") is as far
# from everything as a real pivot is. On the fixture, turns that start no episode score up
# to 0.9 read alone (a flashbulb) and at most 0.65 read with the message after them.
OPENING_MESSAGES = 2
# What an ordinary turn scores: seed 003's 0.0. The median opening surprise of the
# fixture's turns that start no episode is 0.48 with all-MiniLM-L6-v2.
SURPRISE_BASELINE = 0.5

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
    """``messages[start:end]``; ``surprise`` (seed 003's scale) and ``reason`` say what
    opened it."""

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


def episode_surprise(before: Vector | None, opening: Sequence[Vector | None]) -> float:
    """An episode's surprise on seed 003's scale: ``surprise(before, mean of opening)``
    rescaled so that ``SURPRISE_BASELINE`` (an ordinary turn) is 0 and 1 stays 1. 0 when
    there is nothing to compare (the first episode, no vectors) or fewer than
    ``OPENING_MESSAGES`` opening vectors to read."""
    present = [v for v in opening if v is not None]
    if len(present) < OPENING_MESSAGES:
        return 0.0
    raw = surprise(before, centroid(present))
    if raw is None:
        return 0.0
    return max(0.0, (raw - SURPRISE_BASELINE) / (1.0 - SURPRISE_BASELINE))


class _Running:
    """The episode being built: its spoken count, characters, centroid and surprises."""

    def __init__(self) -> None:
        self.spoken = 0
        self.messages = 0
        self.chars = 0
        self.total: Vector | None = None
        self.last: Vector | None = None  # the last message's vector, if it was spoken
        self.surprises: list[float] = []

    def add(self, message: Message, vector: Vector | None, s: float | None) -> None:
        self.messages += 1
        self.chars += len(message.text)
        self.last = None
        if message.spoken:
            self.spoken += 1
        if vector is not None and message.spoken:
            self.total = vector.astype(np.float32) if self.total is None else self.total + vector
            self.last = vector
        if s is not None and message.spoken:
            self.surprises.append(s)

    def jumped(self, s: float) -> bool:
        if s < SURPRISE_FLOOR or len(self.surprises) < MIN_SURPRISE_SAMPLES:
            return False
        mean = sum(self.surprises) / len(self.surprises)
        spread = math.sqrt(sum((x - mean) ** 2 for x in self.surprises) / len(self.surprises))
        return s >= mean + SURPRISE_JUMP_SIGMAS * max(spread, SURPRISE_MIN_SPREAD)

    def last_goes_with(self, vector: Vector) -> bool:
        """Whether the last message is more like ``vector`` (a new episode's opening)
        than like the rest of this episode, which keeps its minimum size without it."""
        if self.last is None or self.total is None or self.spoken <= MIN_EPISODE_MESSAGES:
            return False
        ahead = surprise(vector, self.last)
        behind = surprise(self.total - self.last, self.last)
        return ahead is not None and behind is not None and ahead < behind


def segment(
    messages: Sequence[Message],
    vectors: Sequence[Vector | None],
    *,
    now: datetime,
    flush: bool = False,
    topic_starts: Collection[int] = (),
    topic_checked: Collection[int] = (),
    previous_centroid: Vector | None = None,
) -> list[Segment]:
    """Split ``messages`` (one conversation, time order) into segments.

    ``vectors[i]`` is message i's embedding or None (tool output, or no embedder).
    ``topic_starts`` are the messages the topic channel named as new topics, out of the
    ``topic_checked`` it was asked about. ``previous_centroid`` is the centroid of the
    conversation's last closed episode, so the first segment's surprise is measured
    against what came before. Every segment but the last is closed; the last is closed
    when ``flush`` is set or the conversation has been idle for longer than ``HARD_GAP``.
    Fewer than ``MIN_EPISODE_MESSAGES`` messages and no flush or idle: nothing (wait)."""
    if len(vectors) != len(messages):
        raise ValueError("one vector (or None) per message")
    if not messages:
        return []
    idle = now - messages[-1].ts > HARD_GAP
    if len(messages) < MIN_EPISODE_MESSAGES and not (flush or idle):
        return []
    named = set(topic_starts)
    declined = set(topic_checked) - named
    starts: list[tuple[int, str]] = [(0, REASON_START)]
    running = _Running()
    for i, (message, vector) in enumerate(zip(messages, vectors, strict=True)):
        s = surprise(running.total, vector) if message.spoken else None
        if i > starts[-1][0]:
            topic = i in named
            reason = _boundary(messages[i - 1], message, running, s, topic, i in declined)
            if reason is not None:
                start = i
                if (
                    reason == REASON_SURPRISE
                    and vector is not None
                    and i - 1 not in declined
                    and running.last_goes_with(vector)
                ):
                    start = i - 1
                starts.append((start, reason))
                running = _Running()
                for j in range(start, i):
                    running.add(messages[j], vectors[j], None)
                s = None
        running.add(message, vector, s)
    ends = [start for start, _ in starts[1:]] + [len(messages)]
    segments: list[Segment] = []
    before = previous_centroid
    for (start, reason), end in zip(starts, ends, strict=True):
        spoken = [
            v
            for m, v in zip(messages[start:end], vectors[start:end], strict=True)
            if m.spoken and v is not None
        ]
        opened = episode_surprise(before, spoken[:OPENING_MESSAGES])
        segments.append(Segment(start, end, opened, reason, end < len(messages) or flush or idle))
        before = centroid(spoken) if spoken else before
    return segments


def _boundary(
    previous: Message,
    message: Message,
    running: _Running,
    s: float | None,
    topic: bool,
    declined: bool,
) -> str | None:
    gap = message.ts - previous.ts
    if gap > HARD_GAP:
        return REASON_HARD_GAP
    if running.messages >= MAX_EPISODE_MESSAGES or running.chars >= MAX_EPISODE_CHARS:
        return REASON_SIZE
    if not message.spoken:
        return None
    big_enough = running.spoken >= MIN_EPISODE_MESSAGES
    if big_enough and gap >= SOFT_GAP:
        return REASON_SOFT_GAP
    if topic:
        return REASON_TOPIC
    if big_enough and not declined and s is not None and running.jumped(s):
        return REASON_SURPRISE
    return None


def centroid(vectors: Sequence[Vector | None]) -> Vector | None:
    """The normalised mean of the vectors given (None when there are none)."""
    present = [v for v in vectors if v is not None]
    if not present:
        return None
    total = np.sum(np.stack(present), axis=0).astype(np.float32)
    norm = float(np.linalg.norm(total))
    return None if norm == 0.0 else total / np.float32(norm)
