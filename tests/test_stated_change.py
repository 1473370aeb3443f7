"""A value a text states as changed (write/stated_change.py): what recall reads to put a
newer hit that restates a value above the older one among the hits it returns."""

from __future__ import annotations

import pytest

from episodic.write.stated_change import (
    _CHANGE_CUE,
    _may_state_change,
    changed_values,
    states_change,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("The page load time has improved to 180ms since the cache went in.", "180ms"),
        ("Our team has grown to 14 people.", "14"),
        ("My monthly rent went up by $120.", "$120"),
        ("The standup is now at 9:30.", "9:30"),
        ("We agreed on a new budget of $3,400 for the trip.", "$3,400"),
        ("The launch was postponed to October 12.", "12"),
        ("I have cut my screen time down to two hours a day.", "two"),
        ("Marco rescheduled the review to 4pm, which suits everyone.", "4pm"),
        ("The printer queue reached 40 jobs this morning.", "40"),
        ("Good news: the price dropped to €19, so I bought two.", "€19"),
        ("I'm reading a lot, and my goal has changed to 30 books this year.", "30"),
    ],
)
def test_a_value_stated_as_changed_is_found(text: str, value: str) -> None:
    assert value in changed_values(text)
    assert states_change(text)


@pytest.mark.parametrize(
    "text",
    [
        # being new to something, and "now that" opening a thought
        "I'm new to this, so bear with me.",
        "I'm new to 5k races and loving them.",
        "Now that you mention it, I have 3 cats.",
        "Now that the kids are 5 and 7, we travel more.",
        # questions, including one that ends a statement's sentence
        "Has the quota increased to 1,500?",
        "Did the meeting move to 3pm?",
        "Can you check whether the rent went up by $50?",
        # hypotheticals, plans, wishes, expectations
        "If it increased to 7, I'd need another room.",
        "Suppose the price dropped to $10 next week.",
        "I hope my score has improved to 90 by Friday.",
        "We're planning to move the launch to May 3.",
        "The fee will be raised to $40 next year.",
        "It might have dropped to 20 overnight.",
        # denied
        "The price hasn't increased to $10 after all.",
        "The deadline was not moved to June 1.",
        # a change dated by how long ago it was, or with no value tied to it
        "I moved here 3 years ago.",
        "I switched jobs about 3 years ago.",
        "My cooking has improved a lot over the last 2 weeks.",
        "I changed jobs and now I commute less.",
        "We went to the lake with 4 friends.",
        # a plain statement of a value
        "The budget is $3,000 for the trip.",
    ],
)
def test_look_alikes_state_no_change(text: str) -> None:
    assert changed_values(text) == frozenset()
    assert not states_change(text)


def test_a_request_after_a_statement_keeps_the_statement() -> None:
    """ "..., can you help me?" asks for help; what comes before it is said as fact."""
    text = "My reading goal has increased to 24 books, can you suggest a schedule?"
    assert changed_values(text) == frozenset({"24"})


def test_each_sentence_is_read_on_its_own() -> None:
    """A question in one sentence does not make the next one's statement a question, and a
    hypothetical in one clause does not reach a value stated in another sentence."""
    text = "Do you remember my commute? It has dropped to 25 minutes. If it rose to 40 I'd quit."
    assert changed_values(text) == frozenset({"25"})


@pytest.mark.parametrize(
    ("text", "value"),
    [
        # each cue that is not a verb of change, and the two-word ones: the look at a
        # text's words before its sentences are read must let every one of them through
        ("The quota is now 1,200.", "1,200"),
        ("We picked a new deadline of May 20.", "20"),
        ("The limit is no longer 5 but 8.", "5"),
        ("From now on the standup is at 9:15.", "9:15"),
        ("The rent went down to $900.", "$900"),
        ("My score has gone up to 88.", "88"),
        ("The launch was pushed back to June 3.", "3"),
        ("The review was brought forward to 2pm.", "2pm"),
        ("THE PRICE DROPPED TO $15.", "$15"),
    ],
)
def test_every_cue_passes_the_first_look(text: str, value: str) -> None:
    assert value in changed_values(text)


@pytest.mark.parametrize(
    "text",
    [
        "I don't work there any more.",
        "I don't work there anymore.",
        "We went by train instead.",
        "The rent went  down last month.",
        "Nothing changed.",
    ],
)
def test_the_first_look_lets_through_whatever_the_pattern_finds(text: str) -> None:
    assert _CHANGE_CUE.search(text) is not None
    assert _may_state_change(text)


def test_the_first_look_stops_a_text_without_a_word_of_change() -> None:
    text = "I bought 3 apples at the market and walked home."
    assert _CHANGE_CUE.search(text) is None
    assert not _may_state_change(text)
