"""Journal recall benchmark: a multi-agent journal lived through day by day, then asked.

The generated journal (``bench/journal_data.py``) goes in the way a runtime writes it:
each simulated day's events through ``Episodic.ingest`` with the service's clock at the
day's end, indexed, the recalls agents made that day (marked, so references and pending
reviews exist), then the upkeep schedule the server runs (decay, reviews, consolidation
triggers, compaction, consolidation, health) the next morning. At the end every query is
asked under each policy (k=10, unmarked) at the same "now", and the ranked ids are scored
against the judged ones; for a fact that changed, the report also counts how often an
answer since superseded ranks above the current one (``stale_first``). Query embeddings
are computed before the clock starts, so the latency is the recall's, not the model's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from episodic.bench.harness import BenchClock, bench_memory
from episodic.bench.journal_data import Day, JournalSet, Query, generate, load_set
from episodic.bench.locomo import resolve_policies
from episodic.bench.metrics import mean_scores, percentile, score_ranking
from episodic.config import Settings
from episodic.errors import EmbedderError, InvalidInput
from episodic.model import MemoryStatus, ScopeFilter
from episodic.recall.policies import DEFAULT, RecallPolicy
from episodic.service import Episodic

K = 10
REPORTED = ("recall@5", "recall@10", "ndcg@10")
# Upkeep runs the morning after each day, after the nightly jobs' scheduled times.
UPKEEP_AFTER = timedelta(hours=9)
# Bench-only variants of the presets: what a factor adds, measured by taking it away.
VARIANTS: Mapping[str, RecallPolicy] = {
    "default-no-prior": replace(DEFAULT, name="default-no-prior", importance_weight=0.0),
}


@dataclass(frozen=True, slots=True)
class QueryRun:
    """One query asked under one policy."""

    policy: str
    query: Query
    ranking: tuple[str, ...]  # memory ids, best first
    scores: Mapping[str, float]
    latency_ms: float

    @property
    def stale_first(self) -> bool:
        """Whether a superseded answer ranks above every current one (or is found while
        no current one is)."""
        return stale_first(self.ranking, self.query.relevant, self.query.superseded)


def stale_first(ranking: Sequence[str], relevant: Sequence[str], superseded: Sequence[str]) -> bool:
    """True when the first of ``ranking`` that is relevant or superseded is superseded."""
    judged = set(relevant) | set(superseded)
    first = next((item for item in ranking if item in judged), None)
    return first is not None and first in set(superseded)


def resolve(choice: str | None) -> list[str]:
    """``all`` (or nothing): every preset and the bench variants; else comma-separated
    names of either."""
    return resolve_policies(choice, list(VARIANTS))


@dataclass(slots=True)
class Lived:
    """The journal ingested and lived through, ready for the final queries."""

    mem: Episodic
    clock: BenchClock
    data: JournalSet
    events: int
    memories: int
    inactive: tuple[str, ...]  # judged ids upkeep took out of recall (merged, retired)
    embedder: str


@contextmanager
def live_journal(
    data: JournalSet,
    settings: Settings,
    *,
    say: Callable[[str], None],
    db_url: str | None = None,
) -> Iterator[Lived]:
    """Generate the journal, and ingest, index, recall and keep it day by day."""
    days = generate(data)
    texts = [q.text for q in data.queries] + [r.text for d in days for r in d.recalls]
    with bench_memory(settings, texts, say, db_url=db_url) as (mem, clock, model):
        started = time.perf_counter()
        events, memories = _live(mem, clock, data, days)
        say(
            f"lived {len(days)} days: {events} events, {memories} memories admitted, "
            f"in {time.perf_counter() - started:.1f}s"
        )
        judged = sorted({r for q in data.queries for r in q.relevant})
        found = mem.memories(ScopeFilter(data.workspace), judged)
        active = {m.id for m in found if m.status == MemoryStatus.ACTIVE}
        inactive = tuple(r for r in judged if r not in active)
        if inactive:
            say(f"{len(inactive)} judged memories are no longer active: {', '.join(inactive)}")
        yield Lived(mem, clock, data, events, memories, inactive, model or "none")


def _live(
    mem: Episodic, clock: BenchClock, data: JournalSet, days: Sequence[Day]
) -> tuple[int, int]:
    scheduler = mem.scheduler()
    events = memories = 0
    for day in days:
        clock.now = day.end
        result = mem.ingest(day.events)
        if result.errors:
            raise InvalidInput("data", f"day {day.number}: event rejected: {result.errors[0]}")
        events += len(day.events)
        memories += result.admitted
        indexed = mem.index_once()
        if indexed.failed:
            raise EmbedderError(f"indexing day {day.number} failed: {indexed.error}")
        for recall in day.recalls:
            mem.recall(
                recall.text,
                workspace=data.workspace,
                agent=recall.agent,
                crew=data.agents[recall.agent],
                k=5,
                mark=True,
            )
        clock.now = day.end + UPKEEP_AFTER
        scheduler.run_pending(clock.now)
    return events, memories


def run_queries(
    lived: Lived,
    name: str,
    *,
    observe: Callable[[QueryRun], None] | None = None,
) -> list[QueryRun]:
    """Ask every query under one policy (a preset or a bench variant)."""
    mem, data = lived.mem, lived.data
    chosen: str | RecallPolicy = VARIANTS.get(name) or name

    def ask(query: Query) -> list[str]:
        crew = data.agents[query.agent] if query.agent is not None else None
        result = mem.recall(
            query.text,
            workspace=data.workspace,
            agent=query.agent,
            crew=crew,
            k=K,
            policy=chosen,
            mark=False,
        )
        return [hit.id for hit in result.hits]

    ask(data.queries[0])  # the first search loads the vectors: a one-off, untimed
    runs: list[QueryRun] = []
    for query in data.queries:
        started = time.perf_counter()
        ranking = ask(query)
        latency_ms = (time.perf_counter() - started) * 1000.0
        run = QueryRun(
            name, query, tuple(ranking), score_ranking(ranking, query.relevant), latency_ms
        )
        runs.append(run)
        if observe is not None:
            observe(run)
    return runs


def summarise(runs: Sequence[QueryRun]) -> dict[str, Any]:
    """One policy's report: the reported metrics overall and per kind of query, and the
    recall latency."""
    by_kind: dict[str, list[Mapping[str, float]]] = {}
    for run in runs:
        by_kind.setdefault(run.query.kind, []).append(run.scores)
    latencies = [run.latency_ms for run in runs]
    changed = [run for run in runs if run.query.superseded]
    stale = sum(run.stale_first for run in changed) / len(changed) if changed else 0.0
    return {
        **_rounded(mean_scores([run.scores for run in runs])),
        "stale_first": round(stale, 4),
        "by_kind": {kind: _rounded(mean_scores(rows)) for kind, rows in sorted(by_kind.items())},
        "latency_ms": {
            "p50": round(percentile(latencies, 50), 3),
            "p95": round(percentile(latencies, 95), 3),
        },
    }


def _rounded(scores: Mapping[str, float]) -> dict[str, float]:
    return {key: round(scores[key], 4) for key in REPORTED}


def run_journal(
    folder: Path | str,
    policies: Sequence[str],
    settings: Settings,
    *,
    observe: Callable[[QueryRun], None] | None = None,
    progress: Callable[[str], None] | None = None,
    db_url: str | None = None,
) -> dict[str, Any]:
    """Run the benchmark; the result is what ``episodic bench journal --json`` prints."""
    names = resolve(",".join(policies)) if policies else resolve(None)
    say = progress or (lambda _line: None)
    data = load_set(folder)
    with live_journal(data, settings, say=say, db_url=db_url) as lived:
        report = {}
        for name in names:
            say(f"policy {name}")
            report[name] = summarise(run_queries(lived, name, observe=observe))
    return {
        "events": lived.events,
        "memories": lived.memories,
        "queries": len(data.queries),
        "days": data.days,
        "embedder": lived.embedder,
        "judged_inactive": list(lived.inactive),
        "policies": report,
    }
