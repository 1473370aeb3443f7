"""The offline consolidator's summary of a cluster: what a person would jot down from the
evidence, in the evidence's own sentences.

``cluster_summary`` writes a heading, the subject the memories share and how many there
are, from when, then the sentences that carry the cluster, oldest memory first::

    Payments v3 cutover (2 memories, 2026-11-06 to 2026-11-07): The webhook replay
    during the payments v3 cutover issued 37 duplicate refunds (EUR 4,310 total): refund
    handlers in v3 do not check the idempotency key from the v2 ledger. Finance reversed
    all 37; v3 will import the v2 key table before any replay.

- **The subject** is the run of words the most memories share: up to ``SUBJECT_MAX_WORDS``
  consecutive words of one sentence, starting and ending on a content word, with nothing
  but spaces between them, found in at least two memories (ties: more content words, then
  the earliest in the oldest memory). It needs ``SUBJECT_MIN_CONTENT_WORDS``; without one
  the heading says "N related memories".
- **The sentences** come verbatim from the memories (``split_sentences``), at most
  ``SENTENCES_PER_MEMORY`` from each. A sentence joins only when at least
  ``NOVELTY`` (40%) of its content words (stemmed, ``episodic.scoring.review``) are new
  to the summary so far: the second report of the same incident adds what it says
  beyond the first, not the incident again. (On the sample journal's clusters, a
  restatement brings a third of new words or less, "Finance reversed all 37; v3 will
  import the v2 key table" 44%.) They fill ``SUMMARY_MAX_CHARS``; a sentence that does
  not fit is left out, and a first sentence longer than the room is cut at a word.

Nothing is inferred: every word after the heading was written in the evidence.
"""

from __future__ import annotations

from collections.abc import Sequence

from episodic.model import Memory
from episodic.scoring.review import content_words as stems
from episodic.upkeep.prompts import CONTENT_MAX_CHARS
from episodic.write.text import TOKEN, collapse, cut_words, is_content_word, split_sentences

SUMMARY_MAX_CHARS = CONTENT_MAX_CHARS  # the same room an LLM's rule or fact gets
SUBJECT_MAX_WORDS = 6
SUBJECT_MIN_CONTENT_WORDS = 2
SENTENCES_PER_MEMORY = 2
NOVELTY = 0.4
_TERMINAL = ".!?…"

Phrase = tuple[str, ...]


def cluster_summary(members: Sequence[Memory]) -> str:
    """The summary of a cluster of memories (see the module docstring)."""
    ordered = sorted(members, key=lambda m: (m.ts, m.id))
    sentences = [[collapse(s) for s in split_sentences(m.content)] for m in ordered]
    span = _span(ordered)
    subject = shared_subject(sentences)
    if subject:
        head = f"{_capitalised(subject)} ({len(members)} memories, {span}): "
    else:
        head = f"{len(members)} related memories ({span}): "
    return head + _body(sentences, SUMMARY_MAX_CHARS - len(head))


def shared_subject(texts: Sequence[Sequence[str]]) -> str:
    """The phrase the most of ``texts`` (each a list of sentences) share, as first written
    in the earliest of them; "" when no phrase qualifies."""
    found: dict[Phrase, tuple[int, int, str]] = {}  # phrase -> (first text, position, surface)
    holders: dict[Phrase, set[int]] = {}
    position = 0
    for i, sentences in enumerate(texts):
        for sentence in sentences:
            for key, surface in _phrases(sentence):
                holders.setdefault(key, set()).add(i)
                found.setdefault(key, (i, position, surface))
                position += 1
    best: tuple[int, int, int] | None = None
    subject = ""
    for key, members in holders.items():
        content = sum(1 for word in key if is_content_word(word))
        if len(members) < 2 or content < SUBJECT_MIN_CONTENT_WORDS:
            continue
        rank = (len(members), content, -found[key][1])
        if best is None or rank > best:
            best, subject = rank, found[key][2]
    return subject


def _phrases(sentence: str) -> list[tuple[Phrase, str]]:
    """Every run of 2..SUBJECT_MAX_WORDS words of ``sentence`` separated by spaces only,
    starting and ending on a content word: (casefolded words, the words as written)."""
    words = list(TOKEN.finditer(sentence))
    out: list[tuple[Phrase, str]] = []
    for start, first in enumerate(words):
        if not is_content_word(first.group()):
            continue
        for end in range(start + 1, min(start + SUBJECT_MAX_WORDS, len(words))):
            gap = sentence[words[end - 1].end() : words[end].start()]
            if not gap.isspace():
                break
            if is_content_word(words[end].group()):
                key = tuple(w.group().casefold() for w in words[start : end + 1])
                out.append((key, sentence[first.start() : words[end].end()]))
    return out


def _body(sentences: Sequence[Sequence[str]], room: int) -> str:
    covered: set[str] = set()
    picked: list[str] = []
    used = 0
    for memory in sentences:
        taken = 0
        for sentence in memory:
            words = stems(sentence)
            if not words or len(words - covered) < NOVELTY * len(words):
                continue
            text = sentence if sentence[-1] in _TERMINAL else sentence + "."
            cost = len(text) + (1 if picked else 0)
            if used + cost > room:
                if picked:
                    continue  # a shorter sentence further on may still fit
                text = cut_words(text, room, ellipsis="…")
                cost = len(text)
            picked.append(text)
            covered |= words
            used += cost
            taken += 1
            if taken == SENTENCES_PER_MEMORY:
                break
    if not picked:  # no content words anywhere: the first memory's words, as they are
        first = next((s for memory in sentences for s in memory), "")
        return cut_words(first, room, ellipsis="…")
    return " ".join(picked)


def _capitalised(phrase: str) -> str:
    """The phrase with its first letter upper-cased, unless its first word is written
    with capitals already ("iOS build", "pgBouncer pool" stay as they are)."""
    first = phrase.split(" ", 1)[0]
    return phrase[:1].upper() + phrase[1:] if first.islower() else phrase


def _span(ordered: Sequence[Memory]) -> str:
    first, last = ordered[0].ts.date().isoformat(), ordered[-1].ts.date().isoformat()
    return first if first == last else f"{first} to {last}"
