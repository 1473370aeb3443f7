"""English stopwords, dropped from sparse queries before they reach FTS5.

The list is NLTK's English stopword list (179 words, public domain), kept verbatim and in
its order so it can be compared with the source. Entries with an apostrophe ("don't") can
never equal a token, because ``fts_tokens`` splits at the apostrophe; the fragments it
leaves ("don", "t") are in the list themselves, and 1-character fragments are dropped
before this list is consulted anyway.

Why drop them: in a journal, words like "the", "in", "was" occur in a large share of
memories, so their BM25 weight is close to zero while FTS5 still has to score every row
they match; and in a small workspace where one of them happens to be rare, its high idf
would rank memories by a word the user did not mean.
"""

from __future__ import annotations

from collections.abc import Sequence

# NLTK's list, one word per whitespace-separated item, in its original order.
_NLTK_ENGLISH = """
i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself
yourselves he him his himself she she's her hers herself it it's its itself they them their
theirs themselves what which who whom this that that'll these those am is are was were be
been being have has had having do does did doing a an the and but if or because as until
while of at by for with about against between into through during before after above below
to from up down in out on off over under again further then once here there when where why
how all any both each few more most other some such no nor not only own same so than too
very s t can will just don don't should should've now d ll m o re ve y ain aren aren't
couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma
mightn mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't weren
weren't won won't wouldn wouldn't
"""

ENGLISH_STOPWORDS: frozenset[str] = frozenset(_NLTK_ENGLISH.split())


def without_stopwords(tokens: Sequence[str]) -> list[str]:
    """``tokens`` minus English stopwords, in order; all of ``tokens`` when every one is a
    stopword, since a query made only of them ("who was it") still says something."""
    kept = [token for token in tokens if token not in ENGLISH_STOPWORDS]
    return kept if kept else list(tokens)
