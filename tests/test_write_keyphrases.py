"""RAKE keyphrases: candidates, scores, ties, casing and the cases that must yield nothing."""

from __future__ import annotations

import pytest

from episodic.write.keyphrases import KEYPHRASES_MAX, PHRASE_MAX_WORDS, keyphrases
from episodic.write.text import STOP_WORDS


def test_worked_example() -> None:
    # Candidates: Book | Kyoto offsite | Priya Raman | Kyoto offsite | venue ("needs" is
    # filler). degree/frequency: kyoto 4/2, offsite 4/2, priya 2/1, raman 2/1, book 1, venue 1.
    # "Kyoto offsite" and "Priya Raman" both score 4; the one written twice wins the tie;
    # "Book" and "venue" tie at 1 and go in the order they were written.
    text = "Book the Kyoto offsite with Priya Raman. The Kyoto offsite needs a venue."

    assert keyphrases([text]) == ("Kyoto offsite", "Priya Raman", "Book", "venue")
    assert keyphrases([text], max_phrases=2) == ("Kyoto offsite", "Priya Raman")


def test_longer_phrases_outrank_their_words_and_swallow_them() -> None:
    # kyoto: degree 3 + 1 over frequency 2; "Kyoto" alone is part of the chosen phrase.
    assert keyphrases(["Kyoto offsite planning. Kyoto!"]) == ("Kyoto offsite planning",)


def test_runs_longer_than_four_words_are_cut_into_phrases_of_four() -> None:
    assert PHRASE_MAX_WORDS == 4
    assert keyphrases(["alpha beta gamma delta epsilon"]) == ("alpha beta gamma delta", "epsilon")


def test_punctuation_separates_phrases() -> None:
    assert keyphrases(["Kyoto, Osaka"]) == ("Kyoto", "Osaka")
    assert keyphrases(["Kyoto Osaka"]) == ("Kyoto Osaka",)


def test_case_insensitive_dedupe_keeps_the_first_casing() -> None:
    texts = ["the deploy script broke", "Deploy Script again; DEPLOY SCRIPT!"]
    assert keyphrases(texts) == ("deploy script broke",)
    assert keyphrases(["Deploy Script", "deploy script"]) == ("Deploy Script",)


def test_inner_punctuation_stays_inside_a_word() -> None:
    assert keyphrases(["bump config.yaml to v2.1 in eu-west-1"]) == (
        "bump config.yaml",
        "v2.1",
        "eu-west-1",
    )


@pytest.mark.parametrize(
    "texts",
    [
        [],
        [""],
        ["   \n"],
        ["Thanks so much, ok, great!"],  # only filler
        ["it was the one that they had"],  # only stopwords
        ["In 2024, 42."],  # numbers alone are not phrases
    ],
)
def test_nothing_to_say_yields_no_phrase(texts: list[str]) -> None:
    assert keyphrases(texts) == ()


def test_a_single_string_is_one_text_not_characters() -> None:
    assert keyphrases("Kyoto offsite") == ("Kyoto offsite",)


def test_max_phrases_bounds_the_result() -> None:
    text = ". ".join(f"topic{i} item{i}" for i in range(20))
    assert len(keyphrases([text])) == KEYPHRASES_MAX == 8
    assert keyphrases([text], max_phrases=0) == ()
    assert keyphrases([text], max_phrases=-1) == ()
    assert keyphrases([text], max_phrases=3) == ("topic0 item0", "topic1 item1", "topic2 item2")


def test_no_phrase_holds_a_stopword_and_the_result_is_deterministic() -> None:
    texts = [
        "We should move the quarterly planning meeting to Thursday because Priya is out.",
        "The staging cluster in eu-west-1 keeps timing out on the nightly export job.",
        "Can you check whether replica B lags behind the primary database again?",
    ]
    phrases = keyphrases(texts)
    assert phrases == keyphrases(list(texts))
    assert len(phrases) == KEYPHRASES_MAX
    for phrase in phrases:
        assert all(word.casefold() not in STOP_WORDS for word in phrase.split()), phrase
        assert 1 <= len(phrase.split()) <= PHRASE_MAX_WORDS
    assert "nightly export job" in phrases
