"""Recall: run the policy's legs, fuse, re-rank, diversify, fetch, mark referenced.

The legs are store calls (the store enforces workspace isolation); fusion, re-rank factors
and diversity are pure functions from ``episodic.scoring``. With ``explain`` a ``Trace``
records every stage.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from episodic import metrics, tracing
from episodic.config import MAX_CONTENT_CHARS
from episodic.embed.base import Vector
from episodic.model import Candidate, Hit, Memory, Query, ScopeFilter
from episodic.recall.bounds import by_time, split_head, within
from episodic.recall.learned_rank import STAGE as LEARNED_STAGE
from episodic.recall.learned_rank import learned_head, learns
from episodic.recall.leg_keep import keep_heads, keeps
from episodic.recall.leg_keep import stage_of as keep_stage_of
from episodic.recall.legs import LegQuery, Legs, QueryVectors, run_legs
from episodic.recall.length import settle, settles, stage_of
from episodic.recall.policies import Diversity, Factor, Fusion, Leg, RecallPolicy
from episodic.recall.prices import blend_for, context_prices, read_lengths, ungated
from episodic.recall.rerank import Rerank
from episodic.recall.result import RecallResult as RecallResult  # its home; named here too
from episodic.recall.rows import rank_rows, read_head
from episodic.recall.rule_keep import STAGE as RULE_STAGE
from episodic.recall.rule_keep import keep_rule, keeps_rule, rule_to_keep
from episodic.recall.sources import one_per_source
from episodic.recall.supersede import Hits, newest_similar_first, order_within_hits
from episodic.recall.timeparse import parse_time_expressions, strip_time_expressions
from episodic.recall.trace import (
    DROP_MMR,
    DROP_RANK,
    DROP_SCOPE,
    ORDER_NEWEST_FIRST,
    ORDER_WITHIN_HITS,
    Trace,
)
from episodic.recall.validity import keep_valid, trace_superseded
from episodic.recall.walk import walk_similar
from episodic.scoring.blend import blend, confident_weight
from episodic.scoring.context import lift_by_conversation, spread_to_neighbours
from episodic.scoring.fusion import rrf
from episodic.scoring.mmr import TokenSets, mmr
from episodic.scoring.passages import (
    PASSAGE_CHARS,
    PassageWords,
    passage_spans,
    span_for_words,
    words,
)
from episodic.scoring.prior import importance_prior, length_prior_floor
from episodic.scoring.scope import possible_levels, scope_multiplier
from episodic.scoring.temporal import TimeWindow
from episodic.scoring.topk import MAX_K, MIN_K, clamp_k, cosine_times_importance
from episodic.store.search import RankRow, SearchStore
from episodic.store.upkeep import ReviewRequest

MODE_VECTOR = "vector"
MODE_SPARSE_ONLY = "sparse-only"
TIME_LEG = "time"
# The token sets MMR compares memories by, kept across recalls (seed 001's diversity).
TOKEN_SETS = TokenSets()
# Long memories' passages and their words, to show the one a query's words are in.
PASSAGE_WORDS = PassageWords()
# Windows longer than this ("before June", "in 2022") say too little to list candidates by;
# they still re-rank through the time boost.
MAX_TIME_LEG_SPAN = timedelta(days=62)


def run_recall(
    store: SearchStore,
    vectors: QueryVectors | None,
    query: Query,
    policy: RecallPolicy,
    *,
    now: datetime,
    mark: bool = True,
    explain: bool = False,
    lexical_query: str | None = None,
    review: bool = True,
    review_conversation: str | None = None,
) -> RecallResult:
    """``_run_recall`` (below), timed for the metrics where it runs (a recall process,
    or the server's own)."""
    started = time.perf_counter()
    with tracing.span("recall", {"episodic.policy": policy.name}) as found:
        result = _run_recall(
            store,
            vectors,
            query,
            policy,
            now=now,
            mark=mark,
            explain=explain,
            lexical_query=lexical_query,
            review=review,
            review_conversation=review_conversation,
        )
        if found is not None:
            found.set_attribute("episodic.mode", result.mode)
    metrics.recall_done(result.policy, result.mode, time.perf_counter() - started)
    return result


def _run_recall(
    store: SearchStore,
    vectors: QueryVectors | None,
    query: Query,
    policy: RecallPolicy,
    *,
    now: datetime,
    mark: bool = True,
    explain: bool = False,
    lexical_query: str | None = None,
    review: bool = True,
    review_conversation: str | None = None,
) -> RecallResult:
    """``lexical_query`` replaces the text the BM25 leg searches (key terms an LLM drew
    from the query, seed 001); the dense leg keeps the natural-language question.
    ``mark`` counts the hits as referenced and, with ``review``, records the recall as a
    pending review (seed 003; one insert); ``mark=False`` does neither. The review is
    rated later by the messages that follow in ``review_conversation`` (default: the
    conversation the query is narrowed to, if any)."""
    k = clamp_k(query.k if query.k is not None else policy.default_k)
    pool = policy.pool_size(k)
    flt = query.scope_filter()
    warnings: list[str] = []
    if query.k is not None and query.k != k:
        # Seed 000: an out-of-range k is a mistake answered with the default, and said so.
        warnings.append(f"k={query.k} is outside {MIN_K}..{MAX_K}: recalled {k} instead")
    text = query.text.strip()
    lexical = (lexical_query or "").strip() or text
    trace = Trace(policy.name, query.text, lexical) if explain else None
    if not text:
        mode = MODE_VECTOR if vectors else MODE_SPARSE_ONLY
        return RecallResult(
            [], mode, policy.name, warnings=["empty query: nothing to recall"], trace=trace
        )

    windows: list[TimeWindow] = []
    stripped = text
    if policy.time_aware:
        windows = _time_windows(store, flt, text, now)
        stripped = strip_time_expressions(text, windows) or text
        lexical = stripped if lexical == text else lexical
        if trace is not None:
            trace.lexical_query = lexical
            trace.time_windows = [
                f"{w.text!r}: {w.start.isoformat()} .. {w.end.isoformat()}" for w in windows
            ]

    leg_query = LegQuery(flt, query.workspace_id, stripped if windows else text, lexical, pool, k)
    with tracing.span("recall.legs"):
        found_legs = run_legs(store, vectors, leg_query, policy, trace, warnings)
    ranking_started = time.perf_counter()
    ranking = tracing.begin("recall.ranking")  # fusion, re-ranking, diversity, to the hits
    # The ranking's reads (rows, the turns around a hit, conversations, vectors) share one
    # snapshot and connection: one transaction instead of one per read. Taken after the
    # legs, never across them: a leg on a helper thread needs a connection of its own.
    with store.reading():
        hits, legs, mode = _rank(store, query, policy, found_legs, windows, lexical, now, trace)
    if mark and hits:
        store.mark_referenced(query.workspace_id, [h.id for h in hits], now)
        if review:
            store.add_review(review_of(query, hits, now, review_conversation))
    metrics.recall_stage("ranking", time.perf_counter() - ranking_started)
    tracing.end(ranking)
    return RecallResult(hits, mode, policy.name, legs, warnings, trace)


def _rank(
    store: SearchStore,
    query: Query,
    policy: RecallPolicy,
    found_legs: Legs,
    windows: list[TimeWindow],
    lexical: str,
    now: datetime,
    trace: Trace | None,
) -> tuple[list[Hit], dict[str, list[Candidate]], str]:
    """The legs' candidates fused, re-ranked, diversified and fetched: the hits, the
    legs as the result shows them, and the recall's mode."""
    k = clamp_k(query.k if query.k is not None else policy.default_k)
    pool = policy.pool_size(k)
    flt = query.scope_filter()
    legs, qvec = found_legs.found, found_legs.qvec
    # A BM25 leg that did not fill its pool holds every match in scope.
    every_match = len(legs.get(Leg.SPARSE.value, [])) < policy.sparse_pool_size(k)
    mode = MODE_SPARSE_ONLY if qvec is None else MODE_VECTOR
    bounded = [w for w in windows if w.end - w.start <= MAX_TIME_LEG_SPAN]
    if bounded:
        # "What happened yesterday" has few useful words: the memories of that time are
        # candidates in their own right, ranked newest first.
        found = [
            c for w in bounded for c in store.search_recent(flt, pool, start=w.start, end=w.end)
        ]
        legs[TIME_LEG] = _reranked(list({c.memory_id: c for c in found}.values()))
    # Rows are fetched only for candidates that can still matter: a full row costs tens of
    # microseconds and deep pools hold hundreds of candidates.
    memories: dict[str, Memory] = {}

    def fetch(ids: Sequence[str]) -> None:
        missing = [i for i in ids if i not in memories]
        if missing:
            memories.update((m.id, m) for m in store.get_memories(query.workspace_id, missing))

    if query.as_of is not None:
        fetch([c.memory_id for cands in legs.values() for c in cands])
        legs = keep_valid(legs, memories, query.as_of, trace)
    if trace is not None:
        for name, cands in legs.items():
            trace.add_stage(f"leg:{name}", [(c.memory_id, c.score) for c in cands])
        _trace_scope_drops(store, trace, flt, qvec, lexical, legs, pool)
        if not flt.superseded:
            trace_superseded(store, trace, flt, qvec, lexical, legs, pool)

    cosines = {c.memory_id: c.score for c in legs.get(Leg.DENSE.value, [])}
    dense_rank = {c.memory_id: c.rank for c in legs.get(Leg.DENSE.value, [])}
    if policy.dense_by_importance and Leg.DENSE.value in legs:
        fetch([c.memory_id for c in legs[Leg.DENSE.value]])
        legs[Leg.DENSE.value] = _by_importance(legs[Leg.DENSE.value], memories)
        if trace is not None:
            trace.add_stage(
                "leg:dense x importance", [(c.memory_id, c.score) for c in legs[Leg.DENSE.value]]
            )
    lengths: dict[str, int] = {}
    fused = _fuse(
        legs, blend_for(store, flt.workspace_id, policy, legs, memories, lengths), every_match
    )
    if policy.dense_by_importance and policy.fusion is Fusion.SCORE and Leg.DENSE.value in legs:
        # Seed 000's Recall: ordered by cosine x importance, but each hit's score is its
        # cosine, a similarity a caller can compare across queries.
        fused = [(i, cosines[i]) for i, _ in fused]
    if trace is not None:
        trace.add_stage(f"fusion:{policy.fusion.value}", fused)
    # What the context steps read of a long source: its score after the length price.
    if policy.neighbours > 0 and fused:
        price = context_prices(
            store, flt.workspace_id, policy.neighbour_length_prior, fused, memories, lengths
        )
        price = ungated(price, policy, cosines, lengths)
        seeds = [i for i, _ in fused[: policy.neighbour_seeds]]
        adjacency = store.neighbours(flt, seeds, policy.neighbours)
        fused = spread_to_neighbours(
            fused, adjacency, policy.neighbour_weight, policy.neighbour_backward, price
        )
        if trace is not None:
            trace.add_stage("context:neighbours", fused)
    if policy.conversation_weight > 0 and fused:
        price = context_prices(
            store, flt.workspace_id, policy.conversation_length_prior, fused, memories, lengths
        )
        price = ungated(price, policy, cosines, lengths)
        conversations = store.conversations_of(query.workspace_id, [i for i, _ in fused])
        fused = lift_by_conversation(
            fused,
            conversations,
            policy.conversation_weight,
            policy.conversation_depth,
            policy.conversation_top,
            price,
        )
        if trace is not None:
            trace.add_stage("context:conversation", fused)
    # Diversity looks at every candidate. Re-rank factors and the time boost, bounded
    # within [lo, hi], can lift a candidate to at most hi x its fused score: one that
    # stays below the least final score of the 2k best fused ones cannot reach the first
    # 2k places, and its row is not read (a row costs tens of microseconds, and deep pools
    # hold hundreds). The first 2k places are then exact; when keeping one memory per
    # source reaches past them, everything is re-ranked.
    lo, hi = _factor_bounds(policy, query)
    if windows:
        # The time boost lies between the policy's floor and 1: one more bounded factor.
        lo, hi = lo * min(policy.time_floor, 1.0), hi * max(policy.time_floor, 1.0)
    reorders = (
        bool(policy.factors)
        or policy.length_prior > 0
        or bool(windows)
        or policy.diversity is Diversity.MMR
    )
    whole = policy.diversity is Diversity.MMR or lo <= 0 or hi == math.inf
    depth = 2 * k
    rerank = Rerank(policy, query, now)
    # Every candidate's final score from its small row, when the ranking needs them all;
    # the leaders' whole rows are read on the way.
    rows = rank_rows(store, query.workspace_id, policy, rerank, fused, memories, depth)
    whole = whole or rows is not None
    # The head's small rows: every candidate's with ``rows``, else those below the leaders.
    small: dict[str, RankRow] = {} if rows is None else rows

    def ts(i: str) -> datetime:
        row = small.get(i)
        return row.ts if row is not None else memories[i].ts

    def length(i: str) -> int:
        row = small.get(i)
        return row.chars or 0 if row is not None else len(memories[i].content)

    def chars(i: str) -> int | None:
        """A memory's length, None when its row was not read (or its length not kept)."""
        row = small.get(i)
        if row is not None:
            return row.chars
        return len(memories[i].content) if i in memories else None

    def texts(ids: Sequence[str]) -> dict[str, str]:
        """The texts of ``ids``: from the rows already read, the rest in one narrow read
        (the text alone, no whole row)."""
        found = {i: memories[i].content for i in ids if i in memories}
        missing = [i for i in ids if i not in found]
        if missing:
            found.update(store.texts_of(query.workspace_id, missing))
        return found

    def head_lengths(ids: Sequence[str]) -> dict[str, int]:
        """The lengths of ``ids``: from the rows already read, the rest from small rows."""
        read_lengths(
            store, flt.workspace_id, [i for i in ids if chars(i) is None], memories, lengths
        )
        return {i: n for i in ids if (n := chars(i) or lengths.get(i)) is not None}

    def final(pairs: Sequence[tuple[str, float]]) -> list[float] | None:
        """The scores ``pairs`` end with; None when a row is missing."""
        fetch([i for i, _ in pairs])
        if any(i not in memories for i, _ in pairs):
            return None
        scored, _ = rerank(list(pairs), memories)
        return [s for _, s in by_time(scored, ts, windows, policy.time_floor)]

    # Ids with a newer near-duplicate ranked with them, and that newer id: marked earlier.
    earlier: dict[str, str] = {}
    # The trace's stages as each step left the ranking (a later step reorders the list).
    timed: list[tuple[str, float]] = []
    unordered: list[tuple[str, float]] = []
    for everything in (whole, True):
        head, tail = (
            (fused, []) if everything or not reorders else split_head(fused, depth, hi, final)
        )
        if rows is not None:
            head = [(i, s) for i, s in head if i in rows]
        elif reorders:
            ids = [i for i, _ in head]
            read_head(store, flt.workspace_id, policy, rerank, ids, memories, small)
            head = [(i, s) for i, s in head if i in memories or i in small]
        ranked, detail = rerank(head, memories, detail=trace is not None)
        # Below the head, lo x the fused score bounds what re-ranking could give.
        bounded_tail = [(i, s * lo) for i, s in tail]
        reranked = ranked + bounded_tail
        if windows:
            ranked = by_time(ranked, ts, windows, policy.time_floor)
            if trace is not None:
                timed = ranked + bounded_tail
        if settles(policy):
            # The head was cut with the prior in its scores (a lower cut): it holds the
            # first places of the rankings with and without it.
            ranked = settle(ranked, length, legs.get(Leg.DENSE.value, []), policy, trace)
        ranked += bounded_tail
        if keeps(policy):
            # After fusion, context, factors, time and the length step, so none of them
            # can undo it; before one memory per source, which may still drop a kept
            # candidate as a duplicate of its source, and the same-subject order, which
            # moves a newer record just above an older one.
            ranked = keep_heads(ranked, legs, policy, chars, trace)
        if keeps_rule(policy):
            # After the legs' keep, so the rule holds its place whatever that moved.
            rule = rule_to_keep(legs.get(Leg.DENSE.value, []), policy, chars, texts)
            if rule is not None:
                ranked = keep_rule(ranked, rule, policy, trace)
        if learns(policy):
            # After every keep, reading what they left; before the same-subject order.
            ranked = learned_head(ranked, legs, policy, query.text, head_lengths, trace)
        unordered = ranked
        if policy.newest_similar_first and ranked:
            earlier.clear()
            same = (
                policy.subject_cosine,
                policy.subject_cosine_turns,
                policy.subject_cosine_changes,
            )
            ranked = newest_similar_first(store, flt, ranked, memories, fetch, depth, same, earlier)
        survivors = one_per_source(ranked, memories, fetch, k, None)
        if everything or not tail or within(survivors[:k], ranked[:depth]):
            break
    if trace is not None:
        if rerank.names:
            trace.add_stage("rerank:" + "x".join(rerank.names), reranked, detail)
        if windows:
            trace.add_stage("time", timed)
        if (settled := stage_of(trace)) is not None:  # after the stages it follows
            trace.stages[settled] = trace.stages.pop(settled)
        if (kept := keep_stage_of(trace)) is not None:  # after the length step's
            trace.stages[kept] = trace.stages.pop(kept)
        if RULE_STAGE in trace.stages:  # after the legs' keep
            trace.stages[RULE_STAGE] = trace.stages.pop(RULE_STAGE)
        if LEARNED_STAGE in trace.stages:  # after every keep
            trace.stages[LEARNED_STAGE] = trace.stages.pop(LEARNED_STAGE)
        if ranked != unordered:
            trace.add_stage(ORDER_NEWEST_FIRST, ranked)
        survivors = one_per_source(ranked, memories, fetch, k, trace)
    ranked = survivors

    if policy.diversity is Diversity.MMR:
        chosen, merged = mmr(ranked, _TokensOf(memories), k, lam=policy.mmr_lambda)
        if trace is not None:
            trace.add_stage("diversity:mmr", chosen)
            for d in merged:
                trace.drop(
                    d.memory_id,
                    "diversity",
                    DROP_MMR,
                    f"jaccard {d.similarity:.2f} with {d.similar_to}",
                )
    else:
        chosen = ranked[:k]
    if policy.newest_similar_first:
        hits_before = chosen
        chosen = order_within_hits(
            Hits(chosen, memories, query.text, store, flt, earlier, k), policy
        )
        if trace is not None and chosen != hits_before:
            trace.add_stage(ORDER_WITHIN_HITS, chosen)
    if trace is not None:
        picked = {i for i, _ in chosen}
        merged_ids = {d.memory_id for d in trace.dropped if d.reason == DROP_MMR}
        for i, s in ranked:
            if i not in picked and i not in merged_ids:
                trace.drop(i, "final", DROP_RANK, f"score {s:.4f}")

    sparse_rank = {c.memory_id: c.rank for c in legs.get(Leg.SPARSE.value, [])}
    chosen_ids = {i for i, _ in chosen}
    hits = [
        Hit(
            memory=memories[mid],
            score=score,
            age_seconds=max(0.0, (now - memories[mid].ts).total_seconds()),
            cosine=cosines.get(mid),
            dense_rank=dense_rank.get(mid),
            bm25_rank=sparse_rank.get(mid),
            newer=earlier.get(mid) if earlier.get(mid) in chosen_ids else None,
        )
        for mid, score in chosen
    ]
    if policy.walk_depth > 0 and hits:
        hits += walk_similar(store, flt, hits, now, trace)
    hits = shown_passages(
        hits, legs.get(Leg.DENSE.value, []), lexical, legs.get(Leg.SPARSE.value, [])
    )
    return hits, legs, mode


def review_of(
    query: Query, hits: Sequence[Hit], now: datetime, conversation: str | None = None
) -> ReviewRequest:
    """The pending review (seed 003) a marked recall of ``hits`` records: rated later by
    the messages that follow in ``conversation`` (default: the query's own)."""
    return ReviewRequest(
        workspace_id=query.workspace_id,
        query=query.text,
        memory_ids=tuple(h.id for h in hits),
        recalled_at=now,
        cosines=tuple(h.cosine for h in hits),
        agent_id=query.agent_id,
        crew_id=query.crew_id,
        conversation_id=conversation or query.conversation_id,
    )


def _time_windows(
    store: SearchStore, flt: ScopeFilter, text: str, now: datetime
) -> list[TimeWindow]:
    """The query's time expressions, with "before/after <event>" dated by the best
    lexical match for the event; anchors that match nothing are dropped."""
    windows: list[TimeWindow] = []
    for w in parse_time_expressions(text, now):
        if w.kind != "anchored":
            windows.append(w)
            continue
        if not w.anchor:
            continue
        best = store.search_sparse(flt, w.anchor, 1)
        if best:
            anchor = store.get_memories(flt.workspace_id, [best[0].memory_id])
            if anchor:
                windows.append(w.resolve(anchor[0].ts))
    return windows


def shown_passages(
    hits: list[Hit], dense: Sequence[Candidate], lexical: str, sparse: Sequence[Candidate] = ()
) -> list[Hit]:
    """Each long memory's hit with the passage that matched: the dense leg's best passage
    (its own vector reads its start), else the keyword leg's best passage, else the
    passage holding most of the query's words. A memory short enough to show whole
    keeps none."""
    matched = {c.memory_id: c.passage for c in dense}
    matched.update(
        (c.memory_id, c.passage)
        for c in sparse
        if c.passage is not None and c.memory_id not in matched
    )
    wanted = words(lexical)
    out: list[Hit] = []
    for hit in hits:
        content = hit.memory.content
        if hit.passage is not None or len(content) <= PASSAGE_CHARS:
            out.append(hit)
            continue
        if hit.id in matched:
            # Its own vector's passage, the first, ends where the first passage of its
            # first PASSAGE_CHARS + 1 characters ends: no need to split all of it.
            span = matched[hit.id] or (0, passage_spans(content[: PASSAGE_CHARS + 1])[0].stop)
        else:
            found = span_for_words(content, wanted, PASSAGE_WORDS.get(hit.id, content))
            span = (found.start, found.stop)
        out.append(replace(hit, passage=span))
    return out


class _TokensOf(Mapping[str, frozenset[str]]):
    """The token sets of ``memories``, each made when MMR first compares it: MMR compares
    a candidate only when it is about to be picked, and on long memories tokenising every
    candidate's text up front took a third of a ``teaparty`` recall on BEAM."""

    def __init__(self, memories: Mapping[str, Memory]) -> None:
        self._memories = memories
        self._made: dict[str, frozenset[str]] = {}

    def __getitem__(self, memory_id: str) -> frozenset[str]:
        found = self._made.get(memory_id)
        if found is None:
            text = self._memories[memory_id].content
            found = self._made[memory_id] = TOKEN_SETS.get(memory_id, text)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._memories)

    def __len__(self) -> int:
        return len(self._memories)


def _reranked(cands: Sequence[Candidate]) -> list[Candidate]:
    ordered = sorted(cands, key=lambda c: c.score, reverse=True)
    return [
        Candidate(c.memory_id, c.score, rank, c.passage) for rank, c in enumerate(ordered, start=1)
    ]


def _fuse(
    legs: dict[str, list[Candidate]], policy: RecallPolicy, every_match: bool = False
) -> list[tuple[str, float]]:
    if policy.fusion is Fusion.BLEND:
        dense_scores = {
            c.memory_id: c.score if c.passage is None else c.score * policy.passage_weight
            for c in legs.get(Leg.DENSE.value, [])
        }
        sparse_scores = {c.memory_id: c.score for c in legs.get(Leg.SPARSE.value, [])}
        wd, ws = policy.blend_dense, policy.blend_sparse
        if policy.confidence_fusion > 0 and dense_scores and sparse_scores:
            total = wd + ws
            share = confident_weight(
                wd / total, dense_scores, sparse_scores, policy.confidence_fusion
            )
            wd, ws = share * total, (1.0 - share) * total
        fused = blend(
            dense_scores,
            sparse_scores,
            dense_weight=wd,
            sparse_weight=ws,
            every_match=every_match,
            scale=policy.blend_scale,
        )
        # Other legs (time, recency) have no score on the blend's scale: their candidates
        # join below every matched one, in their own order.
        have = {i for i, _ in fused}
        lowest = min((s for _, s in fused if s > 0), default=1.0) * policy.time_leg_weight
        for name, leg in legs.items():
            if name not in (Leg.DENSE.value, Leg.SPARSE.value):
                fused += [(c.memory_id, lowest / c.rank) for c in leg if c.memory_id not in have]
                have.update(c.memory_id for c in leg)
        return sorted(fused, key=lambda pair: pair[1], reverse=True)
    if policy.fusion is Fusion.SCORE or len(legs) == 1:
        # One leg: keep its own scores (cosine or BM25); a second leg would only be a
        # fallback, and the first one present wins.
        leg = next(iter(legs.values()))
        return [(c.memory_id, c.score) for c in leg]
    leg_weight = {TIME_LEG: policy.time_leg_weight, Leg.DENSE.value: policy.dense_weight}
    weights = [leg_weight.get(name, 1.0) for name in legs]
    return rrf([[c.memory_id for c in leg] for leg in legs.values()], policy.rrf_k, weights)


def _factor_bounds(policy: RecallPolicy, query: Query) -> tuple[float, float]:
    """The least and the most the policy's re-rank factors can multiply a score by for
    this query; (0, inf) when a factor has no useful bound."""
    lo, hi = length_prior_floor(policy.length_prior, MAX_CONTENT_CHARS), 1.0
    for factor in policy.factors:
        if factor is Factor.IMPORTANCE_PRIOR:
            lo *= importance_prior(0.0, policy.importance_weight)
        elif factor is Factor.SCOPE_LEVEL:
            table = dict(policy.scope_multipliers)
            levels = possible_levels(query.agent_id, query.crew_id)
            multipliers = [scope_multiplier(level, table) for level in levels]
            lo, hi = lo * min(multipliers), hi * max(multipliers)
        else:
            return 0.0, math.inf
    return lo, hi


def _trace_scope_drops(
    store: SearchStore,
    trace: Trace,
    flt: ScopeFilter,
    qvec: Vector | None,
    lexical: str,
    legs: dict[str, list[Candidate]],
    pool: int,
) -> None:
    """Explain-only: what the same legs find in the whole workspace but the scope hid."""
    whole = ScopeFilter(workspace_id=flt.workspace_id)
    if whole == flt:
        return
    seen = {c.memory_id for cands in legs.values() for c in cands}
    outside: list[str] = []
    if qvec is not None:
        outside += [c.memory_id for c in store.search_dense(whole, qvec, pool)]
    outside += [c.memory_id for c in store.search_sparse(whole, lexical, pool)]
    for mid in dict.fromkeys(outside):
        if mid not in seen:
            trace.drop(mid, "legs", DROP_SCOPE, "outside the query's scope")


def _by_importance(cands: Sequence[Candidate], memories: dict[str, Memory]) -> list[Candidate]:
    """Seed 000's Recall order: cosine x importance, best first."""
    scored = sorted(
        (
            (c.memory_id, cosine_times_importance(c.score, memories[c.memory_id].importance))
            for c in cands
            if c.memory_id in memories
        ),
        key=lambda pair: pair[1],
        reverse=True,
    )
    return [Candidate(mid, score, rank) for rank, (mid, score) in enumerate(scored, start=1)]
