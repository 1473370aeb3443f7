"""Event segmentation: the rule checks, the surprise channel and the topic channel decide
where episodes begin; the last segment waits unless flushed or idle."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import numpy.typing as npt
import pytest

from episodic.write.messages import Message
from episodic.write.segment import (
    FLASHBULB_SURPRISE,
    HARD_GAP,
    KEY_MOMENT_SURPRISE,
    MAX_EPISODE_MESSAGES,
    MIN_EPISODE_MESSAGES,
    REASON_HARD_GAP,
    REASON_SIZE,
    REASON_SOFT_GAP,
    REASON_START,
    REASON_SURPRISE,
    REASON_TOPIC,
    SOFT_GAP,
    segment,
    surprise,
)

T0 = datetime(2026, 5, 8, 13, 0, tzinfo=UTC)
DIM = 16
Vec = npt.NDArray[np.float32]


def topic(i: int, wobble: float = 0.0, seed: int = 0) -> Vec:
    """A unit vector near axis ``i`` (one "topic"), slightly perturbed."""
    rng = np.random.default_rng(seed)
    v = np.zeros(DIM, np.float32)
    v[i] = 1.0
    v += wobble * rng.standard_normal(DIM).astype(np.float32)
    out: Vec = (v / np.linalg.norm(v)).astype(np.float32)
    return out


def msgs(times: list[float], roles: list[str] | None = None) -> list[Message]:
    roles = roles or ["user" if i % 2 == 0 else "assistant" for i in range(len(times))]
    return [
        Message(id=f"m{i}", role=roles[i], text=f"message {i}", ts=T0 + timedelta(minutes=t))
        for i, t in enumerate(times)
    ]


def test_seed_constants() -> None:
    assert timedelta(minutes=30) == SOFT_GAP
    assert timedelta(hours=3) == HARD_GAP
    assert MIN_EPISODE_MESSAGES == 3
    assert KEY_MOMENT_SURPRISE == 0.7
    assert FLASHBULB_SURPRISE == 0.85


@pytest.mark.parametrize(
    ("centroid", "vector", "expected"),
    [
        (topic(0), topic(0), 0.0),
        (topic(0), topic(1), 1.0),
        (-topic(0), topic(0), 1.0),  # opposite: clamped to 1
        (topic(0) + topic(1), topic(0), 1 - 1 / np.sqrt(2)),  # an unnormalised centroid
        (None, topic(0), None),
        (topic(0), None, None),
    ],
)
def test_surprise_is_one_minus_cosine(
    centroid: Vec | None, vector: Vec | None, expected: float | None
) -> None:
    got = surprise(centroid, vector)
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected, abs=1e-6)


def test_too_few_messages_wait_unless_flushed() -> None:
    two = msgs([0, 1])
    assert segment(two, [None, None], now=T0 + timedelta(minutes=2)) == []
    (only,) = segment(two, [None, None], now=T0 + timedelta(minutes=2), flush=True)
    assert (only.start, only.end, only.closed, only.reason) == (0, 2, True, REASON_START)


def test_the_last_segment_stays_open_until_flush_or_idle() -> None:
    five = msgs([0, 1, 2, 3, 4])
    vecs = [topic(0, 0.05, s) for s in range(5)]
    (open_,) = segment(five, vecs, now=T0 + timedelta(minutes=10))
    assert (open_.start, open_.end, open_.closed) == (0, 5, False)
    (flushed,) = segment(five, vecs, now=T0 + timedelta(minutes=10), flush=True)
    assert flushed.closed
    # Idle for longer than the hard gap: the conversation is over.
    (idle,) = segment(five, vecs, now=T0 + timedelta(minutes=4) + HARD_GAP + timedelta(seconds=1))
    assert idle.closed


def test_gaps_hard_always_soft_once_the_episode_has_its_minimum() -> None:
    # 0,1,2 then a 31-minute gap (soft: the episode holds 3 spoken -> split), then 3,4 and
    # a 4-hour gap (hard: splits although the running episode has only 2 messages).
    times = [0, 1, 2, 33, 34, 34 + 240, 275, 276]
    segs = segment(msgs(times), [None] * len(times), now=T0 + timedelta(minutes=280))
    assert [(s.start, s.end, s.reason) for s in segs] == [
        (0, 3, REASON_START),
        (3, 5, REASON_SOFT_GAP),
        (5, 8, REASON_HARD_GAP),
    ]
    assert [s.closed for s in segs] == [True, True, False]


def test_a_soft_gap_inside_a_short_episode_is_not_a_boundary() -> None:
    times = [0, 1, 40, 41]  # the gap comes after only two spoken messages
    segs = segment(msgs(times), [None] * 4, now=T0 + timedelta(minutes=42), flush=True)
    assert [(s.start, s.end) for s in segs] == [(0, 4)]


def test_surprise_jump_starts_a_new_episode() -> None:
    # Six messages about topic 0, then the conversation turns to topic 5.
    vecs = [topic(0, 0.1, s) for s in range(6)] + [topic(5, 0.1, s) for s in range(6, 10)]
    segs = segment(msgs(list(range(10))), vecs, now=T0 + timedelta(minutes=11), flush=True)
    assert [(s.start, s.end, s.reason) for s in segs] == [
        (0, 6, REASON_START),
        (6, 10, REASON_SURPRISE),
    ]
    assert segs[1].surprise > 0.8
    # An even conversation never splits on its own noise.
    calm = [topic(0, 0.2, s) for s in range(20)]
    assert len(segment(msgs(list(range(20))), calm, now=T0, flush=True)) == 1


def test_no_surprise_boundary_before_the_minimum_size() -> None:
    # The turn comes at the third message: too early, the episode holds only two.
    vecs = [topic(0), topic(0, 0.05, 1), topic(5), topic(5, 0.05, 3), topic(5, 0.05, 4)]
    segs = segment(msgs(list(range(5))), vecs, now=T0, flush=True)
    assert len(segs) == 1


def test_topic_channel_adds_boundaries_the_vectors_did_not_see() -> None:
    vecs = [topic(0, 0.1, s) for s in range(8)]
    segs = segment(
        msgs(list(range(8))), vecs, now=T0, flush=True, topic_starts=[4, 1]
    )  # 1 is too early
    assert [(s.start, s.end, s.reason) for s in segs] == [
        (0, 4, REASON_START),
        (4, 8, REASON_TOPIC),
    ]


def test_size_cap_forces_a_split() -> None:
    n = MAX_EPISODE_MESSAGES + 5
    segs = segment(msgs(list(range(n))), [None] * n, now=T0, flush=True)
    assert [(s.start, s.end) for s in segs] == [
        (0, MAX_EPISODE_MESSAGES),
        (MAX_EPISODE_MESSAGES, n),
    ]
    assert segs[1].reason == REASON_SIZE


def test_tool_messages_never_open_an_episode_and_carry_no_surprise() -> None:
    roles = ["user", "assistant", "user", "assistant", "tool", "user", "assistant"]
    vecs: list[Vec | None] = [topic(0, 0.05, s) for s in range(7)]
    vecs[4] = topic(9)  # wildly off-topic tool output
    segs = segment(msgs(list(range(7)), roles), vecs, now=T0, flush=True)
    assert len(segs) == 1


def test_first_segment_surprise_is_measured_against_the_previous_episode() -> None:
    vecs = [topic(3, 0.05, s) for s in range(4)]
    (seg,) = segment(msgs([0, 1, 2, 3]), vecs, now=T0, flush=True, previous_centroid=topic(0))
    assert seg.surprise == pytest.approx(1.0, abs=0.05)
    (seg,) = segment(msgs([0, 1, 2, 3]), vecs, now=T0, flush=True)
    assert seg.surprise == 0.0


def test_one_vector_per_message_is_required() -> None:
    with pytest.raises(ValueError):
        segment(msgs([0, 1, 2]), [None], now=T0)
