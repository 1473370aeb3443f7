"""The topic channel of segmentation (seed 003): an LLM says where new topics begin.

Segmentation combines rules (time gaps), surprise (embedding divergence) and this channel.
There is no offline topic model: when the LLM fails, ``topic_starts`` returns ``None`` and
the caller segments by rules and surprise alone.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from episodic.errors import LLMError
from episodic.llm.base import LLM
from episodic.llm.prompts import DEFAULT_PROMPTS, TOPICS_SCHEMA, Prompts, data_block, fill
from episodic.write.messages import Message, transcript_json
from episodic.write.text import clip_messages, cut_words

log = logging.getLogger("episodic.write")

# Where a topic changes shows in the first lines of a message; a long message is cut to
# this for the prompt (tool and system output harder), and the whole transcript to about
# TOPICS_INPUT_MAX_CHARS.
TOPIC_MESSAGE_MAX_CHARS = 600
TOPICS_INPUT_MAX_CHARS = 16_000
TOPICS_MAX_TOKENS = 256


def topic_starts(
    messages: Sequence[Message], llm: LLM, *, prompts: Prompts = DEFAULT_PROMPTS
) -> list[int] | None:
    """The indices (> 0, increasing, unique, < ``len(messages)``) of the messages where a
    new topic begins, or ``None`` when the LLM failed.

    Indices the model gives outside that range (0, negative, past the end) are dropped
    with a warning; the rest are sorted and repeats removed. Fewer than two messages have
    no boundary to find, and the LLM is not asked.
    """
    if len(messages) < 2:
        return []
    clipped = clip_messages(
        [_shortened(m) for m in messages],
        TOPICS_INPUT_MAX_CHARS,
        non_spoken_chars=TOPIC_MESSAGE_MAX_CHARS // 3,
    )
    user = fill(prompts.topics_user, transcript=data_block("transcript", transcript_json(clipped)))
    try:
        reply = llm.complete_json(
            prompts.topics_system, user, TOPICS_SCHEMA, max_tokens=TOPICS_MAX_TOKENS
        )
    except LLMError as exc:
        log.warning("topic detection failed; segmenting by rules and surprise alone: %s", exc)
        return None
    starts = {int(i) for i in reply["starts"]}
    outside = sorted(i for i in starts if not 0 < i < len(messages))
    if outside:
        log.warning(
            "%s gave topic starts outside 1..%d, ignored: %s",
            llm.model_id,
            len(messages) - 1,
            outside,
        )
    return sorted(i for i in starts if 0 < i < len(messages))


def _shortened(message: Message) -> Message:
    if len(message.text) <= TOPIC_MESSAGE_MAX_CHARS:
        return message
    return replace(message, text=cut_words(message.text, TOPIC_MESSAGE_MAX_CHARS, ellipsis="…"))
