"""What tells two cases apart when their words are nearly the same (seed 004 keeps one
entry per concrete situation): "Invoice 4471 failed to sync to the ledger" and "Invoice
4472 failed to sync to the ledger" are two cases, not one said twice.

An identifier is a token with a digit in it (numbers, ids, versions: ``4471``,
``INV-20931``, ``v2.31``), or a name: a capitalised word that does not open its sentence
(``Torstrasse``, ``Falcon``). A note that holds an identifier the other does not is a
different case, whatever share of its words the other holds or however close their
vectors are; the restatement and similarity checks keep it.

Whose fact it is tells cases apart too: "My wife started a new job as a night nurse" is not
"I started a new job as a night nurse" said again, though nine words in ten are shared. So
the word a personal possessive governs ("my wife", "her brother", "our landlord") counts as
an identifier as well; a note about someone the other never names is kept. Dropping a true
fact is silent and lasting, keeping a restatement costs one line in a ranking: when in
doubt the checks keep.
"""

from __future__ import annotations

import re
from functools import lru_cache

from episodic.scoring.stopwords import ENGLISH_STOPWORDS

_TOKEN = re.compile(r"[^\W_][\w./#:-]*[^\W_]|[^\W_]", re.UNICODE)
_SENTENCE_ENDS = frozenset(".!?…:;")
# Possessives that say whose fact a note states ("its" names a thing's part, not a person).
_PERSONAL_POSSESSIVES = frozenset({"my", "your", "his", "her", "our", "their"})


def identifiers(text: str) -> set[str]:
    """The identifiers of ``text``, casefolded: tokens with a digit, capitalised words
    that do not open a sentence, and the content word right after a personal possessive
    (whose fact it is)."""
    return set(_identifiers(text))


def new_identifiers(note: str, known: str) -> set[str]:
    """The identifiers of ``note`` that ``known`` does not hold (in any form): non-empty
    when ``note`` is about another case."""
    words = _words(known)
    return {i for i in _identifiers(note) if i not in words}


# Dedupe and the restatement check compare every new note with many others, and each
# pair asks for the same texts' identifiers and words again: they are read once per text.
_CACHED_TEXTS = 4096


@lru_cache(maxsize=_CACHED_TEXTS)
def _identifiers(text: str) -> frozenset[str]:
    found: set[str] = set()
    previous = ""
    for match in _TOKEN.finditer(text):
        token = match.group()
        folded = token.casefold()
        if previous in _PERSONAL_POSSESSIVES and folded not in ENGLISH_STOPWORDS:
            found.add(folded)
        previous = folded
        if any(c.isdigit() for c in token):
            found.add(folded)
            continue
        if token[0].isupper() and not _opens_sentence(text, match.start()):
            found.add(folded)
    return frozenset(found)


def _opens_sentence(text: str, at: int) -> bool:
    """Whether the token at ``at`` opens a sentence: nothing but spaces before it, or
    spaces after a sentence's end. Reads back from ``at`` only, so that a long text is
    not scanned again for every capitalised word in it."""
    i = at - 1
    while i >= 0 and text[i].isspace():
        i -= 1
    return i < 0 or text[i] in _SENTENCE_ENDS


@lru_cache(maxsize=_CACHED_TEXTS)
def _words(text: str) -> frozenset[str]:
    return frozenset(m.group().casefold() for m in _TOKEN.finditer(text))
