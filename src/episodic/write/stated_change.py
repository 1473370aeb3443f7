"""A value a text states as changed, read on its own: "the response time has improved to
250ms", "the quota is now 1,200", "the new deadline of May 20", "my budget went up by $50".

Recall reads it to order the hits it returns (``recall/supersede.py``): a newer memory
that states a changed value goes above an older one by the same owner. A word of change
(a verb in the past or perfect, or "now", "new", "no longer" ...) and, a few words on in
the same clause, a value tied to it by a small word ("to", "of", "by", "at", "is" ...).
General English, none of it a benchmark's. What makes a value unreal keeps it from
counting: a question, "if", "would", "might", a plan, a wish or a negation before it, or a
value that only dates the change ("3 weeks ago"). Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

from episodic.write.change_rules import read_sentence, sentence_guard
from episodic.write.questions import stated_before_request
from episodic.write.text import split_sentences

# Words of change: a verb in the past or perfect, two-word ones, and the adverbs.
_CHANGED_TEXT = """increased decreased rose risen grew grown dropped fell fallen declined
improved worsened reduced raised lowered boosted bumped extended shortened expanded doubled
tripled halved reached climbed jumped moved changed switched shifted updated upgraded
downgraded adjusted revised rescheduled postponed delayed cut became become"""
_CHANGED_WORDS = _CHANGED_TEXT.split()
_CHANGED_PHRASES = (
    ("went", "up"),
    ("went", "down"),
    ("gone", "up"),
    ("gone", "down"),
    ("pushed", "back"),
    ("brought", "forward"),
)
_CHANGE_CUE = re.compile(
    r"\b(?:"
    + "|".join(_CHANGED_WORDS)
    + "|"
    + "|".join(rf"{a}\s+{b}" for a, b in _CHANGED_PHRASES)
    + r"|now(?!\s+that\b)|new(?!\s+(?:to|at|here)\b)|no\s+longer|any\s*more|instead"
    + r"|from\s+now\s+on)\b",
    re.IGNORECASE,
)
# What every cue above opens with, for a look at a text's words before the pattern reads
# it (the pattern tries each cue at each character: ~100 us for 600 characters, the
# words ~25 us).
_CUE_WORDS = frozenset([*_CHANGED_WORDS, "now", "new", "instead", "anymore"])
_CUE_PAIRS = frozenset([*_CHANGED_PHRASES, ("no", "longer"), ("any", "more"), ("from", "now")])
_LETTERS = re.compile(r"[a-z]+")


def _may_state_change(text: str) -> bool:
    """False when ``text`` holds no word of change (``_CHANGE_CUE`` would find none)."""
    words = _LETTERS.findall(text.casefold())
    if not _CUE_WORDS.isdisjoint(words):
        return True
    return any(pair in _CUE_PAIRS for pair in pairwise(words))


# What makes the rest of a sentence unreal or not so: asked about, supposed, planned,
# wished, denied.
_UNREAL = re.compile(
    r"\b(?:if|unless|whether|suppose|supposing|imagine|would|could|might|maybe|perhaps|"
    r"should|will|going\s+to|plan(?:s|ned|ning)?\s+to|hope|hoping|wish|expect(?:s|ed|ing)?|"
    r"not|never|no(?!\s+longer)|didn't|don't|doesn't|hasn't|haven't|hadn't|won't|isn't|"
    r"aren't|wasn't|weren't)\b|'ll\b|'d\b",
    re.IGNORECASE,
)
# What ties a value to the word of change before it.
_TIE_WORDS = """to of by at from is are be been 's now reached hit has have had total about around
approximately roughly nearly almost just over under only"""
_TIES = frozenset(_TIE_WORDS.split())
_MONTH_WORDS = """january february march april may june july august september october november
december jan feb mar apr jun jul aug sep sept oct nov dec"""
_MONTHS = frozenset(_MONTH_WORDS.split())
_NUMBERS = """two three four five six seven eight nine ten eleven twelve fifteen twenty thirty
forty fifty hundred thousand million dozen double twice half"""
_NUMBER_WORDS = frozenset(_NUMBERS.split())
_CLAUSE_BREAK = re.compile(r",\s|;|:\s|\s[-\u2013\u2014]\s|\(|\)|\bbut\b|\bso\b", re.IGNORECASE)
_VALUE_WORD = re.compile(r"[$£€]?\d[\d,.:/%-]*\w*|[A-Za-z]+")
# Words within which a value still belongs to the word of change before it.
_VALUE_REACH = 6


def _a_value(word: str) -> bool:
    return any(c.isdigit() for c in word) or word.casefold() in _NUMBER_WORDS


# The words on either side of a word of change that say what changed ("the dashboard API
# response time, which has recently improved to 250ms": "dashboard API response time").
_SUBJECT_BEFORE = 10
_SUBJECT_AFTER = 6
_WORDS_BEFORE = re.compile(r"[\w'$%.,]+")


@dataclass(frozen=True, slots=True)
class StatedChange:
    """One value a text states as changed: the values, and the content words (stems, no
    numbers) of the words around the word of change, which name what changed."""

    values: frozenset[str]
    about: frozenset[str]


@lru_cache(maxsize=8192)
def stated_changes(text: str) -> tuple[StatedChange, ...]:
    """Each value ``text`` states as changed to ("which has now reached 165"), in order;
    none when it states none. A question, a hypothetical, a plan, a wish or a denial
    states none, nor does a change dated only by how long ago it was."""
    found: list[StatedChange] = []
    # Most texts hold no word of change at all: no sentence to read then.
    if not _may_state_change(text):
        return ()
    for whole in split_sentences(text):
        # Most sentences hold no word of change: nothing more to read in them.
        if _CHANGE_CUE.search(whole) is None:
            continue
        sentence = stated_before_request(whole)
        if sentence_guard(sentence) == "a question":
            continue
        for clause in _CLAUSE_BREAK.split(sentence):
            at = sentence.find(clause)
            for cue in _CHANGE_CUE.finditer(clause):
                if _UNREAL.search(sentence[:at] + clause[: cue.start()]):
                    continue
                after = _VALUE_WORD.findall(clause[cue.end() :])
                values = _tied_values(after)
                if values:
                    before = _WORDS_BEFORE.findall(sentence[: at + cue.start()])
                    near = before[-_SUBJECT_BEFORE:] + after[:_SUBJECT_AFTER]
                    found.append(StatedChange(frozenset(values), content_words(" ".join(near))))
    return tuple(found)


def changed_values(text: str) -> frozenset[str]:
    """The values ``text`` states as changed to ("which has now reached 165": {"165"}),
    casefolded; empty when it states none."""
    return frozenset(v for change in stated_changes(text) for v in change.values)


@lru_cache(maxsize=8192)
def content_words(text: str) -> frozenset[str]:
    """The content words of ``text`` as light stems, numbers and codes left out: what two
    texts and a question share when they speak of one subject."""
    return frozenset(
        w
        for sentence in split_sentences(text)
        for w in read_sentence(sentence).words
        if not any(c.isdigit() for c in w)
    )


def _tied_values(words: Sequence[str]) -> set[str]:
    """The values among the first words after a word of change that a small word ties to
    it ("to 250ms", "of 1,200", "is now 7"), or that follow it directly ("reached 165")."""
    out: set[str] = set()
    for n, word in enumerate(words[:_VALUE_REACH]):
        if not _a_value(word):
            continue
        after = words[n + 1 : n + 3]
        if any(w.casefold() == "ago" for w in after):
            continue
        before = n - 1
        while before >= 0 and words[before].casefold() in _MONTHS:
            before -= 1
        if before < 0 or words[before].casefold() in _TIES:
            out.add(word.casefold().rstrip(".,"))
    return out


def states_change(text: str) -> bool:
    """Whether ``text`` states that a value changed (``stated_changes`` finds one)."""
    return bool(stated_changes(text))
