"""Pseudo-relevance feedback for the sparse leg (RM3-style expansion terms).

The best few BM25 matches of a query usually share words the query did not use (the
answer's words: a place, a name, an object). Those words, weighted by how strongly the
documents holding them matched, make a second query whose matches add to the first's.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from episodic.scoring.fts import fts_tokens
from episodic.scoring.stopwords import without_stopwords

MIN_EXPANSION_CHARS = 3
_WORD = re.compile(r"[^\W_]+")


def expansion_terms(
    query: str, documents: Sequence[tuple[str, float]], n_terms: int
) -> list[tuple[str, float]]:
    """The ``n_terms`` words best supported by ``documents`` ((text, score) of the top
    matches), not in the query, each with its weight: sum over documents of
    score share x the word's share of the document's words."""
    if n_terms <= 0 or not documents:
        return []
    total = sum(max(score, 0.0) for _, score in documents) or 1.0
    asked = set(fts_tokens(query))
    weights: dict[str, float] = {}
    for text, score in documents:
        words = [
            w
            for w in without_stopwords(_all_tokens(text))
            if len(w) >= MIN_EXPANSION_CHARS and not w.isdigit()
        ]
        if not words:
            continue
        counts = Counter(words)
        for word, count in counts.items():
            if word not in asked:
                share = (max(score, 0.0) / total) * count / len(words)
                weights[word] = weights.get(word, 0.0) + share
    return sorted(weights.items(), key=lambda pair: (-pair[1], pair[0]))[:n_terms]


def _all_tokens(text: str) -> list[str]:
    """Every letter/digit run of ``text``, repeats kept (``fts_tokens`` keeps each once)."""
    return _WORD.findall(text.lower())
