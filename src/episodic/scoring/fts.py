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
leaves English stopwords out (``episodic.scoring.stopwords``), and ``plan_terms`` decides,
from how many documents each term matches, which terms are worth scoring everywhere,
which only where it is cheap, and which not at all.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from episodic.scoring.stopwords import without_stopwords

# Categories that continue a token: letters, numbers and the marks that modify them...
_TOKEN_CATEGORY_INITIALS = frozenset("LNM")
# ...and private-use characters, which FTS5's unicode61 tokenizer keeps inside a token: a
# query split at one would ask for a fragment the index does not hold.
_TOKEN_CATEGORIES = frozenset({"Co"})

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
        category = unicodedata.category(ch)
        if category[0] in _TOKEN_CATEGORY_INITIALS or category in _TOKEN_CATEGORIES:
            current.append(ch)
        else:
            flush()
    flush()
    return tokens


def fts_term(token: str) -> str:
    """One token as an FTS5 string: exact when short, a prefix match otherwise."""
    quoted = '"' + token.replace('"', '""') + '"'
    return quoted + "*" if len(token) >= MIN_PREFIX_CHARS else quoted


def fts_whole_word(term: str) -> str:
    """A term from ``fts_term`` without its prefix star: ``"deploy"*`` -> ``"deploy"``."""
    return term.removesuffix("*")


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


# FTS5's bm25 constants (fts5_aux.c): k1 = 1.2, b = 0.75, and idf floored at 1e-6.
BM25_K1 = 1.2
BM25_MIN_IDF = 1e-6


def bm25_idf(doc_count: int, total_rows: int) -> float:
    """The idf FTS5's bm25 gives a term found in ``doc_count`` of ``total_rows`` rows.
    A count above the rows (both estimated, or taken a few seconds apart, as PostgreSQL's
    cached statistics are) is a term found everywhere: the floor."""
    doc_count = min(doc_count, total_rows)
    idf = math.log((total_rows - doc_count + 0.5) / (doc_count + 0.5))
    return max(idf, BM25_MIN_IDF)


def bm25_term_ceiling(doc_count: int, total_rows: int) -> float:
    """The most one term can add to a document's bm25 score: idf x (k1 + 1), which its
    term-frequency factor approaches but never reaches (with column weights <= 1)."""
    return bm25_idf(doc_count, total_rows) * (BM25_K1 + 1)


@dataclass(frozen=True, slots=True)
class TermPlan:
    """How a query's terms are searched (indexes into the query's terms, ascending).

    ``rare``: every document matching them is scored. ``common``: scored over the
    newest matches only, and where they co-occur with a rare term. ``dropped``: too
    common to be worth scoring; used only to fill a result that would be short."""

    rare: tuple[int, ...]
    common: tuple[int, ...] = ()
    dropped: tuple[int, ...] = ()


def plan_terms(
    doc_counts: Sequence[int], *, total_rows: int, budget: int, max_share: float
) -> TermPlan:
    """Sort a query's terms by what they cost and what they add, given how many of the
    ``total_rows`` documents each matches.

    FTS5 computes bm25 for every row an OR query matches, so a term costs about its
    document count, while its weight, idf = ln((N - n + 0.5) / (n + 0.5)), falls as the
    count n grows (FTS5 floors it at 1e-6 once n > N/2). So:

    - when all terms together match at most ``budget`` documents, all are rare: nothing
      to save, ranking exactly as asked;
    - otherwise the rarest terms, while their counts add up to at most ``budget``, are
      rare; terms matching more than ``max_share`` of the documents (idf below about
      ln(1 / max_share - 1)) are dropped; the rest are common;
    - the rarest term that matches anything is never dropped, so a query made only of
      common words still finds documents; terms matching nothing cost nothing and stay
      rare (a count may be a few seconds old).

    Ties go to the term the user wrote first.

    >>> plan_terms([40_000, 12, 900, 0, 9_000], total_rows=100_000, budget=2000,
    ...            max_share=0.2)
    TermPlan(rare=(1, 2, 3), common=(4,), dropped=(0,))
    >>> plan_terms([60_000, 90_000], total_rows=100_000, budget=2000, max_share=0.2)
    TermPlan(rare=(), common=(0,), dropped=(1,))
    """
    if sum(doc_counts) <= budget:
        return TermPlan(rare=tuple(range(len(doc_counts))))
    order = sorted(range(len(doc_counts)), key=lambda i: (doc_counts[i], i))
    anchor = next((i for i in order if doc_counts[i] > 0), None)
    rare: list[int] = []
    common: list[int] = []
    dropped: list[int] = []
    spent = 0
    for index in order:
        count = doc_counts[index]
        if count > max_share * total_rows and index != anchor:
            dropped.append(index)
        elif not common and spent + count <= budget:
            rare.append(index)
            spent += count
        else:
            common.append(index)
    return TermPlan(tuple(sorted(rare)), tuple(sorted(common)), tuple(sorted(dropped)))
