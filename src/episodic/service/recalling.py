"""The service's recall area: recall, the injection block, the newest episodes, and the
reference marks recalls leave (batched on a server).

The recall itself is ``episodic.recall.engine.run_recall``; this area resolves the
caller's filters and policy, the agent's settings and the optional LLM key terms, and
renders the block an agent injects.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from episodic import tracing
from episodic.errors import InvalidInput, StoreError
from episodic.llm.prompts import LEARNING_TYPES
from episodic.llm.steps import key_terms as extract_key_terms
from episodic.model import Hit, Memory, Query, Scope, ScopeFilter
from episodic.policy import EPISODE_TYPE
from episodic.recall.arguments import (
    check_flag,
    check_k,
    check_max_chars,
    check_optional_flag,
    check_query,
    check_walk,
)
from episodic.recall.details import check_detail, with_details
from episodic.recall.engine import MODE_SPARSE_ONLY, RecallResult, review_of, run_recall
from episodic.recall.policies import RecallPolicy, RenderStyle, get_policy
from episodic.recall.render import fit_block, fit_memory_block, hit_line, whole_first_line
from episodic.recall.trace import DROP_BUDGET
from episodic.service.context import Context
from episodic.service.recall_processes import ProcessesDown, RecallProcesses
from episodic.store.search import SearchStore
from episodic.store.upkeep import ReviewRequest
from episodic.write.events import parse_time

log = logging.getLogger("episodic")

# Memories of these types are standing knowledge (seed 001's institutional learnings).
INSTITUTIONAL_TYPES = ("institutional",)
INSTITUTIONAL_LIMIT = 20
MARK_FLUSH_S = 1.0
# Marks written per transaction. A second of a busy server's recalls leaves hundreds; in
# one transaction they held SQLite's writer for up to 173 ms (the 64-client load, timed
# inside the server), and every write waited behind them. Batches of this size hold it a
# few milliseconds each, and writes go in between.
MARK_BATCH = 64


def parse_scope(value: Scope | str | None) -> Scope | None:
    if value is None or isinstance(value, Scope):
        return value
    try:
        return Scope(value)
    except ValueError:
        raise InvalidInput("scope", f"unknown scope {value!r}; use own or crew_shared") from None


class ReferenceBuffer:
    """Reference marks waiting to be written: (workspace, memory) -> how many recalls
    returned it, and the time of the last; and the pending reviews (seed 003) those
    recalls record. A background thread writes them every ``interval_s`` seconds;
    ``stop`` writes what is left."""

    def __init__(self, store: SearchStore, interval_s: float) -> None:
        self.store = store
        self.interval_s = interval_s
        self._pending: dict[str, dict[str, int]] = {}
        self._last: dict[str, datetime] = {}
        self._reviews: list[ReviewRequest] = []
        self._lock = threading.Lock()
        self._flushing = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add(
        self, workspace: str, ids: list[str], at: datetime, review: ReviewRequest | None = None
    ) -> None:
        if not ids:
            return
        with self._lock:
            counts = self._pending.setdefault(workspace, {})
            for memory_id in ids:
                counts[memory_id] = counts.get(memory_id, 0) + 1
            self._last[workspace] = at
            if review is not None:
                self._reviews.append(review)

    def flush(self) -> None:
        # Held while a batch is written: flush() returns only once every mark added before
        # it is stored, even when the background thread had already taken them.
        with self._flushing:
            with self._lock:
                pending, last, reviews = self._pending, self._last, self._reviews
                self._pending, self._last, self._reviews = {}, {}, []
            for workspace, counts in pending.items():
                # mark_referenced adds 1 per id: a memory returned n times goes in n rounds.
                try:
                    for level in range(1, max(counts.values()) + 1):
                        ids = [i for i, n in counts.items() if n >= level]
                        for start in range(0, len(ids), MARK_BATCH):
                            batch = ids[start : start + MARK_BATCH]
                            self.store.mark_referenced(workspace, batch, last[workspace])
                except StoreError as exc:
                    log.warning("reference marks for %s not written: %s", workspace, exc)
            for start in range(0, len(reviews), MARK_BATCH):
                chunk = reviews[start : start + MARK_BATCH]
                try:
                    self.store.add_reviews(chunk)
                except StoreError as exc:
                    log.warning("%d recall reviews not recorded: %s", len(chunk), exc)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.flush()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="episodic-marks", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        self.flush()


class Recalling:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._marks: ReferenceBuffer | None = None
        self._processes: RecallProcesses | None = None

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
        detail: str | None = None,
        as_of: datetime | str | None = None,
        include_superseded: bool = False,
        learning_type: Sequence[str] | str | None = None,
        session: str | None = None,
    ) -> RecallResult:
        """The memories that matter for ``query``, best first. Each hit returned is
        marked referenced (it feeds importance) unless ``mark`` is False. With ``explain``
        the result carries a ``Trace`` of every stage and every drop.

        ``agent`` and ``crew`` say who is asking: seed 001's scope levels weigh the
        asker's team (x1.5) and project (x1.2) over workspace-wide memories (x1.0); only a
        ``scope`` (own, crew_shared: what an API key sets) limits what is seen. ``k``
        outside 1..50 recalls 5, with a warning in the result (seed 000).

        ``walk`` = 1 adds the memories one `similar` edge away from the hits (seed 000's
        memory_walk_depth); None takes the agent's ``Settings.memory_walk_depth`` when it
        has one, else the policy's setting. ``key_terms`` asks the configured LLM for 5-8
        search terms for the BM25 leg (seed 001; default from EPISODIC_LLM_QUERY_TERMS,
        off); without an LLM, or when it fails, the raw text is used. ``types`` limits
        recall to memories of those types (``message``, ``episode``, ``entry``,
        ``learning`` or a journal type); ``learning_type`` (one or several of
        declarative, procedural, directive, corrective) to learnings of those types, as
        seed 001's ``retrieve(learning_type)``. ``detail`` (none | auto | full, default auto) says
        which episodes come with their messages: seed 003's top-ranked key moments, by
        default.

        Institutional memories never take one of the ``k`` places: unless ``types`` asks
        for them, they come apart in ``result.institutional``, newest first, within
        ``Settings.institutional_chars`` (seed 001: loaded unconditionally, never ranked
        against the task's learnings).

        Memories a newer one replaced (status ``superseded``) are left out. ``as_of`` (a
        time, or ISO 8601 text) answers as memory stood then: what was valid at that time,
        superseded since or not, and nothing that became true after it.
        ``include_superseded`` shows the replaced memories too, each with its validity.

        A marked recall also records a pending review (seed 003) unless
        ``Settings.review_recalls`` is off; the review job rates it by the assistant
        messages that follow in ``review_conversation`` (default: the conversation the
        recall is narrowed to), or ``review()`` is handed the output. ``session`` names
        the session the recall belongs to (the same as ``review_conversation``): its end
        (``end_session``) reinforces each memory returned once (seed 001)."""
        settings = self.ctx.settings
        query = check_query(query)
        check_k(k)
        walk = check_walk(walk)
        mark = check_flag("mark", mark)
        explain = check_flag("explain", explain)
        key_terms = check_optional_flag("key_terms", key_terms)
        if session is not None:
            if not isinstance(session, str) or not session.strip():
                raise InvalidInput("session", "expected the session's id (text)")
            if review_conversation not in (None, session):
                raise InvalidInput("session", "names another session than review_conversation")
            review_conversation = session
        kinds = None if types is None else ((types,) if isinstance(types, str) else tuple(types))
        # Asked for by type, institutional memories are ranked like any other; otherwise
        # they stay out of the ranking and come apart (recall_standing).
        standing = kinds is None
        q = Query(
            text=query,
            workspace_id=workspace,
            agent_id=agent,
            crew_id=crew,
            resource_id=resource,
            conversation_id=conversation,
            scope=parse_scope(scope),
            k=k,
            types=kinds,
            learning_types=learning_types_of(learning_type),
            exclude_types=INSTITUTIONAL_TYPES if kinds is None else (),
            as_of=None if as_of is None else parse_time("as_of", as_of),
            include_superseded=check_flag("include_superseded", include_superseded),
        )
        chosen = get_policy(policy)
        if walk is None:
            walk = settings.walk_depth_for(agent)  # per-agent memory_walk_depth
        now = self.ctx.clock()
        processes = self._processes
        if processes is not None:
            # Checked above, ranked in a recall process; marked here (a worker writes
            # nothing). Should a worker die, this recall runs here instead.
            asked = {
                "workspace": workspace,
                "agent": agent,
                "crew": crew,
                "resource": resource,
                "conversation": conversation,
                "scope": scope,
                "k": k,
                "policy": policy,
                "mark": False,
                "explain": explain,
                "walk": walk,
                "key_terms": key_terms,
                "types": types,
                "review_conversation": review_conversation,
                "detail": detail,
                "as_of": as_of,
                "include_superseded": include_superseded,
                "learning_type": learning_type,
            }
            try:
                result = processes.recall(query, now, asked)
            except ProcessesDown:
                pass
            else:
                self.ctx.models.observed(result.mode, _mode_reason(result))
                if mark:
                    self._record(q, result.hits, now, review_conversation)
                return result
        deferred = mark and self._marks is not None  # the server batches its marks
        lexical: str | None = None
        if settings.llm_query_terms if key_terms is None else key_terms:
            terms = extract_key_terms(query, self.ctx.models.llm)
            # Without terms, seed 001 searches the task's first 500 characters, not all
            # of it (a shorter query stays as typed, time expressions and all).
            cut = terms.source == "raw" and len(terms.text) < len(query.strip())
            lexical = terms.text if terms.source == "llm" or cut else None
        result = run_recall(
            self.ctx.store,
            self.ctx.models.query_vectors(),
            q,
            chosen if walk is None else replace(chosen, walk_depth=walk),
            now=now,
            mark=mark and not deferred,
            explain=explain,
            lexical_query=lexical,
            review=settings.review_recalls,
            review_conversation=review_conversation,
        )
        if deferred:
            self._record(q, result.hits, now, review_conversation)
        hits = with_details(
            result.hits,
            check_detail(detail),
            lambda ids: self.ctx.store.get_events(q.workspace_id, ids),
        )
        result = replace(result, hits=hits)
        if kinds and not hits and query.strip():
            # A misspelt type or a learning type given as a memory type answers empty:
            # say what was asked for.
            result = replace(
                result,
                warnings=[
                    *result.warnings,
                    f"nothing of type {', '.join(map(repr, kinds))} matched; memory types "
                    "are message, episode, entry, learning, institutional or a journal "
                    f"type, learning types ({', '.join(LEARNING_TYPES)}) go in learning_type",
                ],
            )
        if not hits and kinds is None and query.strip():
            empty = self.empty_workspace(workspace)
            if empty is not None:
                result = replace(result, warnings=[*result.warnings, empty])
        if standing:
            institutional, over = self._standing(q, now)
            warnings = list(result.warnings)
            if over:
                warnings.append(
                    f"{over} institutional memories left out: over their own budget of "
                    f"{self.ctx.settings.institutional_chars} characters "
                    "(EPISODIC_INSTITUTIONAL_CHARS)"
                )
            result = replace(result, institutional=institutional, warnings=warnings)
        return result

    def empty_workspace(self, workspace: str) -> str | None:
        """Why a recall in ``workspace`` found nothing, when the workspace itself is empty
        (a misspelt name, or events none of which was kept): an empty answer says why.
        Asked only when a recall came back empty; it names no other workspace (a caller
        may see one only)."""
        stats = self.ctx.store.stats(workspace)
        if stats.memories:
            return None
        if stats.events:
            return (
                f"workspace {workspace!r} holds {stats.events} journal events but no memories: "
                "none of its events was kept as a memory (ingest reports why for each; an "
                "event that sets refs.episodic is kept)"
            )
        return (
            f"workspace {workspace!r} holds no memories and no events: nothing was written "
            "there yet (check the workspace's name)"
        )

    def _record(
        self, q: Query, hits: Sequence[Hit], now: datetime, review_conversation: str | None
    ) -> None:
        """The marks of a recall that returned ``hits``, and its pending review (seed
        003): batched on a server, written now otherwise, as run_recall writes them."""
        if not hits:
            return
        ids = [h.id for h in hits]
        reviewed = self.ctx.settings.review_recalls
        review = review_of(q, hits, now, review_conversation) if reviewed else None
        if self._marks is not None:
            self._marks.add(q.workspace_id, ids, now, review)
            return
        self.ctx.store.mark_referenced(q.workspace_id, ids, now)
        if review is not None:
            self.ctx.store.add_review(review)

    def render(
        self,
        /,
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
        /,
        query: str,
        *,
        max_chars: int | None = None,
        type_caps: Mapping[str, int] | None = None,
        **filters: Any,
    ) -> tuple[str, RecallResult]:
        """``render`` plus the recall behind it, narrowed to the hits the block holds:
        only those are marked referenced (seed 000 counts a reference when a hit lands in
        a prompt), and the rest are recorded in the trace (when ``explain=True``) as "over
        budget". When not even one memory fits whole, the first is cut to fit (the block
        may then pass a budget smaller than its own frame) and a warning says so."""
        settings = self.ctx.settings
        checked = check_max_chars(max_chars)
        budget = settings.render_max_chars if checked is None else checked
        mark = check_flag("mark", filters.pop("mark", True))
        result = self.recall(query, mark=False, **filters)
        style = get_policy(filters.get("policy")).render
        room = budget  # what the recalled memories and the frame may take
        with tracing.span("recall.render"):
            if style is RenderStyle.MEMORY_NEWEST_FIRST:
                block, kept = fit_memory_block(result.hits, budget, type_caps=type_caps)
            else:
                block, kept = fit_block(
                    result.hits,
                    budget,
                    type_caps=type_caps,
                    standing=result.institutional,
                    standing_chars=settings.institutional_chars,
                )
        if style is not RenderStyle.MEMORY_NEWEST_FIRST:
            # Standing memories have a budget of their own, on top of max_chars.
            room += sum(len(hit_line(h)) + 1 for h in result.institutional if h.id in kept)
        if result.trace is not None:
            for hit in result.hits:
                if hit.id not in kept:
                    result.trace.drop(hit.id, "render", DROP_BUDGET, f"{budget} chars")
        by_id = {h.id: h for h in result.hits}
        shown = [by_id[i] for i in kept if i in by_id]
        warnings = list(result.warnings)
        if shown:
            whole = whole_first_line(block, shown[0], style)
            if len(block) > room:
                warnings.append(
                    f"max_chars={budget} is less than the block's frame and one memory take: "
                    f"the first memory is shown{'' if whole else ', cut,'} in "
                    f"{len(block)} characters"
                )
            elif not whole:
                warnings.append(f"max_chars={budget} holds no whole memory: the first is cut")
        if mark:
            self.mark_shown(
                query,
                shown,
                workspace=filters["workspace"],
                agent=filters.get("agent"),
                crew=filters.get("crew"),
                conversation=filters.get("conversation"),
                review_conversation=filters.get("session") or filters.get("review_conversation"),
            )
        return block, replace(result, hits=shown, warnings=warnings)

    def mark_shown(
        self,
        query: str,
        hits: Sequence[Hit],
        *,
        workspace: str,
        agent: str | None = None,
        crew: str | None = None,
        conversation: str | None = None,
        review_conversation: str | None = None,
    ) -> None:
        """Count ``hits`` (of a recall made with ``mark=False``) as referenced, and record
        the pending review (seed 003) of that recall: for a caller that puts only some
        of a recall's hits in front of a model (a block with a budget), those."""
        q = Query(
            text=query,
            workspace_id=workspace,
            agent_id=agent,
            crew_id=crew,
            conversation_id=conversation,
        )
        self._record(q, hits, self.ctx.clock(), review_conversation)

    def _standing(self, q: Query, now: datetime) -> tuple[list[Hit], int]:
        """Institutional memories, newest first, within their own character budget, and
        how many did not fit: always loaded, never ranked against the recalled ones
        (seed 001). Whoever asks sees them: a scope (an API key's) limits them to what it
        may see, plus the workspace-wide ones, which belong to no agent and no crew."""
        budget = self.ctx.settings.institutional_chars
        if budget <= 0:
            return [], 0
        workspace = q.workspace_id
        store = self.ctx.store
        if q.scope is None:
            flt = ScopeFilter(workspace_id=workspace)
        else:
            flt = ScopeFilter(
                workspace_id=workspace, scope=q.scope, agent_id=q.agent_id, crew_id=q.crew_id
            )
        found = store.search_recent(flt, INSTITUTIONAL_LIMIT, types=INSTITUTIONAL_TYPES)
        memories = store.get_memories(workspace, [c.memory_id for c in found])
        if q.scope is not None:
            wide = store.search_recent(
                ScopeFilter(workspace_id=workspace), INSTITUTIONAL_LIMIT, types=INSTITUTIONAL_TYPES
            )
            seen = {m.id for m in memories}
            memories += [
                m
                for m in store.get_memories(workspace, [c.memory_id for c in wide])
                if m.agent is None and m.crew is None and m.id not in seen
            ]
            memories = sorted(memories, key=lambda m: (m.ts, m.id), reverse=True)
        kept: list[Hit] = []
        used = 0
        for m in memories[:INSTITUTIONAL_LIMIT]:
            used += len(m.content) + 1
            if used > budget and kept:
                break
            age = max(0.0, (now - m.ts).total_seconds())
            kept.append(Hit(memory=m, score=1.0, age_seconds=age))
        return kept, len(memories[:INSTITUTIONAL_LIMIT]) - len(kept)

    # -- the newest episodes (seed 003's recent_memory) --------------------------------
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
        flt = ScopeFilter(
            workspace_id=workspace,
            agent_id=agent,
            resource_id=resource,
            conversation_id=conversation,
        )
        return self.recent_in(flt, limit)

    def recent_in(self, flt: ScopeFilter, limit: int = 10) -> list[Memory]:
        """The newest episodes ``flt`` can see, newest first (``recent`` under a key's
        scope)."""
        if limit <= 0:
            raise InvalidInput("limit", "must be a positive number of episodes")
        found = self.ctx.store.search_recent(flt, limit, types=(EPISODE_TYPE,))
        return self.ctx.store.get_memories(flt.workspace_id, [c.memory_id for c in found])

    # -- recall processes ----------------------------------------------------------
    def recall_in_processes(self, processes: RecallProcesses | None) -> None:
        """Send recalls to ``processes`` from now on (None: recall here again); the
        caller started them and closes them."""
        self._processes = processes

    # -- reference marks -----------------------------------------------------------
    def defer_marks(self, interval_s: float = MARK_FLUSH_S) -> None:
        """Batch the reference marks of recalls and write them every ``interval_s``
        seconds instead of once per recall (a long-running server: one write transaction
        per recall would serialise every reader behind the writer)."""
        if self._marks is None:
            self._marks = ReferenceBuffer(self.ctx.store, interval_s)
            self._marks.start()

    def flush_marks(self, *, stop: bool = False) -> None:
        """Write the batched marks now (and stop batching with ``stop``)."""
        marks = self._marks
        if marks is None:
            return
        if stop:
            self._marks = None
            marks.stop()
        else:
            marks.flush()


def _mode_reason(result: RecallResult) -> str:
    """Why a recall ran in its mode, as its warnings say (a vector recall says nothing)."""
    said = [w for w in result.warnings if MODE_SPARSE_ONLY in w]
    return said[0] if said else "a recall process reached it"


def learning_types_of(value: Sequence[str] | str | None) -> tuple[str, ...] | None:
    """The learning types a recall keeps (seed 001's four), or None for every memory;
    ``InvalidInput`` naming ``learning_type`` for anything else."""
    if value is None:
        return None
    kinds = (value,) if isinstance(value, str) else value
    if not isinstance(kinds, Sequence) or not kinds:
        raise InvalidInput("learning_type", f"give one or more of {', '.join(LEARNING_TYPES)}")
    for kind in kinds:
        if kind not in LEARNING_TYPES:
            raise InvalidInput(
                "learning_type",
                f"unknown learning type {kind!r}; use {', '.join(LEARNING_TYPES)}",
            )
    return tuple(dict.fromkeys(kinds))
