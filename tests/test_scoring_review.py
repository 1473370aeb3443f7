"""Review ratings and the FSRS update (seed 003), pinned."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from episodic.scoring.review import (
    content_words,
    due_for_review,
    fsrs_review,
    parse_rating,
    rating_for_overlap,
    usage_overlap,
)

T = datetime(2026, 3, 1, tzinfo=UTC)
# Content words: check, oom, cache, ttl, chang ("after" is a stopword).
MEMORY = "checkout OOM after cache TTL change"


@pytest.mark.parametrize(
    ("overlap", "rating"),
    [
        (0.0, "again"),
        (0.0999, "again"),
        (0.10, "hard"),
        (0.2999, "hard"),
        (0.30, "good"),
        (0.5999, "good"),
        (0.60, "easy"),
        (1.0, "easy"),
    ],
)
def test_overlap_thresholds(overlap: float, rating: str) -> None:
    assert rating_for_overlap(overlap) == rating


@pytest.mark.parametrize(
    ("output", "overlap", "rating"),
    [
        ("Deployed the new search page.", 0 / 5, "again"),
        ("The cache looked fine.", 1 / 5, "hard"),
        ("Checkout ran out of memory again (OOM).", 2 / 5, "good"),
        ("Rolled back the TTL change on the checkout cache.", 4 / 5, "easy"),
    ],
)
def test_offline_rating_by_the_share_of_memory_words_used(
    output: str, overlap: float, rating: str
) -> None:
    assert usage_overlap(MEMORY, output) == pytest.approx(overlap)
    assert rating_for_overlap(usage_overlap(MEMORY, output)) == rating


def test_content_words_drop_stopwords_and_stem_by_truncation() -> None:
    assert content_words("The deployment of checkout failed: OOM at 3am, retried 2x") == {
        "deplo",
        "check",
        "faile",
        "oom",
        "3am",
        "retri",
        "2x",
    }
    assert usage_overlap("", "anything") == 0.0
    assert usage_overlap("of the", "of the") == 0.0  # only stopwords: nothing to use


@pytest.mark.parametrize(
    ("label", "rating"),
    [("Again", "again"), (" hard ", "hard"), ("EASY", "easy"), ("great", "good"), (None, "good")],
)
def test_an_unknown_rating_counts_as_good(label: object, rating: str) -> None:
    assert parse_rating(label) == rating


# The fsrs package's FSRS-6 defaults: a first review sets S0(rating), and a review of a
# card with S=3, D=5 three days later.
@pytest.mark.parametrize(
    ("rating", "first", "after_3_days"),
    [
        ("again", (0.212, 6.4133), (0.696856, 8.341762)),
        ("hard", (1.2931, 5.112171), (7.856756, 6.665995)),
        ("good", (2.3065, 2.118104), (11.075750, 4.990228)),
        ("easy", (8.2956, 1.0), (18.125072, 3.314461)),
    ],
)
def test_fsrs_update_follows_the_package_defaults(
    rating: str, first: tuple[float, float], after_3_days: tuple[float, float]
) -> None:
    assert fsrs_review(None, None, None, rating, T) == pytest.approx(first, abs=1e-5)
    got = fsrs_review(3.0, 5.0, T, rating, T + timedelta(days=3))
    assert got == pytest.approx(after_3_days, abs=1e-5)


def test_a_stability_without_difficulty_starts_from_a_first_good() -> None:
    with_default = fsrs_review(3.0, None, T, "good", T + timedelta(days=3))
    explicit = fsrs_review(3.0, 2.118104, T, "good", T + timedelta(days=3))
    assert with_default == pytest.approx(explicit, abs=1e-4)


@pytest.mark.parametrize(
    ("last", "due"),
    [
        (None, True),
        (T - timedelta(hours=23, minutes=59), False),
        (T - timedelta(days=1), True),
        (T - timedelta(days=5), True),
    ],
)
def test_a_memory_reviewed_less_than_a_day_ago_is_not_due(last: datetime | None, due: bool) -> None:
    assert due_for_review(last, T) is due
