"""SqliteStore: the sparse leg, BM25 over the FTS5 mirror ``memories_fts`` (part of
``SearchStore``; the tuning both backends share is ``episodic.store.sparse``).

``search_sparse`` explains the budgeted query path, the default.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from episodic.model import Candidate, ScopeFilter
from episodic.scoring.fts import bm25_term_ceiling, fts_terms, fts_whole_word, plan_terms
from episodic.store.migrations import TEXT_PASSAGE_SHIFT
from episodic.store.passages import PASSAGE_DEPTH, PassageRow
from episodic.store.sparse import (
    BM25_CONTENT_WEIGHT,
    BM25_KEYS_WEIGHT,
    BM25_PAYLOAD_WEIGHT,
    DOC_COUNT_CACHE_TERMS,
    DOC_COUNT_TTL_S,
    SPARSE_MAX_SHARE,
    SPARSE_RARE_BUDGET,
    DocCounts,
)
from episodic.store.sql import live_where
from episodic.store.sqlite.connection import SqliteBase, chunks, placeholders

SparseMode = Literal["seed", "stopwords", "budgeted"]
# A search's scope: its WHERE fragment, that fragment's parameters, and the rowids that
# can be in the workspace (``SparseMixin._workspace_rows``).
_Scope = tuple[str, Sequence[Any], tuple[int, int]]
# Budgeted search's windows (``SPARSE_RARE_BUDGET`` is shared with PostgreSQL), tuned on
# benchmarks/bench_store.py at 100k memories, where bm25 plus the join to memories costs
# ~1-2 us per scored row.
# Common terms: at most this many matches in scope are scored, the newest first...
SPARSE_WINDOW = 1000
# ...found among at most this many matches in the whole table (4x more each round while
# fewer than `limit` were found). An own-scope search finds ~1 match in 20 in scope and
# pays a join for each match it looks at; this keeps that near 3 ms.
SPARSE_SCAN = 6000
# ...and to begin with at most this many per result asked for: a search for 50 looks at
# 1,500 matches first, enough for an own scope holding 1 match in 20 (~1 us a match).
SPARSE_SCAN_PER_RESULT = 30
# FTS5 rowids are 64-bit signed.
_MAX_ROWID = 2**63 - 1

# The scope check of a sparse search reads memories_sparse_scope (migration 2), which
# holds every column scope_where() and the status filter use, instead of the memories row;
# the id is read from memories only for the rows returned. "rowid + 0" keeps the join an
# equality lookup: on a plain column, SQLite carries the rowid bounds of the window over
# to m.seq and plans a range scan of the index for every match.
#
# The statements below are written for memories_fts; ``_Source`` renders them for the
# passages' index too (@FTS@: the table, @SEQ@: its memory's seq, @ROW@: the row's own
# number, @MSEQ@: the memory of a returned row ``w.seq``).
_SPARSE_SCOPED = (
    " FROM @FTS@ CROSS JOIN memories AS m INDEXED BY memories_sparse_scope ON m.seq = @SEQ@"
)

# Every in-scope match scored, as seed 000's query did. The rowid bounds span the seqs
# of the workspace's memories (``_workspace_rows``): FTS5 skips the other workspaces'
# matches in its doclists instead of handing each over to be looked up and refused by
# the scope check. bm25's statistics stay the whole table's (FTS5 counts each phrase's
# documents over the whole table), so the scores and the answer are the same.
_SPARSE_ALL_SQL = (
    "SELECT mm.id, w.seq, w.score FROM ("
    " SELECT @ROW@ AS seq, bm25(@FTS@, ?, ?, ?) AS score"
    + _SPARSE_SCOPED
    + " WHERE @FTS@ MATCH ? AND @FTS@.rowid BETWEEN ? AND ? AND {where}"
    " ORDER BY score, @ROW@ LIMIT ?"
    ") AS w CROSS JOIN memories AS mm ON mm.seq = @MSEQ@"
    " ORDER BY w.score, w.seq"
)

# The rare terms' matches scored with every kept term in one statement: the memories of
# ``rare`` (the subquery, the doclists of the rare terms alone) scored by bm25 over
# ``rare OR common``. A row's bm25 is a sum over the query's phrases in their order, and
# a phrase absent from the row adds exactly 0, so each memory gets the score the two
# statements it replaces gave at best: the rare terms alone for a memory without a common
# term, all of them for one with (``(rare) AND (common)``). bm25 then counts each
# phrase's documents once instead of twice. FTS5 walks the matches of ``rare OR common``
# in the workspace's rows, where the AND walked only the rare terms' (hence the bound
# ``SPARSE_ONE_PASS_ROWS``). "+rowid": the IN is a filter on the walk, not rowid lookups
# (each of which would start the MATCH, and bm25's document counts, again).
_SPARSE_RARE_SQL = (
    "SELECT mm.id, w.seq, w.score FROM ("
    " SELECT @ROW@ AS seq, bm25(@FTS@, ?, ?, ?) AS score"
    + _SPARSE_SCOPED
    + " WHERE @FTS@ MATCH ? AND @FTS@.rowid BETWEEN ? AND ?"
    " AND +@FTS@.rowid IN (SELECT rowid FROM @FTS@ WHERE @FTS@ MATCH ? AND rowid BETWEEN ? AND ?)"
    " AND {where}"
    " ORDER BY score, @ROW@ LIMIT ?"
    ") AS w CROSS JOIN memories AS mm ON mm.seq = @MSEQ@"
    " ORDER BY w.score, w.seq"
)
# The widest workspace (in rowids: its last seq less its first) whose rare and common
# terms are scored by ``_SPARSE_RARE_SQL``: there the walk over the common terms' matches
# is short (BEAM's and LoCoMo's workspaces hold 190 to 700 memories). Wider, FTS5's AND
# skipping through the common terms' doclists costs less than walking them.
SPARSE_ONE_PASS_ROWS = 2000

# The newest in-scope matches below a rowid. `bound` is the rowid of the scan-th newest
# match in the whole table (0 when there are fewer); FTS5 stays the outer loop, so it
# hands rows over newest first without a sort, and bm25 runs only for rows that pass the
# scope filter, up to the window. The one row of `bound` always comes back (with NULLs
# when nothing matched) so the caller learns how far the scan got; `scored` is how many
# rows the window took.
_SPARSE_WINDOW_SQL = (
    "WITH bound(lo) AS MATERIALIZED (SELECT coalesce((SELECT rowid FROM @FTS@"
    " WHERE @FTS@ MATCH ? AND rowid < ? ORDER BY rowid DESC LIMIT 1 OFFSET ?), 0))"
    " SELECT b.lo, mm.id, w.seq, w.score, w.scored FROM bound AS b LEFT JOIN ("
    "  SELECT seq, score, count(*) OVER () AS scored FROM ("
    "   SELECT @ROW@ AS seq, bm25(@FTS@, ?, ?, ?) AS score"
    + _SPARSE_SCOPED
    + "   WHERE @FTS@ MATCH ? AND @FTS@.rowid < ?"
    "    AND @FTS@.rowid >= max((SELECT lo FROM bound), ?)"
    "    AND {where}"
    "   ORDER BY @FTS@.rowid DESC LIMIT ?)"
    "  ORDER BY score, seq LIMIT ?) AS w LEFT JOIN memories AS mm ON mm.seq = @MSEQ@"
    " ORDER BY w.score, w.seq"
)


@dataclass(frozen=True, slots=True)
class _Source:
    """An FTS5 table the sparse leg ranks: the memories' own (a row per memory, its
    rowid the memory's seq) or their passages' (``passages_fts``, a row per passage of a
    long memory, its rowid ``seq << TEXT_PASSAGE_SHIFT | n``)."""

    fts: str
    seq: str
    row: str
    mseq: str
    shift: int = 0  # a row's memory is its rowid >> shift

    def rows_of(self, first: int, last: int) -> tuple[int, int]:
        """The rowids of the memories with seqs ``first`` to ``last``, as bounds."""
        return first << self.shift, min(((last + 1) << self.shift) - 1, _MAX_ROWID)

    def sql(self, template: str) -> str:
        return (
            template.replace("@FTS@", self.fts)
            .replace("@SEQ@", self.seq)
            .replace("@ROW@", self.row)
            .replace("@MSEQ@", self.mseq)
        )


_MEMORIES = _Source("memories_fts", "memories_fts.rowid + 0", "m.seq", "w.seq")
_PASSAGES = _Source(
    "passages_fts",
    f"(passages_fts.rowid >> {TEXT_PASSAGE_SHIFT})",
    "passages_fts.rowid",
    f"(w.seq >> {TEXT_PASSAGE_SHIFT})",
    TEXT_PASSAGE_SHIFT,
)
# The passages' index holds the text alone (start_char and stop_char are unindexed):
# weighed as a memory's content is.
_PASSAGE_WEIGHTS = (BM25_CONTENT_WEIGHT, 0.0, 0.0)

# The first and last seq of a workspace's memories, from the scope index's ends.
_WORKSPACE_SEQS_SQL = (
    "SELECT (SELECT min(seq) FROM memories WHERE workspace_id = ?),"
    " (SELECT max(seq) FROM memories WHERE workspace_id = ?)"
)

_SPARSE_COUNT_SQL = (
    "SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?)"
)


class _SparseHits:
    """The best score found so far for each memory, over the queries of one search."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._best: dict[str, tuple[float, int]] = {}

    def __len__(self) -> int:
        return len(self._best)

    def add(self, rows: Iterable[tuple[str, int, float]]) -> None:
        for memory_id, seq, score in rows:
            known = self._best.get(memory_id)
            if known is None or score > known[0]:
                self._best[memory_id] = (score, seq)

    def kth_score(self) -> float:
        """The ``limit``-th best score so far; 0 while there are fewer."""
        if len(self._best) < self.limit:
            return 0.0
        return heapq.nlargest(self.limit, (score for score, _ in self._best.values()))[-1]

    def ranked(self) -> list[tuple[str, float]]:
        """Best first, ties by storage order (as seed 000's ``ORDER BY score, m.seq``)."""
        return [(memory_id, score) for memory_id, score, _ in self.ranked_rows()]

    def ranked_rows(self) -> list[tuple[str, float, int]]:
        """``ranked`` with the row of each memory's best score."""
        best = sorted(self._best.items(), key=lambda item: (-item[1][0], item[1][1]))
        return [(memory_id, score, row) for memory_id, (score, row) in best[: self.limit]]


class SparseMixin(SqliteBase):
    # The sparse leg's query path: "budgeted" (the default, see search_sparse);
    # "stopwords", seed 000's query without stopwords; "seed", seed 000's query as it was.
    # The other two stay selectable so a benchmark can compare the three on one database,
    # and so an operator can fall back without a release. The limits are attributes so
    # that tests can shrink them.
    sparse_mode: SparseMode = "budgeted"
    sparse_rare_budget: int = SPARSE_RARE_BUDGET
    sparse_window: int = SPARSE_WINDOW
    sparse_scan: int = SPARSE_SCAN
    sparse_one_pass_rows: int = SPARSE_ONE_PASS_ROWS
    # The keyword index's BM25 weight of a memory's derived keys (its content weighs
    # BM25_CONTENT_WEIGHT): an attribute so a benchmark can sweep it on one database
    # (benchmarks/bench_reask.py --keys-weight). PostgreSQL's is BM25_KEYS_WEIGHT alone.
    keys_weight: float = BM25_KEYS_WEIGHT
    _sparse_counts: DocCounts | None = None

    def forget_term_counts(self) -> None:
        """Drop the keyword search's cached document counts (``DocCounts``): the next
        recall counts its terms afresh."""
        with self._counts_lock:
            self._sparse_counts = None

    def search_sparse(self, flt: ScopeFilter, text: str, limit: int) -> list[Candidate]:
        """BM25 over ``memories_fts``, best first.

        FTS5 computes bm25 for every row a MATCH finds, and one word found in most
        memories makes that most of the table while adding almost nothing to any score.
        Budgeted (the default) therefore:

        1. leaves English stopwords out of the query (``fts_terms``) and searches whole
           (stemmed) words, a prefix only for a word the index lacks (``_sparse_words``);
        2. looks up how many memories each term matches (cached for a few seconds) and
           sorts the terms with ``plan_terms``: rare ones, whose memories are all scored;
           common ones; and ones in so many memories that they are dropped (used only to
           fill a short answer);
        3. scores, with bm25 over the kept terms, every memory of a rare term (with the
           common terms it also holds), the newest memories holding all common terms and,
           only to fill a short answer, the newest holding any (``_sparse_window``). bm25
           is a sum over terms, so a memory's score from a query of some of the terms
           never exceeds its score from all of them; the best score per memory is kept.
           The common-term steps are skipped when no memory without a rare term can
           outscore the current ``limit``-th result (a term adds at most idf x (k1 + 1));
           the answer is then exactly BM25's top ``limit`` over the kept terms.

        Scope filters run in SQL on every row, and a window counts rows in scope. The scan
        that bounds a window counts every match, but widens until ``limit`` rows in scope
        were found or there are no more: another workspace's matches can narrow what is
        compared, never shorten this workspace's answer or enter it.
        """
        where, params = live_where(flt, alias="m")
        terms = fts_terms(text, drop_stopwords=self.sparse_mode != "seed")
        if not terms or limit <= 0:
            return []
        hits = _SparseHits(limit)
        with self._read(search=True):
            rows = self._workspace_rows(_MEMORIES, flt.workspace_id)
            if self.sparse_mode == "budgeted":
                self._sparse_budgeted(_MEMORIES, terms, (where, params, rows), hits)
            else:
                match = " OR ".join(terms)
                hits.add(self._sparse_all(_MEMORIES, match, (where, params, rows), limit))
        return [
            Candidate(memory_id=memory_id, score=score, rank=rank)
            for rank, (memory_id, score) in enumerate(hits.ranked(), start=1)
        ]

    def search_sparse_passages(self, flt: ScopeFilter, text: str, limit: int) -> list[PassageRow]:
        """BM25 over the passages of long memories (``passages_fts``), each memory once at
        its best passage, best first, at most ``limit``: ``(memory id, score, start,
        stop)``. The same query as ``search_sparse`` (the same words, and in budgeted mode
        the same plan of rare, common and dropped terms, from the memories' counts), over
        the passages' own BM25 statistics (FTS5 keeps them per table); in budgeted mode
        only the passages holding a rare term are read (a query of common words only
        reads none)."""
        where, params = live_where(flt, alias="m")
        terms = fts_terms(text, drop_stopwords=self.sparse_mode != "seed")
        if not terms or limit <= 0:
            return []
        # One long memory's passages may fill several places before they are one.
        hits = _SparseHits(limit * PASSAGE_DEPTH)
        with self._read(search=True):
            if self._execute("SELECT 1 FROM passages_fts LIMIT 1").fetchone() is None:
                return []
            scope = (where, params, self._workspace_rows(_PASSAGES, flt.workspace_id))
            if self.sparse_mode == "budgeted":
                self._sparse_budgeted(_PASSAGES, terms, scope, hits)
            else:
                hits.add(self._sparse_all(_PASSAGES, " OR ".join(terms), scope, limit))
            ranked = hits.ranked_rows()[:limit]
            spans: dict[int, tuple[int, int]] = {}
            for chunk in chunks([str(row) for _, _, row in ranked]):
                spans.update(
                    (int(row), (int(start), int(stop)))
                    for row, start, stop in self._execute(
                        "SELECT rowid, start_char, stop_char FROM passages_fts "
                        f"WHERE rowid IN ({placeholders(len(chunk))})",
                        [int(row) for row in chunk],
                    )
                )
        return [(memory_id, score, *spans[row]) for memory_id, score, row in ranked if row in spans]

    def _workspace_rows(self, source: _Source, workspace_id: str) -> tuple[int, int]:
        """The rowids of ``source`` that can belong to the workspace's memories, as
        bounds (an empty range when it holds none)."""
        first, last = self._execute(_WORKSPACE_SEQS_SQL, (workspace_id, workspace_id)).fetchone()
        return (1, 0) if first is None else source.rows_of(int(first), int(last))

    def _sparse_budgeted(
        self, source: _Source, terms: Sequence[str], scope: _Scope, hits: _SparseHits
    ) -> None:
        # The rows FTS5 holds (one per memory): exact unless memories were deleted, and
        # then too high, which only keeps more terms and raises the ceilings below. The
        # passages' search plans its terms by the memories' counts: what is rare among
        # memories is rare among their passages.
        total = int(self._execute("SELECT max(seq) FROM memories").fetchone()[0] or 0)
        # Past half the rows FTS5's idf is floored: counting further orders nothing.
        cap = total // 2 + 1
        terms = self._sparse_words(terms, cap)
        passages = source is _PASSAGES
        if len(terms) == 1:
            if not passages:
                self._sparse_window(source, terms[0], scope, hits)
            elif self._term_doc_counts(terms, cap)[0] <= self.sparse_rare_budget:
                hits.add(self._sparse_all(source, terms[0], scope, hits.limit))
            return
        counts = self._term_doc_counts(terms, cap)
        plan = plan_terms(
            counts, total_rows=total, budget=self.sparse_rare_budget, max_share=SPARSE_MAX_SHARE
        )
        rare = " OR ".join(terms[i] for i in plan.rare)
        common = [terms[i] for i in plan.common]
        first, last = scope[2]
        # Passages keep the two statements: several passages of one memory can fill the
        # rows either returns, and the two together may hand over more memories.
        if rare and common and not passages and last - first < self.sparse_one_pass_rows:
            hits.add(self._sparse_rare(source, rare, " OR ".join(common), scope, hits.limit))
        elif rare:
            hits.add(self._sparse_all(source, rare, scope, hits.limit))
            if common:
                # Memories of a rare term that also hold common ones: scored with all of
                # them (no term twice, so bm25 sums each term once).
                match = f"({rare}) AND ({' OR '.join(common)})"
                hits.add(self._sparse_all(source, match, scope, hits.limit))
        if passages:
            # A passage is worth reading where it holds a rare word; the newest windows
            # over common words alone would score thousands of passages for memories the
            # whole-text search already ranks (on BEAM they doubled a recall's CPU).
            return
        if common:
            ceilings = [bm25_term_ceiling(counts[i], total) for i in plan.common]
            all_complete = False
            if len(common) > 1 and hits.kth_score() < sum(ceilings):
                all_complete = self._sparse_window(source, " AND ".join(common), scope, hits)
            # Memories holding only some of the common terms and none of the rare ones rank
            # below those holding all of them (or a rare one) unless much shorter: they
            # only fill a short answer. On the benchmark's queries this cost nothing in
            # quality and a window of ~5 ms whenever the answer was already full.
            reachable = sum(ceilings) - (min(ceilings) if all_complete else 0.0)
            if len(hits) < hits.limit and hits.kth_score() < reachable:
                self._sparse_window(source, " OR ".join(common), scope, hits)
        if plan.dropped and len(hits) < hits.limit:
            dropped = [terms[i] for i in plan.dropped]
            self._sparse_window(source, " OR ".join(dropped), scope, hits)

    def _sparse_all(
        self, source: _Source, match: str, scope: _Scope, limit: int
    ) -> list[tuple[str, int, float]]:
        """The best ``limit`` in-scope matches of ``match``, every match scored."""
        where, params, (first, last) = scope
        weights = self._weights(source)
        rows = self._execute(
            source.sql(_SPARSE_ALL_SQL).format(where=where),
            (*weights, match, first, last, *params, limit),
        ).fetchall()
        return [(memory_id, seq, -score) for memory_id, seq, score in rows]

    def _sparse_rare(
        self, source: _Source, rare: str, common: str, scope: _Scope, limit: int
    ) -> list[tuple[str, int, float]]:
        """The best ``limit`` in-scope matches of ``rare``, each scored with ``rare`` and
        ``common`` (``_SPARSE_RARE_SQL``): the answer of ``_sparse_all`` over ``rare`` and
        over ``(rare) AND (common)``, each memory at its better score, in one statement."""
        where, params, (first, last) = scope
        walked = (f"{rare} OR {common}", first, last)
        rows = self._execute(
            source.sql(_SPARSE_RARE_SQL).format(where=where),
            (*self._weights(source), *walked, rare, first, last, *params, limit),
        ).fetchall()
        return [(memory_id, seq, -score) for memory_id, seq, score in rows]

    def _weights(self, source: _Source) -> tuple[float, float, float]:
        """bm25's column weights for ``source``: content, keys, payload."""
        if source is _PASSAGES:
            return _PASSAGE_WEIGHTS
        return (BM25_CONTENT_WEIGHT, self.keys_weight, BM25_PAYLOAD_WEIGHT)

    def _sparse_window(self, source: _Source, match: str, scope: _Scope, hits: _SparseHits) -> bool:
        """Score the newest in-scope matches of ``match`` (at most ``sparse_window`` of
        them, among the newest ``sparse_scan`` matches in the table, or 30 per result
        asked for if fewer, 4x more each round while fewer than ``hits.limit`` were
        found) into ``hits``. True when that was every in-scope match.

        Newest first because that is the order FTS5 reads a doclist in without sorting,
        and because among memories that share only common words, bm25 ranks by little
        more than their length, where an episodic memory has reason to prefer recent
        episodes.

        The scan counts the whole table's matches, but only the workspace's rowids are
        read for scoring (``_workspace_rows``; every in-scope match lies among them):
        FTS5 then skips the other workspaces' matches in the window instead of handing
        each over to the scope check. The rows scored, and so the answer, are the same."""
        where, params, (first, last) = scope
        window = max(self.sparse_window, hits.limit)
        below, scan, found = (
            _MAX_ROWID,
            min(self.sparse_scan, SPARSE_SCAN_PER_RESULT * hits.limit),
            0,
        )
        while True:
            rows = self._execute(
                source.sql(_SPARSE_WINDOW_SQL).format(where=where),
                (
                    match,
                    below,
                    scan - 1,
                    *self._weights(source),
                    match,
                    min(below, last + 1),
                    first,
                    *params,
                    window,
                    hits.limit,
                ),
            ).fetchall()
            lowest, scored = int(rows[0][0]), int(rows[0][4] or 0)
            found_now = [(r[1], int(r[2]), -float(r[3])) for r in rows if r[1] is not None]
            hits.add(found_now)
            found += len(found_now)
            if lowest == 0:
                return scored < window
            if found >= hits.limit:
                return False
            below, scan = lowest, scan * 4

    def _sparse_words(self, terms: Sequence[str], cap: int) -> list[str]:
        """Each term as a whole word where the index holds that word, else as the prefix
        ``fts_term`` made of it.

        The index stores Porter stems, so the whole word already matches its inflections
        ("deploys", "deploying", "deployment" all stem to "deploy"); what a prefix adds is
        every longer word that starts the same way, and FTS5 merges all their doclists
        before it returns a row: "term1"* is 1,111 words in the benchmark's vocabulary and
        over 20 ms. On LoCoMo whole words and prefixes recall the same (R@10 0.731 vs
        0.729, benchmarks/README.md). A word the index does not hold is most likely typed
        in part ("auth", "kube"), and only then is the prefix worth its cost."""
        wholes = [fts_whole_word(term) for term in terms]
        prefixed = [whole for term, whole in zip(terms, wholes, strict=True) if whole != term]
        found = iter(self._term_doc_counts(prefixed, cap))
        words: list[str] = []
        for term, whole in zip(terms, wholes, strict=True):
            words.append(term if whole != term and next(found) == 0 else whole)
        # Two prefixes of words the index lacks may now be the same word: keep one.
        return list(dict.fromkeys(words))

    def _term_doc_counts(self, terms: Sequence[str], cap: int) -> list[int]:
        """How many memories each FTS term matches, up to ``cap``, counted by FTS5.

        A MATCH on the term alone is exact where an ``fts5vocab`` row lookup is not: the
        index holds Porter stems with diacritics removed, so a query word would first
        have to go through FTS5's tokenizer, and a prefix term spans many rows. The cost
        is the same (both walk the term's doclist); the cap bounds it for whole words,
        and a prefix term is counted only when its whole word does not already reach the
        cap, which spares FTS5 gathering the prefix's doclist (~2 ms for a word in 60% of
        100k memories). The cache lets common words, which recur across queries, be
        counted once every few seconds. Counts cover all workspaces, like the statistics
        bm25 itself uses."""
        cache = self._sparse_counts
        if cache is None:
            cache = self._sparse_counts = DocCounts(DOC_COUNT_TTL_S, DOC_COUNT_CACHE_TERMS)
        now = time.monotonic()

        def count(term: str) -> int:
            # Recalls on several read connections share the cache.
            with self._counts_lock:
                known = cache.get(term, now)
            if known is not None:
                return known
            whole = fts_whole_word(term)
            if whole != term and count(whole) >= cap:
                found = cap  # a prefix matches all its whole word does, and more
            else:
                found = int(self._execute(_SPARSE_COUNT_SQL, (term, cap)).fetchone()[0])
            with self._counts_lock:
                cache.put(term, found, now)
            return found

        return [count(term) for term in terms]
