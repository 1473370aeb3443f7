"""``Episodic``: the one object every interface (Python API, CLI, HTTP, MCP) calls.

It is composed of area objects, each in its own module, and forwards each public method
to the area that implements it (the method's docstring is there):

- ``writing``: the journal, chat messages, segmentation into episodes, the indexer
- ``recalling``: recall, the injection block, the newest episodes, reference marks
- ``upkeep``: decay, reviews, consolidation, compaction, health, and their schedule
- ``operations``: API keys, memories one by one, remember, forget, markdown
- ``journal``: keyword search of the journal itself
- ``editing``: correcting a memory, and the versions it had
- ``decisions``: what was decided about a memory and by what, undoing a supersession
- ``models``: the embedder and the LLM, and what is built on them
- ``doctor``: the checks of ``episodic doctor``

Each area is built, and its module imported, when first used (``Area``): a command
that recalls loads neither upkeep nor editing, one that edits loads no recall area.

What spans areas stays here: opening and closing, and the indexer's follow-up after a
sweep (segment idle conversations, then consolidate a flashbulb at once).
"""

from __future__ import annotations

import logging
import pickle
import threading
from collections.abc import Callable
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Concatenate, Generic, ParamSpec, TypeVar, overload

from episodic.config import Settings
from episodic.errors import EpisodicError, InvalidInput
from episodic.model import utcnow
from episodic.priority import MAX_NICE
from episodic.service import areas
from episodic.service.context import Context
from episodic.service.models import UNSET, Models, _Unset
from episodic.service.recall_processes import (
    INDEXING_BELOW_RECALLS,
    RECALL_NICE,
    RecallProcesses,
    WorkerSpec,
)

# Only for annotations: each area's module loads when the area is first used (see
# ``Area``), so a command loads only the areas it calls.
if TYPE_CHECKING:
    from episodic.embed.base import Embedder
    from episodic.llm.base import LLM
    from episodic.service.doctor import DoctorReport
    from episodic.service.superseding import CheckReport
    from episodic.service.writing import SessionEnd
    from episodic.store.base import Store, StoreStats
    from episodic.tenancy import Principal
    from episodic.write.episodes import SegmentReport
    from episodic.write.indexer import SweepResult

log = logging.getLogger("episodic")

P = ParamSpec("P")
R = TypeVar("R")
AreaT = TypeVar("AreaT")


class Forward(Generic[AreaT, P, R]):
    """A facade method that is an area's method: ``recall = Forward("_recalling",
    lambda: areas.Recalling.recall)`` makes ``mem.recall`` the bound
    ``mem._recalling.recall``, with its signature and docstring (type checkers see the
    area method's parameters). The method is named through a function so that the
    area's module is imported when the method is first called or documented, not with
    the facade; the facade's attribute has the method's name."""

    def __init__(self, area: str, method: Callable[[], Callable[Concatenate[AreaT, P], R]]):
        self.area = area
        self._method = method
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @property
    def method(self) -> Callable[Concatenate[AreaT, P], R]:
        """The area's method (importing its module)."""
        return self._method()

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]  # the area method's, read late
        return self.method.__doc__

    @overload
    def __get__(self, obj: None, owner: type) -> Forward[AreaT, P, R]: ...

    @overload
    def __get__(self, obj: object, owner: type) -> Callable[P, R]: ...

    def __get__(self, obj: object | None, owner: type) -> Forward[AreaT, P, R] | Callable[P, R]:
        if obj is None:
            return self
        bound: Callable[P, R] = getattr(getattr(obj, self.area), self.name)
        return bound


class Area(Generic[AreaT]):
    """An area object of ``Episodic``, built by ``build`` when first used (its module
    imported then), under the service's lock so that concurrent first calls build one,
    then kept on the instance: later reads find it there without this descriptor."""

    def __init__(self, build: Callable[[Episodic], AreaT]) -> None:
        self.build = build
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type) -> Area[AreaT]: ...

    @overload
    def __get__(self, obj: Episodic, owner: type) -> AreaT: ...

    def __get__(self, obj: Episodic | None, owner: type) -> Area[AreaT] | AreaT:
        if obj is None:
            return self
        with obj._building:
            built: AreaT | None = obj.__dict__.get(self.name)
            if built is None:
                built = self.build(obj)
                obj.__dict__[self.name] = built
        return built


def _operations(mem: Episodic) -> areas.Operations:
    operations = areas.Operations(mem._ctx, mem._writing)
    # A note is checked for what it replaces as it is remembered, not at the sweep.
    operations.after_remember = lambda memory: mem._superseding.check_memory(memory)
    return operations


class Episodic:
    """Episodic memory for agents. Use as a context manager, or call ``close()``."""

    _ctx: Context
    _models: Models
    _building: threading.RLock
    # The areas, each built on first use (``Area``).
    _writing = Area(lambda mem: areas.Writing(mem._ctx))
    _recalling = Area(lambda mem: areas.Recalling(mem._ctx))
    _upkeep = Area(lambda mem: areas.Upkeep(mem._ctx))
    _operations = Area(_operations)
    _journal = Area(lambda mem: areas.Journal(mem._ctx))
    _editing = Area(lambda mem: areas.Editing(mem._ctx, mem._writing, mem._operations))
    _superseding = Area(lambda mem: areas.Superseding(mem._ctx, mem._operations))
    _decisions = Area(lambda mem: areas.Decisions(mem._ctx, mem._operations))

    def __init__(
        self,
        *,
        store: Store,
        embedder: Embedder | _Unset | None = UNSET,
        settings: Settings | None = None,
        clock: Callable[[], datetime] = utcnow,
        llm: LLM | _Unset | None = UNSET,
    ) -> None:
        settings = settings or Settings.from_env()
        self._building = threading.RLock()
        # Looked up when a sweep ends, not now: a caller may replace the follow-up.
        self._models = Models(
            store, settings, embedder=embedder, llm=llm, after_sweep=lambda: self._segment_quietly()
        )
        self._ctx = Context(store=store, settings=settings, clock=clock, models=self._models)
        self._recall_processes: RecallProcesses | None = None

    def _built(self, area: str) -> object | None:
        """The area named ``area`` if it was built, else None (without building it)."""
        return self.__dict__.get(area)

    @classmethod
    def open(
        cls,
        db_url: str | None = None,
        *,
        settings: Settings | None = None,
        embedder: Embedder | _Unset | None = UNSET,
        clock: Callable[[], datetime] = utcnow,
    ) -> Episodic:
        from episodic.store import open_store

        settings = settings or Settings.from_env()
        store = open_store(db_url or settings.db_url)
        return cls(store=store, embedder=embedder, settings=settings, clock=clock)

    # -- what every area shares --------------------------------------------------------
    @property
    def store(self) -> Store:
        return self._ctx.store

    def __repr__(self) -> str:
        # What a person printing it wants: which database (never its password), and
        # which embedder answers (None: keyword-only).
        from episodic.store.urls import display_url

        embedder = self._models.embedder
        model = None if embedder is None else embedder.model_id
        return f"Episodic({display_url(self._ctx.store.url)!r}, embedder={model!r})"

    @property
    def settings(self) -> Settings:
        return self._ctx.settings

    @property
    def clock(self) -> Callable[[], datetime]:
        return self._ctx.clock

    @clock.setter
    def clock(self, clock: Callable[[], datetime]) -> None:
        self._ctx.clock = clock

    @property
    def embedder(self) -> Embedder | None:
        """The configured embedder, created on first use; None means sparse-only."""
        return self._models.embedder

    @property
    def llm(self) -> LLM | None:
        """The configured LLM (EPISODIC_LLM_URL/MODEL), created on first use; None = the
        offline fallbacks run."""
        return self._models.llm

    # -- lifecycle ---------------------------------------------------------------------
    def recall_in_processes(self, count: int, *, nice: int = RECALL_NICE) -> bool:
        """Run recalls in ``count`` worker processes of their own from now on, at CPU
        priority lowered by ``nice`` (a server's: ``episodic.service.recall_processes``);
        0 stops them. False, with a log line, when workers cannot share this service's
        database (in memory) or models (objects that do not pickle): recalls stay here."""
        self._stop_recall_processes()
        if count <= 0:
            return False
        spec = self._worker_spec(nice)
        if spec is None:
            return False
        processes = RecallProcesses(spec, count)
        processes.start()
        self._recall_processes = processes
        self._recalling.recall_in_processes(processes)
        # Recalls yield the cores to writes; the indexer's backlog yields them to recalls,
        # as it did when they shared this process and its GIL.
        self._models.lower_indexing(spec.nice + INDEXING_BELOW_RECALLS)
        return True

    def _worker_spec(self, nice: int) -> WorkerSpec | None:
        """What recall processes open, or None (logged) when they cannot share this
        service's database (in memory) or its models (objects that do not pickle)."""
        url = self.store.url
        if url.endswith(":memory:"):
            log.info("recalls stay in the server's process: an in-memory database is not shared")
            return None
        embedder, llm = self._models.given
        nice = min(max(nice, 0), MAX_NICE)
        spec = WorkerSpec(type(self), url, self.settings, embedder, llm, nice)
        try:
            pickle.dumps(spec)
        except Exception as exc:  # any failure to pickle means the same
            log.warning("recalls stay in the server's process: its models do not pickle (%s)", exc)
            return None
        return spec

    def _stop_recall_processes(self) -> None:
        processes, self._recall_processes = self._recall_processes, None
        if self._built("_recalling") is not None:
            self._recalling.recall_in_processes(None)
        if processes is not None:
            processes.close()

    def close(self) -> None:
        self._stop_recall_processes()
        if self._built("_upkeep") is not None:  # one never used has no schedule running
            self._upkeep.stop()
        self._models.stop()
        self._ctx.store.close()

    def __enter__(self) -> Episodic:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def segment(
        self,
        *,
        flush: bool = False,
        workspace: str | None = None,
        conversation: str | None = None,
        outcome: str | None = None,
    ) -> SegmentReport:
        """``Writing.segment`` (pending messages into episodes; see there), then, when
        episodes were closed, the review job rates the recalls made in those
        conversations by what followed them (seed 003: reviews run when segmentation
        does, not only on the schedule), and a flashbulb among them is consolidated at
        once."""
        report = self._writing.segment(
            flush=flush, workspace=workspace, conversation=conversation, outcome=outcome
        )
        # Entries and learnings drawn from the episodes (and, sparse-only, every memory
        # written since) are checked for what they replace.
        self._check_quietly()
        if report.episodes:
            try:
                self._upkeep.run_reviews()
            except EpisodicError as exc:  # the episodes stand; the schedule retries reviews
                log.warning("reviews after segmentation did not run: %s", exc)
        if report.flashbulbs:
            # Seed 003: a flashbulb is consolidated when its episode is created, on every
            # path (a flush, a run's end), not at the next sweep or schedule.
            try:
                self.consolidate_if_due(workspace)
            except EpisodicError as exc:  # the episodes stand; the schedule retries
                log.warning("consolidation after a flashbulb did not run: %s", exc)
        return report

    def end_session(
        self,
        workspace: str,
        session: str,
        *,
        outcome: str | None = None,
        agent: str | None = None,
        crew: str | None = None,
    ) -> SessionEnd:
        """End a session: each memory its recalls returned (recalls made with
        ``review_conversation=session``, or narrowed to ``conversation=session``) is
        reinforced once (seed 001), and when the session is a conversation its pending
        messages become episodes now (``segment`` with ``flush``), each keeping
        ``outcome``. Ending it again reinforces only what was recalled since.

        ``agent`` ends it as that agent (``crew``, as that crew, when no agent is
        named): a session whose recalls not yet counted, or whose pending messages, were
        made as another agent (crew) or as none is refused with ``Forbidden`` naming the
        session, and nothing is written. Without either, any session of the workspace
        ends (an admin's end)."""
        for name, value in (("workspace", workspace), ("session", session)):
            if not isinstance(value, str) or not value.strip():
                raise InvalidInput(name, "required: the id, as text")
        for field, owner in (("agent", agent), ("crew", crew)):
            if owner is not None and (not isinstance(owner, str) or not owner.strip()):
                raise InvalidInput(field, "expected the id, as text, or none")
        # A server batches its recalls' marks: the session's last recalls are written
        # first. Reinforced before the episodes are written, as segmentation does: a
        # crash in between may delay the episodes, never lose the reinforcement.
        self._recalling.flush_marks()
        at = self.clock()
        self.may_end_session(workspace, session, agent=agent, crew=crew, at=at)
        reinforced = self._ctx.store.reinforce_session(
            workspace, session, at, by_agent=agent, by_crew=crew
        )
        report = self.segment(
            flush=True, workspace=workspace, conversation=session, outcome=outcome
        )
        from episodic.service.writing import SessionEnd

        return SessionEnd(session, report.episodes, reinforced)

    def may_end_session(
        self,
        workspace: str,
        session: str,
        *,
        agent: str | None = None,
        crew: str | None = None,
        at: datetime | None = None,
    ) -> None:
        """Raise ``Forbidden`` naming the session when ``end_session`` with the same
        ``agent`` / ``crew`` would be refused: a recall of it not yet counted (up to
        ``at``, default now) or a pending message of it was made as another agent
        (crew), or as none. Reads only; a run's end checks it before storing the run."""
        if agent is None and crew is None:
            return
        from episodic.store.sql import not_session_owner

        store = self._ctx.store
        # The pending messages become episodes with the end's outcome: they too must be
        # the caller's.
        pending = store.pending_messages(workspace, session)
        if agent is not None:
            foreign = any(m.agent != agent for m in pending)
        else:
            foreign = any(m.crew != crew for m in pending)
        when = self.clock() if at is None else at
        if foreign or not store.session_owned(
            workspace, session, when, by_agent=agent, by_crew=crew
        ):
            raise not_session_owner(session, agent)

    def end_session_as(
        self,
        caller: Principal,
        session: str,
        *,
        workspace: str | None = None,
        outcome: str | None = None,
    ) -> SessionEnd:
        """``end_session`` on behalf of an API key (or an MCP binding): an admin key
        ends any session of its workspace, a key bound to an agent only that agent's,
        one bound to a crew alone only that crew's; a key bound to neither may act as
        any agent, so it ends any session, as before keys were bound."""
        ws = caller.workspace(workspace)
        if caller.is_admin:
            return self.end_session(ws, session, outcome=outcome)
        return self.end_session(
            ws, session, outcome=outcome, agent=caller.key.agent_id, crew=caller.key.crew_id
        )

    def _segment_quietly(self) -> None:
        # The sweeper's follow-up: what was embedded is checked for what it replaces;
        # conversations idle past the hard gap become episodes without anyone flushing
        # them; a flashbulb among them is consolidated at once.
        self._check_quietly()
        report = self.segment()
        if report.episodes:
            self.consolidate_if_due()

    def index_once(self) -> SweepResult:
        """Embed everything pending now (``episodic index --once``; the CLI then runs
        ``segment``), then check what was written for older memories it replaces."""
        result = self._writing.index_once()
        self._check_quietly()
        return result

    def check_supersessions(self) -> CheckReport:
        """Check every memory written since the last check for older memories it
        replaces (``Superseding.check_pending``); the indexer's sweep, ``index_once``
        and ``segment`` run it."""
        return self._superseding.check_pending()

    def _check_quietly(self) -> None:
        try:
            self._superseding.check_pending()
        except EpisodicError as exc:  # what was written stands; the next sweep retries
            log.warning("supersession check did not run: %s", exc)

    def stats(self, workspace: str | None = None) -> StoreStats:
        return self._ctx.store.stats(workspace)

    def doctor(self, *, deep: bool = False) -> DoctorReport:
        """Check the database and the embedder. ``deep`` also checks that the keyword
        index, the vectors and the link tables agree with the journal and the memories
        (``Store.deep_check``; it reads every row)."""
        from episodic.service.doctor import run_doctor

        return run_doctor(self._ctx, deep=deep)

    # -- the models (episodic.service.models) ----------------------------------------
    embedder_status = Forward("_models", lambda: Models.embedder_status)
    warn_if_sparse_only = Forward("_models", lambda: Models.warn_if_sparse_only)
    recall_mode = Forward("_models", lambda: Models.recall_mode)
    indexer = Forward("_models", lambda: Models.indexer)
    batch_query_embeddings = Forward("_models", lambda: Models.batch_query_embeddings)

    # -- writing (episodic.service.writing) ------------------------------------------
    ingest = Forward("_writing", lambda: areas.Writing.ingest)
    ingest_lines = Forward("_writing", lambda: areas.Writing.ingest_lines)
    add_event = Forward("_writing", lambda: areas.Writing.add_event)
    add_message = Forward("_writing", lambda: areas.Writing.add_message)
    add_messages = Forward("_writing", lambda: areas.Writing.add_messages)
    episode_writer = Forward("_writing", lambda: areas.Writing.episode_writer)
    index_one = Forward("_writing", lambda: areas.Writing.index_one)
    index_one_in = Forward("_writing", lambda: areas.Writing.index_one_in)
    embed_ahead = Forward("_writing", lambda: areas.Writing.embed_ahead)
    start_indexer = Forward("_writing", lambda: areas.Writing.start_indexer)
    reindex = Forward("_writing", lambda: areas.Writing.reindex)

    # -- recalling (episodic.service.recalling) ----------------------------------------
    recall = Forward("_recalling", lambda: areas.Recalling.recall)
    render = Forward("_recalling", lambda: areas.Recalling.render)
    render_explained = Forward("_recalling", lambda: areas.Recalling.render_explained)
    mark_shown = Forward("_recalling", lambda: areas.Recalling.mark_shown)
    recent = Forward("_recalling", lambda: areas.Recalling.recent)
    recent_in = Forward("_recalling", lambda: areas.Recalling.recent_in)
    defer_marks = Forward("_recalling", lambda: areas.Recalling.defer_marks)
    flush_marks = Forward("_recalling", lambda: areas.Recalling.flush_marks)

    # -- upkeep (episodic.service.upkeep) ----------------------------------------------
    decay = Forward("_upkeep", lambda: areas.Upkeep.decay)
    review = Forward("_upkeep", lambda: areas.Upkeep.review)
    run_reviews = Forward("_upkeep", lambda: areas.Upkeep.run_reviews)
    consolidate = Forward("_upkeep", lambda: areas.Upkeep.consolidate)
    consolidate_if_due = Forward("_upkeep", lambda: areas.Upkeep.consolidate_if_due)
    compact = Forward("_upkeep", lambda: areas.Upkeep.compact)
    retire_phase = Forward("_upkeep", lambda: areas.Upkeep.retire_phase)
    archived_events = Forward("_upkeep", lambda: areas.Upkeep.archived_events)
    health_snapshot = Forward("_upkeep", lambda: areas.Upkeep.health_snapshot)
    memory_health = Forward("_upkeep", lambda: areas.Upkeep.memory_health)
    memory_nudge = Forward("_upkeep", lambda: areas.Upkeep.memory_nudge)
    scheduler = Forward("_upkeep", lambda: areas.Upkeep.scheduler)

    # -- operations (episodic.service.operations) --------------------------------------
    create_key = Forward("_operations", lambda: areas.Operations.create_key)
    list_keys = Forward("_operations", lambda: areas.Operations.list_keys)
    workspaces = Forward("_operations", lambda: areas.Operations.workspaces)
    revoke_key = Forward("_operations", lambda: areas.Operations.revoke_key)
    authenticate = Forward("_operations", lambda: areas.Operations.authenticate)
    sign_in = Forward("_operations", lambda: areas.Operations.sign_in)
    signed_in_caller = Forward("_operations", lambda: areas.Operations.signed_in_caller)
    sign_out = Forward("_operations", lambda: areas.Operations.sign_out)
    list_memories = Forward("_operations", lambda: areas.Operations.list_memories)
    count_memories = Forward("_operations", lambda: areas.Operations.count_memories)
    memory = Forward("_operations", lambda: areas.Operations.memory)
    memories = Forward("_operations", lambda: areas.Operations.memories)
    retire = Forward("_operations", lambda: areas.Operations.retire)
    retire_as = Forward("_operations", lambda: areas.Operations.retire_as)
    forget = Forward("_operations", lambda: areas.Operations.forget)
    forget_memory_as = Forward("_operations", lambda: areas.Operations.forget_memory_as)
    export_markdown = Forward("_operations", lambda: areas.Operations.export_markdown)
    import_markdown = Forward("_operations", lambda: areas.Operations.import_markdown)
    export_teaparty = Forward("_operations", lambda: areas.Operations.export_teaparty)
    import_teaparty = Forward("_operations", lambda: areas.Operations.import_teaparty)

    # -- editing (episodic.service.editing) --------------------------------------------
    update = Forward("_editing", lambda: areas.Editing.update)
    update_as = Forward("_editing", lambda: areas.Editing.update_as)
    history = Forward("_editing", lambda: areas.Editing.history)
    history_as = Forward("_editing", lambda: areas.Editing.history_as)
    remember = Forward("_operations", lambda: areas.Operations.remember)

    # -- supersession (episodic.service.superseding) -------------------------------------
    supersede = Forward("_superseding", lambda: areas.Superseding.supersede)
    supersede_as = Forward("_superseding", lambda: areas.Superseding.supersede_as)
    replaceable_as = Forward("_superseding", lambda: areas.Superseding.replaceable_as)
    supersessions = Forward("_superseding", lambda: areas.Superseding.supersessions)
    supersessions_as = Forward("_superseding", lambda: areas.Superseding.supersessions_as)

    # -- decisions (episodic.service.decisions) ------------------------------------------
    decisions = Forward("_decisions", lambda: areas.Decisions.decisions)
    decisions_as = Forward("_decisions", lambda: areas.Decisions.decisions_as)
    restore = Forward("_decisions", lambda: areas.Decisions.restore)
    restore_as = Forward("_decisions", lambda: areas.Decisions.restore_as)

    # -- the journal (episodic.service.journal) ----------------------------------------
    search_journal = Forward("_journal", lambda: areas.Journal.search_journal)
