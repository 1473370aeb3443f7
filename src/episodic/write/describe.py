"""Episode titles and summaries (seed 003): an LLM writes them, or an extractive fallback.

With an LLM, one call returns a title, a summary and keyphrases, checked twice: by the
schema, then in code (the title must be 5-15 words). Anything unusable, and any
``LLMError``, falls back to the offline description with a warning.

Offline ("extractive"), nothing is written that was not said. The most central spoken
messages are picked: with vectors, by the cosine of each message's vector with the
normalised mean of them all; without, the opening user message first, then the messages
with the most content words. One to three of them, in the order they were said, give their
most informative sentences (those with the most distinct content words) to the summary,
each prefixed by its speaker and cut to fit ``SUMMARY_MAX_CHARS``. The title is the most
central message's best sentence, cut to 15 words and padded with keyphrases up to 5.

Tool and system messages never feed a title or a summary, on either path.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from episodic.errors import InvalidInput, LLMError
from episodic.llm.base import LLM
from episodic.llm.prompts import (
    DEFAULT_PROMPTS,
    DESCRIBE_SCHEMA,
    EPISODE_KEYPHRASES_MAX,
    SUMMARY_MAX_CHARS,
    TITLE_MAX_WORDS,
    TITLE_MIN_WORDS,
    Prompts,
    data_block,
    fill,
)
from episodic.write.keyphrases import keyphrases
from episodic.write.messages import Message, transcript_json
from episodic.write.text import (
    STOP_WORDS,
    clip_messages,
    collapse,
    content_words,
    cut_to_words,
    cut_words,
    has_content_word,
    split_sentences,
    stop_key,
    word_count,
)

__all__ = [
    "OFFLINE_SOURCE",
    "SUMMARY_MAX_CHARS",
    "SUMMARY_MESSAGES_MAX",
    "TITLE_MAX_WORDS",
    "TITLE_MIN_WORDS",
    "EpisodeText",
    "describe_episode",
]

log = logging.getLogger("episodic.write")

OFFLINE_SOURCE = "offline:extractive"
# How many central messages an extractive summary quotes from.
SUMMARY_MESSAGES_MAX = 3
# A long episode reaches the model cut to about this many characters (each message keeps
# its place; the longest are shortened first).
DESCRIBE_INPUT_MAX_CHARS = 12_000
# A 15-word title, 600 characters of summary and 8 keyphrases, as JSON.
DESCRIBE_MAX_TOKENS = 512
# Sentences ending like this lose the mark in a title; "?" stays, a question is a fine title.
_TITLE_TRIM = ".!,;:…-—– "
NO_SPOKEN_TITLE = "No spoken messages in this episode"


@dataclass(frozen=True, slots=True)
class EpisodeText:
    """What an episode is called and what happened in it.

    ``source`` is ``"llm:<model_id>"`` when a model wrote it, ``"offline:extractive"``
    when it was pieced together from the messages themselves.
    """

    title: str  # 5-15 words
    summary: str  # a few sentences, at most SUMMARY_MAX_CHARS
    keyphrases: tuple[str, ...]
    source: str


def describe_episode(
    messages: Sequence[Message],
    vectors: npt.NDArray[np.float32] | None,
    llm: LLM | None,
    *,
    prompts: Prompts = DEFAULT_PROMPTS,
) -> EpisodeText:
    """The title, summary and keyphrases of the episode made of ``messages``.

    ``vectors`` has one row per message, aligned with ``messages`` (rows of tool and system
    messages may be zeros); it is only used offline, to find the central messages. Never
    raises for LLM problems: they are logged and the offline description returned.
    """
    if vectors is not None and (vectors.ndim != 2 or vectors.shape[0] != len(messages)):
        raise InvalidInput(
            "vectors",
            f"expected one row per message ({len(messages)}), got shape {vectors.shape}",
        )
    spoken = [i for i, m in enumerate(messages) if m.spoken and m.text.strip()]
    if not spoken:
        return EpisodeText(NO_SPOKEN_TITLE, "", (), OFFLINE_SOURCE)
    if llm is not None:
        described = _describe_with_llm([messages[i] for i in spoken], llm, prompts)
        if described is not None:
            return described
    return _describe_offline(messages, spoken, vectors)


# -- the LLM path --------------------------------------------------------------------------
def _describe_with_llm(spoken: list[Message], llm: LLM, prompts: Prompts) -> EpisodeText | None:
    transcript = transcript_json(clip_messages(spoken, DESCRIBE_INPUT_MAX_CHARS))
    user = fill(prompts.describe_user, transcript=data_block("transcript", transcript))
    try:
        reply = llm.complete_json(
            prompts.describe_system, user, DESCRIBE_SCHEMA, max_tokens=DESCRIBE_MAX_TOKENS
        )
    except LLMError as exc:
        log.warning("episode description failed, describing it offline instead: %s", exc)
        return None
    title = collapse(reply["title"])
    words = word_count(title)
    if not TITLE_MIN_WORDS <= words <= TITLE_MAX_WORDS:
        log.warning(
            "%s wrote a title of %d words (wanted %d-%d); describing the episode offline",
            llm.model_id,
            words,
            TITLE_MIN_WORDS,
            TITLE_MAX_WORDS,
        )
        return None
    summary = collapse(reply["summary"])
    phrases = _unique(collapse(p) for p in reply["keyphrases"])
    return EpisodeText(title, summary, phrases, f"llm:{llm.model_id}")


def _unique(phrases: Iterable[str]) -> tuple[str, ...]:
    """Blanks and case-insensitive repeats dropped, order kept."""
    seen: set[str] = set()
    out: list[str] = []
    for phrase in phrases:
        key = phrase.casefold()
        if phrase and key not in seen:
            seen.add(key)
            out.append(phrase)
    return tuple(out)


# -- the offline path ----------------------------------------------------------------------
def _describe_offline(
    messages: Sequence[Message],
    spoken: list[int],
    vectors: npt.NDArray[np.float32] | None,
) -> EpisodeText:
    phrases = keyphrases([messages[i].text for i in spoken], EPISODE_KEYPHRASES_MAX)
    ranked = _central(messages, spoken, vectors)
    informative = [i for i in ranked if has_content_word(messages[i].text)]
    chosen = (informative or ranked)[:SUMMARY_MESSAGES_MAX]
    title = _title(_best_sentence(messages[chosen[0]].text), phrases, messages, spoken)
    summary = _summary([messages[i] for i in sorted(chosen)])
    return EpisodeText(title, summary, phrases, OFFLINE_SOURCE)


def _central(
    messages: Sequence[Message],
    spoken: list[int],
    vectors: npt.NDArray[np.float32] | None,
) -> list[int]:
    """``spoken`` indices, most central first (ties: earlier first)."""
    if vectors is not None:
        rows = np.asarray(vectors[spoken], dtype=np.float64)
        norms = np.linalg.norm(rows, axis=1)
        usable = np.isfinite(norms) & (norms > 0)
        if usable.any():
            unit = np.zeros_like(rows)
            unit[usable] = rows[usable] / norms[usable, None]
            mean = unit[usable].mean(axis=0)
            mean_norm = float(np.linalg.norm(mean))
            if mean_norm > 0:
                cosine = unit @ (mean / mean_norm)
                # Messages without a usable vector rank after every message with one.
                cosine[~usable] = -np.inf
                order = sorted(range(len(spoken)), key=lambda k: (-cosine[k], k))
                return [spoken[k] for k in order]
    # No vectors: the opening user message usually says what the episode is about; after
    # it, the messages that say the most.
    first_user = next((i for i in spoken if messages[i].role == "user"), None)
    rest = sorted(
        (i for i in spoken if i != first_user),
        key=lambda i: (-len(set(content_words(messages[i].text))), i),
    )
    return ([first_user] if first_user is not None else []) + rest


def _sentence_weight(sentence: str) -> int:
    return len(set(content_words(sentence)))


def _best_sentence(text: str) -> str:
    sentences = split_sentences(text) or [text]
    # max() keeps the first of equals: the earlier sentence wins a tie.
    return collapse(max(sentences, key=_sentence_weight))


def _title(
    sentence: str,
    phrases: tuple[str, ...],
    messages: Sequence[Message],
    spoken: list[int],
) -> str:
    base = cut_to_words(sentence, TITLE_MAX_WORDS).rstrip(_TITLE_TRIM)
    padding: list[str] = []
    for phrase in phrases:
        if word_count(base) + sum(word_count(p) for p in padding) >= TITLE_MIN_WORDS:
            break
        if phrase.casefold() not in base.casefold():
            padding.append(phrase)
    title = _join(base, ", ".join(padding))
    if word_count(title) < TITLE_MIN_WORDS:
        # Very little was said: say so, and by whom, rather than invent a topic.
        speakers = list(dict.fromkeys(messages[i].speaker for i in spoken))
        if len(speakers) == 1:
            title = _join(title, f"a short note from {speakers[0]}")
        else:
            title = _join(title, f"a short conversation between {speakers[0]} and {speakers[1]}")
    return _without_dangling_words(cut_to_words(title, TITLE_MAX_WORDS))


def _without_dangling_words(title: str) -> str:
    """A title cut mid-sentence without the stopwords it was left ending on ("... failed
    twice with a" -> "... failed twice"), never below the minimum length."""
    words = title.rstrip(_TITLE_TRIM).split()
    while (
        len(words) > TITLE_MIN_WORDS
        and word_count(" ".join(words[:-1])) >= TITLE_MIN_WORDS
        and stop_key(words[-1].strip(_TITLE_TRIM)) in STOP_WORDS
    ):
        words.pop()
    return " ".join(words).rstrip(_TITLE_TRIM)


def _join(head: str, tail: str) -> str:
    if head and tail:
        return f"{head} — {tail}"
    return head or tail


def _summary(chosen: list[Message]) -> str:
    """The chosen messages' best sentences, in order, each share of the budget filled
    greedily by weight; unused room passes to the next message."""
    pieces: list[str] = []
    remaining = SUMMARY_MAX_CHARS
    for k, message in enumerate(chosen):
        label = f"{message.speaker}: "
        separator = 1 if pieces else 0
        share = remaining // (len(chosen) - k) - len(label) - separator
        if share <= 0:
            break
        sentences = [collapse(s) for s in split_sentences(message.text)] or [collapse(message.text)]
        weights = [_sentence_weight(sentence) for sentence in sentences]
        # Sentences without a content word ("Thanks!") only when there is nothing else.
        order = sorted(
            (j for j in range(len(sentences)) if weights[j] or not any(weights)),
            key=lambda j: (-weights[j], j),
        )
        picked: set[int] = set()
        used = 0
        for j in order:
            cost = len(sentences[j]) + (1 if picked else 0)
            if used + cost <= share:
                picked.add(j)
                used += cost
        if picked:
            text = " ".join(sentences[j] for j in sorted(picked))
        else:
            text = cut_words(sentences[order[0]], share, ellipsis="…")
        piece = label + text
        pieces.append(piece)
        remaining -= len(piece) + separator
    return cut_words(" ".join(pieces), SUMMARY_MAX_CHARS, ellipsis="…")
