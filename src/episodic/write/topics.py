"""The topic channel of segmentation (seed 003): an embedding pre-filter finds the
messages where a new topic may begin, and an LLM says which of them really do.

Segmentation combines rules (time gaps), surprise (embedding divergence) and this channel.
The pre-filter (``topic_candidates``) is pure and cheap; the LLM is asked only about its
candidates, and not at all for a conversation that has none. There is no offline topic
model: when the LLM fails, ``topic_starts`` returns ``None`` and the caller segments by
rules and surprise alone.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from episodic.errors import LLMError
from episodic.llm.base import LLM
from episodic.llm.prompts import DEFAULT_PROMPTS, TOPICS_SCHEMA, Prompts, data_block, fill
from episodic.write.messages import Message, transcript_json
from episodic.write.segment import Vector, surprise
from episodic.write.text import clip_messages, cut_words

log = logging.getLogger("episodic.write")

# Where a topic changes shows in the first lines of a message; a long message is cut to
# this for the prompt (tool and system output harder), and the whole transcript to about
# TOPICS_INPUT_MAX_CHARS.
TOPIC_MESSAGE_MAX_CHARS = 600
TOPICS_INPUT_MAX_CHARS = 16_000
TOPICS_MAX_TOKENS = 256

# The pre-filter compares the spoken messages on either side of a message: the
# TOPIC_CONTEXT_MESSAGES before it against it and the ones after (2 each side). A lone
# chat message is a noisy sample; two on each side are not yet a whole other topic. A
# message is a candidate when the divergence, 1 - cosine of the two means, reaches
# TOPIC_CANDIDATE_DIVERGENCE. On the fixture (all-MiniLM-L6-v2) 0.6 keeps 21 of its 22
# boundaries among the candidates while ruling out 63% of the turns; comparing the message
# alone with the ones before it (their running mean, or the last two or three) needed 53%
# to 70% of the turns as candidates to keep 90% of the boundaries.
TOPIC_CONTEXT_MESSAGES = 2
TOPIC_CANDIDATE_DIVERGENCE = 0.6


def topic_candidates(messages: Sequence[Message], vectors: Sequence[Vector | None]) -> list[int]:
    """The spoken messages (never the first) where a new topic may begin, by their
    vectors (``vectors[i]`` for ``messages[i]``, None where there is none).

    A spoken message without a vector cannot be ruled out, so it is a candidate: with no
    embedder at all, every spoken message after the first is."""
    if len(vectors) != len(messages):
        raise ValueError("one vector (or None) per message")
    spoken = [i for i, m in enumerate(messages) if m.spoken]
    out: list[int] = []
    for n, i in enumerate(spoken[1:], start=1):
        before = _mean(vectors, spoken[max(0, n - TOPIC_CONTEXT_MESSAGES) : n])
        after = _mean(vectors, spoken[n : n + TOPIC_CONTEXT_MESSAGES])
        if vectors[i] is None or before is None or after is None:
            out.append(i)
            continue
        divergence = surprise(before, after)
        if divergence is not None and divergence >= TOPIC_CANDIDATE_DIVERGENCE:
            out.append(i)
    return out


def _mean(vectors: Sequence[Vector | None], indices: Sequence[int]) -> Vector | None:
    present = [v for v in (vectors[i] for i in indices) if v is not None]
    if not present:
        return None
    mean: Vector = np.mean(np.stack(present), axis=0).astype(np.float32)
    return mean


def topic_starts(
    messages: Sequence[Message],
    llm: LLM,
    candidates: Sequence[int] | None = None,
    *,
    prompts: Prompts = DEFAULT_PROMPTS,
) -> list[int] | None:
    """The candidates (indices into ``messages``) where a new topic begins, by the LLM,
    or ``None`` when the LLM failed. ``candidates`` None asks about every message after
    the first; an empty list asks nothing.

    Indices the model gives that are not candidates (0, past the end, a message it was
    not asked about) are dropped with a warning; the rest are sorted and repeats removed.
    """
    asked = sorted(
        {i for i in (range(1, len(messages)) if candidates is None else candidates)}
        & set(range(1, len(messages)))
    )
    if not asked:
        return []
    clipped = clip_messages(
        [_shortened(m) for m in messages],
        TOPICS_INPUT_MAX_CHARS,
        non_spoken_chars=TOPIC_MESSAGE_MAX_CHARS // 3,
    )
    user = fill(
        prompts.topics_user,
        candidates=json.dumps(asked),
        transcript=data_block("transcript", transcript_json(clipped)),
    )
    try:
        reply = llm.complete_json(
            prompts.topics_system, user, TOPICS_SCHEMA, max_tokens=TOPICS_MAX_TOKENS
        )
    except LLMError as exc:
        log.warning("topic detection failed; segmenting by rules and surprise alone: %s", exc)
        return None
    starts = {int(i) for i in reply["starts"]}
    outside = sorted(starts - set(asked))
    if outside:
        log.warning(
            "%s gave topic starts that were not candidates, ignored: %s", llm.model_id, outside
        )
    return sorted(starts & set(asked))


def _shortened(message: Message) -> Message:
    if len(message.text) <= TOPIC_MESSAGE_MAX_CHARS:
        return message
    return replace(message, text=cut_words(message.text, TOPIC_MESSAGE_MAX_CHARS, ellipsis="…"))
