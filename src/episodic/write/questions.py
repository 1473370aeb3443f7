"""What a question or a request asks: the current state of something or what was said
before ("what is my budget?" against "what was the deadline?"), a value or a list, and a
statement that ends by asking for something ("I've moved the call to 4 PM, can you remind
me?"), whose first part is said as fact. Read by the supersession rule on write and by
recall's orderings among the hits. Pure: no I/O.
"""

from __future__ import annotations

import re

_QUESTION_START = re.compile(
    r"^\W*(?:do|does|did|is|are|was|were|should|could|would|can|will|shall|have|has|what|"
    r"why|how|when|where|who|which|whose|shall)\b",
    re.IGNORECASE,
)


def opens_as_question(sentence: str) -> bool:
    """Whether ``sentence`` opens with a question word ("did ...", "what ...")."""
    return _QUESTION_START.match(sentence) is not None


# A statement that ends by asking the listener for something: "I've moved the call to
# 4 PM, can you remind me?", "the budget is now $650, so how should I split it?". The
# question opens a trailing clause (after a comma, a dash or "so"/"and"/"but"); what comes
# before it is said as fact, not asked.
_TRAILING_REQUEST = re.compile(
    r"^(?P<stated>.*?\w.*?)(?:\s*[,;:]|\s+[-\u2013\u2014])\s+(?:(?:so|and|but|then)\s+)?"
    r"(?:can|could|would|will|do|does|did|should|shall|is|are|what|how|when|where|which|"
    r"who|why|any)\b[^,;:]*\?[\s\"'\u201d\u2019)]*$",
    re.IGNORECASE | re.DOTALL,
)

# The request's own end, looked for first: the pattern above backtracks over every way of
# splitting a long sentence before it can fail, ~1 ms for a few hundred characters.
_ENDS_ASKING = re.compile(r"\?[\s\"'\u201d\u2019)]*$")


def stated_before_request(sentence: str) -> str:
    """``sentence`` without a request it ends with, when it opens as a statement ("I've
    allocated $4,000 for the filing fees, can you help me plan?" states "I've allocated
    $4,000 for the filing fees"); a sentence that opens as a question stays whole."""
    if _QUESTION_START.match(sentence) or _ENDS_ASKING.search(sentence) is None:
        return sentence
    m = _TRAILING_REQUEST.match(sentence)
    return m.group("stated") if m else sentence


# A question asked in the past tense, or about the first or an earlier state, wants what
# was said then ("when did I set the budget?", "what was the deadline?"); one in
# the present ("what is my budget?", "how many books am I aiming to read?") wants the
# current state, which a newer statement of the same subject holds.
_ASKS_BEFORE = re.compile(
    r"\b(?:did|was|were|had|used\s+to|originally|initially|previously|formerly|ago"
    r"|at\s+first|for\s+the\s+first\s+time|back\s+then|at\s+the\s+time)\b",
    re.IGNORECASE,
)


def asks_for_now(question: str) -> bool:
    """Whether ``question`` asks for the current state of something rather than what
    was said or done before: it names no past tense and no earlier time."""
    return bool(question.strip()) and _ASKS_BEFORE.search(question) is None


# A question that asks what, how much, when or where something is ("what is my budget?",
# "how many commits are merged?"), not one asking for a list, help or a yes or no ("can
# you list ...", "have I ever ...").
_ASKS_WHAT = re.compile(r"^\W*(?:what|which|how|when|where|who|whose)\b", re.IGNORECASE)


def asks_for_current_value(question: str) -> bool:
    """Whether ``question`` asks what something is now: a what / how / when / where
    question (``asks_for_now``: no past tense and no earlier time)."""
    return _ASKS_WHAT.match(question) is not None and asks_for_now(question)
