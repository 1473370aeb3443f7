"""Turning raw user text into a safe FTS5 MATCH expression (seed 000).

The rule: lowercase; split into runs of letters and digits (any script); drop 1-character
tokens; keep 2-character tokens as exact terms (``"ok"``) and 3+ character tokens as
prefix terms (``"dep"*``); OR them together. Every term is a double-quoted FTS5 string with
inner quotes doubled, so nothing a user types (``"``, ``*``, ``NEAR(``, ``AND``, ``-``,
``col:``) is ever read as FTS5 syntax.

A run may also hold combining marks: FTS5's tokenizer re-tokenizes each quoted term the
same way it tokenized the stored text, so keeping ``नमस्ते`` whole lets it match, where
splitting at its vowel signs would leave fragments too short to keep.
"""

from __future__ import annotations

import unicodedata

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


def fts_query(text: str) -> str | None:
    """The FTS5 MATCH expression for ``text``, or None when no token survives (the
    caller then has nothing to search for and should return no candidates).

    >>> fts_query('OOM in "checkout"-svc: a')
    '"oom"* OR "in" OR "checkout"* OR "svc"*'
    """
    terms = [fts_term(token) for token in fts_tokens(text)[:MAX_FTS_TERMS]]
    return " OR ".join(terms) if terms else None
