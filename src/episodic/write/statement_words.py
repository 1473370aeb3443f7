"""Statements as comparable words, for the supersession rule (``write.change_rules``).

A statement becomes its content words in order: casefolded, stopwords and words of time or
firmness ("now", "always") dropped, lightly stemmed ("lives", "lived", "living" meet), with
subject pronouns kept ("I", "we") and a few verb phrases folded into one marker word, so that
"lives in", "moved to" and "is based in" all name the residence slot, and "works at" and
"is working at" the employer slot. Each word also says whether it was written in lower case
(a common word) and whether it looks like a value (a number, a code, a single capital letter
or a name in mid-sentence).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from episodic.write.text import STOP_WORDS, TOKEN, split_sentences

# Verb phrases that name the same slot, folded into one marker word before comparing:
# "lives in", "moved to", "relocated to", "is based in" all fill where someone lives.
RESIDENCE = "_residence_"
EMPLOYER = "_employer_"
USES = "_uses_"
LOCATION = "_location_"
BE = "_be_"
# "is based in" and "lives in", "is working at" and "works at" fill the same slot.
_COPULA = r"\b(?:(?:is|are|am|was|were|has\s+been|have\s+been)\s+)?"
SLOT_MARKERS = frozenset({RESIDENCE, EMPLOYER, USES, LOCATION})
_FOLDS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), f" {marker} ")
    for pattern, marker in (
        (
            rf"{_COPULA}(?:lives?|lived|living|resides?|resided|residing|moved|moves|moving|"
            r"relocated|relocates|relocating|based|settled)\s+(?:back\s+|over\s+)?(?:in|to)\b",
            RESIDENCE,
        ),
        (
            rf"{_COPULA}(?:(?:started|starts|began)\s+(?:working|a\s+(?:new\s+)?job)|works?|"
            r"worked|working|employed|(?:new\s+)?job)\s+(?:at|for|by)\b",
            EMPLOYER,
        ),
        (
            rf"{_COPULA}(?:uses?|using|switched\s+to|switch(?:es|ing)?\s+to|migrated\s+to|"
            r"runs?\s+on|running\s+on|relies\s+on|rely\s+on)\b",
            USES,
        ),
        (r"\b(?:is|are|am|was|were)\s+(?:now\s+|currently\s+|still\s+)?in\b", LOCATION),
        # "changed to W", "goes up to W": the slot now holds W, like "is W".
        (
            r"\b(?:(?:is|are|was|were|has\s+been|have\s+been|got)\s+)?(?:changed|updated|set|"
            r"increased|decreased|raised|lowered|(?:goes|went|gone)\s+(?:up|down))\s+to\b",
            BE,
        ),
    )
)
# Subject pronouns stay, so "I moved" and "we live" keep their subject; object and
# possessive forms ("my", "her") are dropped like other stopwords ("her" could be either).
_SUBJECTS = {
    "i": "_i_",
    "we": "_we_",
    "he": "_he_",
    "she": "_she_",
    "they": "_they_",
    **dict.fromkeys(("is", "are", "am", "was", "were"), BE),
}
PRONOUNS = frozenset({"_i_", "_we_", "_he_", "_she_", "_they_"})
# Words that mark when or how firmly, not what: "Bob now lives in Rome" and "Bob always
# lived in Rome" fill the same slot.
_IGNORED_WORDS = """now new old previous former currently current always usually normally
generally nowadays still instead anymore longer"""
_IGNORED = frozenset(_IGNORED_WORDS.split())
# Words that stand for a value without naming one.
VAGUE = frozenset({"whatever", "whichever", "anything", "something", "else", "other", "like"})
# Counts are values ("one approval", "two approvals"), though "one" is a filler word.
_CODE_MARKS = frozenset(".@/:_#")
_NUMBERS = """one two three four five six seven eight nine ten eleven twelve twenty thirty hundred
once twice first second third fourth fifth sixth seventh eighth ninth tenth"""
_NUMBER_WORDS = frozenset(_NUMBERS.split())
# Verbs too general to name a slot on their own ("use A for X": X names the slot).
GENERIC = frozenset({USES, "use", "go", "get", "set", "make", "do", "pick", "choose", "prefer"})


@dataclass(frozen=True, slots=True)
class Word:
    key: str  # stemmed, casefolded (or a marker)
    surface: str  # casefolded as written
    lower: bool  # written in lower case (so a common word, not a name)
    value: bool  # a number, a code, a single capital letter or a name mid-sentence


def stem(word: str) -> str:
    """A light suffix-stripping stem: enough that "lives", "lived" and "living" meet."""
    w = word
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
    elif (len(w) > 4 and w.endswith("ed")) or (
        len(w) > 4 and w.endswith(("ches", "shes", "sses", "xes", "zes"))
    ):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "ls":
        w = w[:-1]  # "stopp" (stopped) -> "stop"
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]  # "live" and "liv" (lived) meet
    return w


def _fold(text: str) -> str:
    text = text.replace("’", "'")
    for pattern, marker in _FOLDS:
        text = pattern.sub(marker, text)
    return text


# The rule compares one new text with each of its candidates, clause by clause and once per
# change signal: the same texts are read many times in a row.
@functools.lru_cache(maxsize=2048)
def to_words(text: str) -> tuple[Word, ...]:
    """The comparable words of ``text``: content words, subjects, values; in order."""
    out: list[Word] = []
    for sentence in split_sentences(_fold(text)):
        first = True
        for match in TOKEN.finditer(sentence):
            raw = match.group()
            if raw.endswith(("'s", "'S")):
                raw = raw[:-2]
            key = raw.casefold()
            initial, first = first, False
            if key.startswith("_") and key.endswith("_"):
                out.append(Word(key, key, True, False))
                continue
            if key in _SUBJECTS:
                out.append(Word(_SUBJECTS[key], key, True, False))
                continue
            capital_letter = len(raw) == 1 and raw.isupper() and not initial and raw != "I"
            number = key.isdigit() or key in _NUMBER_WORDS
            if not (capital_letter or number) and (
                key in STOP_WORDS or key in _IGNORED or len(key) < 2
            ):
                continue
            has_digit = number or any(c.isdigit() for c in raw)
            # A host, an address, a path or a handle: "vpn.corp.net", "ops@acme.io".
            code = any(c in _CODE_MARKS for c in raw)
            name = raw[0].isupper() and not initial
            out.append(
                Word(
                    key if has_digit or code else stem(key),
                    key,
                    raw[0].islower(),
                    has_digit or code or capital_letter or name,
                )
            )
    return tuple(out)


def word_keys(words: Sequence[Word]) -> list[str]:
    return [w.key for w in words]


def normalised(text: str) -> str:
    return " ".join(TOKEN.findall(text.casefold().replace("’", "'")))
