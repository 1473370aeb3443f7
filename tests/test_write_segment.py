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
    MIN_SURPRISE_SAMPLES,
    REASON_HARD_GAP,
    REASON_SIZE,
    REASON_SOFT_GAP,
    REASON_START,
    REASON_SURPRISE,
    REASON_TOPIC,
    SOFT_GAP,
    SURPRISE_BASELINE,
    episode_surprise,
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
    # Eight messages about topic 0 (seven surprises to judge a jump by), then the
    # conversation turns to topic 5.
    vecs = [topic(0, 0.1, s) for s in range(8)] + [topic(5, 0.1, s) for s in range(8, 12)]
    segs = segment(msgs(list(range(12))), vecs, now=T0 + timedelta(minutes=13), flush=True)
    assert [(s.start, s.end, s.reason) for s in segs] == [
        (0, 8, REASON_START),
        (8, 12, REASON_SURPRISE),
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


def test_surprise_waits_for_enough_samples_before_it_can_split() -> None:
    # Three messages on topic 0, one off-topic turn (a short "Got it" is as far from
    # everything), then topic 0 again: one episode. Before MIN_SURPRISE_SAMPLES surprises
    # the spread of an episode says nothing, so a single far turn cannot split it...
    vecs = [topic(0, 0.1, s) for s in range(3)] + [topic(9)]
    vecs += [topic(0, 0.1, s) for s in range(4, 10)]
    segs = segment(msgs(list(range(10))), vecs, now=T0, flush=True)
    assert [(s.start, s.end) for s in segs] == [(0, 10)]
    # ...while the same turn once the episode has enough samples is a jump.
    assert MIN_SURPRISE_SAMPLES == 6
    later = [topic(0, 0.1, s) for s in range(8)] + [topic(9), topic(9, 0.1, 9)]
    later += [topic(9, 0.1, s) for s in range(10, 12)]
    segs = segment(msgs(list(range(12))), later, now=T0, flush=True)
    assert [(s.start, s.reason) for s in segs] == [(0, REASON_START), (8, REASON_SURPRISE)]


def test_a_named_topic_is_never_held_back_by_the_minimum_size() -> None:
    # The LLM judged messages 1 and 4: both open an episode, although the one before 1
    # holds a single message and the one before 4 three.
    vecs = [topic(0, 0.1, s) for s in range(8)]
    segs = segment(msgs(list(range(8))), vecs, now=T0, flush=True, topic_starts=[4, 1])
    assert [(s.start, s.end, s.reason) for s in segs] == [
        (0, 1, REASON_START),
        (1, 4, REASON_TOPIC),
        (4, 8, REASON_TOPIC),
    ]


def test_a_candidate_the_llm_declined_is_not_split_by_surprise() -> None:
    # An aside at message 8, then back to topic 0. The surprise alone splits there; the
    # LLM, asked about it, said it starts no new topic, and that stands.
    vecs = [topic(0, 0.1, s) for s in range(8)] + [topic(5)]
    vecs += [topic(0, 0.1, s) for s in range(9, 12)]
    args = (msgs(list(range(12))), vecs)
    assert [s.start for s in segment(*args, now=T0, flush=True)] == [0, 8]
    (one,) = segment(*args, now=T0, flush=True, topic_starts=[], topic_checked=[8])
    assert (one.start, one.end) == (0, 12)


def test_the_message_that_introduces_a_new_subject_goes_with_it() -> None:
    # Message 8 leans to topic 5 but not enough to be a jump; message 9 is topic 5
    # outright. The boundary the surprise finds at 9 moves to 8: a question goes with
    # its answer.
    leaning = (0.45 * topic(0) + 0.89 * topic(5)).astype(np.float32)
    vecs = [topic(0, 0.1, s) for s in range(8)] + [leaning / np.linalg.norm(leaning)]
    vecs += [topic(5, 0.1, s) for s in range(9, 12)]
    segs = segment(msgs(list(range(12))), vecs, now=T0, flush=True)
    assert [(s.start, s.reason) for s in segs] == [(0, REASON_START), (8, REASON_SURPRISE)]


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


@pytest.mark.parametrize(
    ("opening", "expected"),
    [
        ([topic(0), topic(0, 0.05, 1)], 0.0),  # what came before: nothing new
        ([topic(5), topic(5, 0.05, 1)], 1.0),  # orthogonal: model-breaking
        ([topic(5)], 0.0),  # one message cannot tell a pivot from a "Thanks!"
        ([topic(5), None], 0.0),
    ],
)
def test_episode_surprise_on_the_seed_scale(opening: list[Vec | None], expected: float) -> None:
    assert episode_surprise(topic(0), opening) == pytest.approx(expected, abs=0.05)
    # Halfway between an ordinary turn's surprise and 1 is halfway up the scale.
    halfway = 1.0 - (1.0 + SURPRISE_BASELINE) / 2.0  # the cosine that gives it
    tilted = (halfway * topic(0) + np.sqrt(1 - halfway**2) * topic(5)).astype(np.float32)
    assert episode_surprise(topic(0), [tilted, tilted]) == pytest.approx(0.5, abs=1e-4)


def test_first_segment_surprise_is_measured_against_the_previous_episode() -> None:
    vecs = [topic(3, 0.05, s) for s in range(4)]
    (seg,) = segment(msgs([0, 1, 2, 3]), vecs, now=T0, flush=True, previous_centroid=topic(0))
    assert seg.surprise == pytest.approx(1.0, abs=0.05)
    (seg,) = segment(msgs([0, 1, 2, 3]), vecs, now=T0, flush=True)
    assert seg.surprise == 0.0


def test_one_vector_per_message_is_required() -> None:
    with pytest.raises(ValueError):
        segment(msgs([0, 1, 2]), [None], now=T0)
