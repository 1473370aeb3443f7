"""Keyphrases by RAKE (Rapid Automatic Keyword Extraction, Rose et al. 2010), no downloads.

Candidates are runs of up to ``PHRASE_MAX_WORDS`` consecutive words with no stopword,
filler word or punctuation between them. Each word scores ``degree / frequency`` over all
candidate occurrences, where a word's degree adds the length of every candidate it occurs
in, so words that keep company in longer phrases score higher than words that stand alone;
a phrase scores the sum of its words. Used to expand the search keys of memories and to pad
offline episode titles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from episodic.write.text import TOKEN, has_letter, is_content_word

KEYPHRASES_MAX = 8
PHRASE_MAX_WORDS = 4


@dataclass(slots=True)
class _Candidate:
    surface: str  # as first written
    words: tuple[str, ...]  # casefolded
    first: int  # order of first occurrence
    count: int = 0


def keyphrases(texts: Sequence[str], max_phrases: int = KEYPHRASES_MAX) -> tuple[str, ...]:
    """The ``max_phrases`` best keyphrases of ``texts``, best first.

    Phrases repeat no other phrase case-insensitively and are never part of a phrase
    already chosen ("Kyoto" is left out once "Kyoto offsite" is in). Each keeps the casing
    of its first occurrence. Ties go to the phrase written more often, then to the one
    written first. Phrases without a letter (bare numbers) are never returned.
    """
    if isinstance(texts, str):  # a str is a Sequence[str]; one text was meant
        texts = (texts,)
    if max_phrases <= 0:
        return ()
    candidates: dict[tuple[str, ...], _Candidate] = {}
    occurrences: list[tuple[str, ...]] = []

    def add(run: list[str]) -> None:
        for at in range(0, len(run), PHRASE_MAX_WORDS):
            chunk = run[at : at + PHRASE_MAX_WORDS]
            key = tuple(word.casefold() for word in chunk)
            candidate = candidates.get(key)
            if candidate is None:
                candidate = candidates[key] = _Candidate(" ".join(chunk), key, len(candidates))
            candidate.count += 1
            occurrences.append(key)

    for text in texts:
        run: list[str] = []
        end = 0
        for match in TOKEN.finditer(text):
            # Anything but whitespace between two words (a comma, a bracket) ends a phrase.
            if run and not text[end : match.start()].isspace():
                add(run)
                run = []
            end = match.end()
            word = match.group()
            if is_content_word(word):
                run.append(word)
            elif run:
                add(run)
                run = []
        if run:
            add(run)

    frequency: dict[str, int] = {}
    degree: dict[str, int] = {}
    for key in occurrences:
        for word in key:
            frequency[word] = frequency.get(word, 0) + 1
            degree[word] = degree.get(word, 0) + len(key)

    def score(candidate: _Candidate) -> float:
        return sum(degree[word] / frequency[word] for word in candidate.words)

    ranked = sorted(candidates.values(), key=lambda c: (-score(c), -c.count, c.first))
    chosen: list[_Candidate] = []
    for candidate in ranked:
        if len(chosen) == max_phrases:
            break
        if not has_letter(candidate.surface):
            continue
        if any(_contains(kept.words, candidate.words) for kept in chosen):
            continue
        chosen.append(candidate)
    return tuple(candidate.surface for candidate in chosen)


def _contains(longer: tuple[str, ...], shorter: tuple[str, ...]) -> bool:
    """Whether ``shorter`` occurs in ``longer`` as consecutive words."""
    n = len(shorter)
    return any(longer[i : i + n] == shorter for i in range(len(longer) - n + 1))
