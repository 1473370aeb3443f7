"""Reviews (seed 003): how well an agent's output used a recalled memory, and the FSRS
update that follows.

A recall is a review opportunity: the memories it returned were either used by what the
agent said next, or not. The rating is one of FSRS's four grades:

- ``again``: the output did not use the memory (recalled, but of no use);
- ``hard``: it touched on it;
- ``good``: it used it;
- ``easy``: it leaned on it heavily (restated most of it).

Offline (no LLM) the grade comes from token overlap: the share of the memory's distinct
content words that also occur in the output (``usage_overlap``). Words are
``[a-z0-9_]+`` runs of the lowercased text, at least 3 characters or containing a digit,
English stopwords dropped, each cut to its first ``STEM_CHARS`` characters (a crude
stemmer: "deployed" and "deployment" both count as "deplo"). Thresholds:

    overlap <  0.10 -> again
    overlap <  0.30 -> hard
    overlap <  0.60 -> good
    overlap >= 0.60 -> easy

An LLM's rating that is none of the four counts as ``good`` (seed 003).

The FSRS update is the ``fsrs`` package's scheduler with its FSRS-6 defaults, without
learning steps (a memory is not a flashcard drilled within minutes: every review is a
long-term one) and without fuzzing (the same inputs give the same state).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from fsrs import Card, Rating, Scheduler, State

from episodic.scoring.retrievability import initial_difficulty
from episodic.scoring.stopwords import ENGLISH_STOPWORDS

RATINGS: tuple[str, ...] = ("again", "hard", "good", "easy")
DEFAULT_RATING = "good"  # seed 003: an unknown rating counts as Good

OVERLAP_HARD = 0.10  # below: again
OVERLAP_GOOD = 0.30  # below: hard
OVERLAP_EASY = 0.60  # below: good; at or above: easy
STEM_CHARS = 5
MIN_TOKEN_CHARS = 3

# Seed 003: a memory reviewed less than a day ago is not reviewed again.
MIN_REVIEW_INTERVAL = timedelta(days=1)

_TOKEN = re.compile(r"[a-z0-9_]+")
_SCHEDULER = Scheduler(learning_steps=(), relearning_steps=(), enable_fuzzing=False)
_RATING = {
    "again": Rating.Again,
    "hard": Rating.Hard,
    "good": Rating.Good,
    "easy": Rating.Easy,
}


def content_words(text: str) -> frozenset[str]:
    """The words of ``text`` that say something, stemmed by truncation (see above)."""
    return frozenset(
        token[:STEM_CHARS]
        for token in _TOKEN.findall(text.lower())
        if token not in ENGLISH_STOPWORDS
        and (len(token) >= MIN_TOKEN_CHARS or any(c.isdigit() for c in token))
    )


def usage_overlap(memory_text: str, output_text: str) -> float:
    """``|words(memory) & words(output)| / |words(memory)|``; 0 for a memory without
    content words."""
    memory = content_words(memory_text)
    if not memory:
        return 0.0
    return len(memory & content_words(output_text)) / len(memory)


def rating_for_overlap(overlap: float) -> str:
    """The offline grade of an overlap (thresholds in the module docstring)."""
    if overlap < OVERLAP_HARD:
        return "again"
    if overlap < OVERLAP_GOOD:
        return "hard"
    if overlap < OVERLAP_EASY:
        return "good"
    return "easy"


def parse_rating(label: object) -> str:
    """A model's label as one of ``RATINGS``; anything else is ``good``."""
    if isinstance(label, str):
        cleaned = label.strip().lower()
        if cleaned in _RATING:
            return cleaned
    return DEFAULT_RATING


def due_for_review(last_reviewed_at: datetime | None, now: datetime) -> bool:
    """False while the last review is less than ``MIN_REVIEW_INTERVAL`` old."""
    return last_reviewed_at is None or now - last_reviewed_at >= MIN_REVIEW_INTERVAL


def fsrs_review(
    stability: float | None,
    difficulty: float | None,
    last_review: datetime | None,
    rating: str,
    now: datetime,
) -> tuple[float, float]:
    """(stability in days, difficulty 1..10) after one review graded ``rating`` at
    ``now``. No stability yet: the memory's first review (FSRS's initial state for that
    grade). A stability without a difficulty starts from a first "Good"'s difficulty;
    without ``last_review`` the review counts as due now."""
    grade = _RATING[parse_rating(rating)]
    now = now if now.tzinfo is not None else now.replace(tzinfo=UTC)
    if stability is None or stability <= 0:
        card = Card()
    else:
        last = last_review if last_review is not None else now
        card = Card(
            state=State.Review,
            stability=float(stability),
            difficulty=float(difficulty) if difficulty is not None else initial_difficulty(),
            last_review=last if last.tzinfo is not None else last.replace(tzinfo=UTC),
        )
    reviewed, _ = _SCHEDULER.review_card(card, grade, review_datetime=now)
    assert reviewed.stability is not None and reviewed.difficulty is not None
    return float(reviewed.stability), float(reviewed.difficulty)
