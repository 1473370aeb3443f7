"""Turning raw user text into a safe FTS5 MATCH expression (seed 000).

The rule: lowercase; split into runs of letters and digits (any script); drop 1-character
tokens; keep 2-character tokens as exact terms (``"ok"``) and 3+ character tokens as
prefix terms (``"dep"*``); OR them together. Every term is a double-quoted FTS5 string with
inner quotes doubled, so nothing a user types (``"``, ``*``, ``NEAR(``, ``AND``, ``-``,
``col:``) is ever read as FTS5 syntax.

A run may also hold combining marks: FTS5's tokenizer re-tokenizes each quoted term the
same way it tokenized the stored text, so keeping ``नमस्ते`` whole lets it match, where
splitting at its vowel signs would leave fragments too short to keep.

The store may ask for less than the whole rule: ``fts_terms(..., drop_stopwords=True)``
leaves English stopwords out (``episodic.scoring.stopwords``), and ``prune_terms`` picks the
terms worth their cost once it knows how many documents each one matches.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from episodic.scoring.stopwords import without_stopwords

# Categories that continue a token: letters, numbers and the marks that modify them.
_TOKEN_CATEGORY_INITIALS = frozenset("LNM")

# Terms of 3+ characters match as prefixes; shorter ones would match half the index.
MIN_PREFIX_CHARS = 3
MIN_TOKEN_CHARS = 2

# A query is a hint, not a document: past this many distinct terms the OR only adds work.
MAX_FTS_TERMS = 256


def fts_tokens(text: str) -> list[str]:
    """The lowercase letter/digit runs of ``text`` that survive the length rule, each once,
    in first-seen order."""
    tokens: list[str] = []
    seen: set[str] = set()
    current: list[str] = []

    def flush() -> None:
        if len(current) >= MIN_TOKEN_CHARS:
            token = "".join(current)
            if token not in seen:
                seen.add(token)
                tokens.append(token)
        current.clear()

    for ch in text.lower():
        if unicodedata.category(ch)[0] in _TOKEN_CATEGORY_INITIALS:
            current.append(ch)
        else:
            flush()
    flush()
    return tokens


def fts_term(token: str) -> str:
    """One token as an FTS5 string: exact when short, a prefix match otherwise."""
    quoted = '"' + token.replace('"', '""') + '"'
    return quoted + "*" if len(token) >= MIN_PREFIX_CHARS else quoted


def fts_terms(text: str, *, drop_stopwords: bool = False) -> list[str]:
    """The escaped FTS5 terms of ``text`` in first-seen order, one per token (see
    ``fts_term``); with ``drop_stopwords``, English stopwords are left out unless nothing
    else is left."""
    tokens = fts_tokens(text)
    if drop_stopwords:
        tokens = without_stopwords(tokens)
    return [fts_term(token) for token in tokens[:MAX_FTS_TERMS]]


def fts_or(terms: Sequence[str]) -> str | None:
    """Terms from ``fts_terms`` as one MATCH expression (any of them), or None for none."""
    return " OR ".join(terms) if terms else None


def fts_query(text: str, *, drop_stopwords: bool = False) -> str | None:
    """The FTS5 MATCH expression for ``text``, or None when no token survives (the
    caller then has nothing to search for and should return no candidates).

    >>> fts_query('OOM in "checkout"-svc: a')
    '"oom"* OR "in" OR "checkout"* OR "svc"*'
    >>> fts_query('OOM in "checkout"-svc: a', drop_stopwords=True)
    '"oom"* OR "checkout"* OR "svc"*'
    """
    return fts_or(fts_terms(text, drop_stopwords=drop_stopwords))


def prune_terms(doc_counts: Sequence[int], budget: int) -> list[int]:
    """Which terms of a query to send to FTS5, given how many documents each matches:
    their indexes into ``doc_counts``, ascending.

    FTS5 computes bm25 for every row an OR query matches, so a query costs about the sum
    of its terms' document counts, while a term's weight, idf = ln((N - n + 0.5) /
    (n + 0.5)), falls as its count n grows (FTS5 floors it at 1e-6 once n > N/2). The
    rarest terms therefore carry most of the ranking for little of the cost. So: when
    all terms together match no more than ``budget`` documents, keep them all (nothing
    to save, ranking exactly as asked); otherwise keep terms rarest first while the
    running count stays within ``budget``. Terms that match nothing cost nothing and
    are always kept (a count may be a few seconds old); the rarest term that matches
    something is always kept even over the budget, so a query of only common words
    still finds documents. Ties go to the term the user wrote first.

    >>> prune_terms([40_000, 12, 900, 0], budget=2000)
    [1, 2, 3]
    >>> prune_terms([40_000, 9_000], budget=2000)
    [1]
    """
    if sum(doc_counts) <= budget:
        return list(range(len(doc_counts)))
    kept: list[int] = []
    spent = 0
    anchored = False
    for index in sorted(range(len(doc_counts)), key=lambda i: (doc_counts[i], i)):
        count = doc_counts[index]
        if anchored and spent + count > budget:
            break
        kept.append(index)
        spent += count
        anchored = anchored or count > 0
    return sorted(kept)
