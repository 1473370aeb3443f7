"""The sparse (BM25) leg's tuning both backends share.

SQLite ranks with FTS5's bm25 and PostgreSQL computes the same formula in SQL
(``episodic.store.sqlite.sparse``, ``episodic.store.postgres.sparse``); both weigh the
same fields the same way and sort a query's terms with ``episodic.scoring.fts.plan_terms``
by document counts they cache for a few seconds (``DocCounts``).
"""

from __future__ import annotations

# A word in the summary says more than the same word somewhere in the JSON payload. The
# weight multiplies each occurrence before BM25's saturation (k1 = 1.2), so at 3 one
# occurrence of a query word nearly saturates and a memory's length decides less (at 1,
# BM25's best for "What does the smartwatch help Evan with?" was "Evan: Glad to help -
# hope you enjoy it!", for one shared word in a short turn). Chosen on LoCoMo's five
# held-out folds among 1, 2, 3 and 5 (four folds chose 3, one 2): held-out R@1 / R@10 /
# NDCG@10 of default 0.346 / 0.771 / 0.565 -> 0.358 / 0.776 / 0.575.
BM25_CONTENT_WEIGHT = 3.0
# Derived keys (key expansion: speaker, date, the episode's title and keyphrases, facts)
# count little beside what was said: they are the same words for every turn of an
# episode, a prior rather than evidence. On LoCoMo as conversations (content weight 1),
# default R@10 by this weight: 0.1 -> 0.767, 0.2 -> 0.757, 0.3 -> 0.747, 0.5 -> 0.728
# (no keys: 0.758); with content weight 2, keys at 0.1 and 0.2 measured 0.773 and 0.772.
BM25_KEYS_WEIGHT = 0.1
BM25_PAYLOAD_WEIGHT = 0.5

# Budgeted sparse search, tuned on benchmarks/bench_store.py at 100k memories, where bm25
# plus the join to memories costs ~1-2 us per scored row. Rare terms: every memory they
# match is scored, as long as they match this many in all.
SPARSE_RARE_BUDGET = 1000
# Terms in more than this share of memories (idf < ln 4 = 1.4, against 5-10 for the
# words that identify an episode) are dropped while a rarer term remains.
SPARSE_MAX_SHARE = 0.2
# Document counts grow as memories arrive; a few seconds old they still sort terms right.
DOC_COUNT_TTL_S = 5.0
DOC_COUNT_CACHE_TERMS = 4096


class DocCounts:
    """Term -> document count, each for ``ttl_s`` seconds; cleared whole when full (the
    entries that matter, common terms, come back on their next use)."""

    def __init__(self, ttl_s: float, max_terms: int) -> None:
        self._ttl_s = ttl_s
        self._max_terms = max_terms
        self._entries: dict[str, tuple[int, float]] = {}

    def get(self, term: str, now: float) -> int | None:
        entry = self._entries.get(term)
        if entry is None or entry[1] <= now:
            return None
        return entry[0]

    def put(self, term: str, count: int, now: float) -> None:
        if len(self._entries) >= self._max_terms:
            self._entries = {t: e for t, e in self._entries.items() if e[1] > now}
            if len(self._entries) >= self._max_terms:
                self._entries.clear()
        self._entries[term] = (count, now + self._ttl_s)
