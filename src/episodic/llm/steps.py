"""LLM-backed steps. Each has a deterministic offline fallback that says it is one.

``key_terms`` (seed 001, "Query construction"): an LLM extracts 5-8 key search terms from a
task description or question; without an LLM, or when it fails, the first 500 characters
of the task are the query.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

from episodic.errors import LLMError
from episodic.llm.base import LLM
from episodic.llm.prompts import (
    DEFAULT_PROMPTS,
    KEY_TERMS_SCHEMA,
    Prompts,
    data_block,
    fill,
)

log = logging.getLogger("episodic.llm")

# Seed 001: "Falls back to the first 500 characters of the task on error."
RAW_QUERY_MAX_CHARS = 500
# A pasted log or transcript as the "task" should not cost a long prompt; the terms that
# matter are nearly always stated early.
KEY_TERMS_INPUT_MAX_CHARS = 8_000
# Eight terms of at most 60 characters, as JSON, fit well inside this.
KEY_TERMS_MAX_TOKENS = 256

QuerySource = Literal["llm", "raw"]


@dataclass(frozen=True, slots=True)
class QueryTerms:
    """The text to search with and where it came from.

    ``source`` is ``"llm"`` when ``text`` is the extracted ``terms`` joined by spaces, and
    ``"raw"`` when it is the task itself, cut to ``RAW_QUERY_MAX_CHARS`` (``terms`` is then
    empty: nothing was extracted).
    """

    text: str
    source: QuerySource
    terms: tuple[str, ...] = ()


def raw_query(text: str) -> QueryTerms:
    return QueryTerms(text=text.strip()[:RAW_QUERY_MAX_CHARS], source="raw")


def key_terms(text: str, llm: LLM | None, *, prompts: Prompts = DEFAULT_PROMPTS) -> QueryTerms:
    """Key search terms for ``text``, or ``text`` itself when no LLM can provide them.

    Never raises for LLM problems: an ``LLMError`` is logged as a warning and the raw
    fallback returned.
    """
    if llm is None or not text.strip():
        return raw_query(text)
    user = fill(
        prompts.key_terms_user,
        query=data_block("query", text.strip()[:KEY_TERMS_INPUT_MAX_CHARS]),
    )
    try:
        reply = llm.complete_json(
            prompts.key_terms_system, user, KEY_TERMS_SCHEMA, max_tokens=KEY_TERMS_MAX_TOKENS
        )
    except LLMError as exc:
        log.warning("key-term extraction failed, searching with the raw text instead: %s", exc)
        return raw_query(text)
    terms = _clean(reply["terms"])
    if not terms:
        log.warning("key-term extraction returned no usable term; searching with the raw text")
        return raw_query(text)
    return QueryTerms(text=" ".join(terms), source="llm", terms=terms)


def _clean(terms: list[str]) -> tuple[str, ...]:
    """Whitespace collapsed, blanks and case-insensitive repeats dropped, order kept."""
    seen: set[str] = set()
    out: list[str] = []
    for term in terms:
        cleaned = " ".join(term.split())
        key = cleaned.casefold()
        if cleaned and key not in seen:
            seen.add(key)
            out.append(cleaned)
    return tuple(out)
