"""What tells two cases apart when their words are nearly the same (seed 004 keeps one
entry per concrete situation): "Invoice 4471 failed to sync to the ledger" and "Invoice
4472 failed to sync to the ledger" are two cases, not one said twice.

An identifier is a token with a digit in it (numbers, ids, versions: ``4471``,
``INV-20931``, ``v2.31``), or a name: a capitalised word that does not open its sentence
(``Torstrasse``, ``Falcon``). A note that holds an identifier the other does not is a
different case, whatever share of its words the other holds or however close their
vectors are; the restatement and similarity checks keep it.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[^\W_][\w./#:-]*[^\W_]|[^\W_]", re.UNICODE)
_SENTENCE_END = re.compile(r"[.!?…:;]\s*$")


def identifiers(text: str) -> set[str]:
    """The identifiers of ``text``, casefolded: tokens with a digit, and capitalised
    words that do not open a sentence."""
    found: set[str] = set()
    for match in _TOKEN.finditer(text):
        token = match.group()
        if any(c.isdigit() for c in token):
            found.add(token.casefold())
            continue
        before = text[: match.start()]
        opens = not before.strip() or _SENTENCE_END.search(before) is not None
        if token[0].isupper() and not opens:
            found.add(token.casefold())
    return found


def new_identifiers(note: str, known: str) -> set[str]:
    """The identifiers of ``note`` that ``known`` does not hold (in any form): non-empty
    when ``note`` is about another case."""
    words = {m.group().casefold() for m in _TOKEN.finditer(known)}
    return {i for i in identifiers(note) if i not in words}
