"""``AsyncEpisodic``: ``Episodic`` for asyncio (and trio) code, in process.

Every method is the ``Episodic`` method of the same name, awaited: the call runs in a
worker thread (``anyio.to_thread.run_sync``) so that embedding with the model and
database work never block the event loop.

Running the sync service from worker threads is what it was built for: the HTTP server
already calls it from its thread pool while the indexer and upkeep run in threads of
their own. The SQLite store holds one connection opened with ``check_same_thread=False``
and serialises every transaction under a lock; the PostgreSQL store lends each
transaction a connection from its pool. Neither ties a connection to the thread that
opened it, so calls from any worker thread are safe.

    async with AsyncEpisodic.open("sqlite:///./.episodic/memory.db") as mem:
        await mem.remember("the user prefers tea", workspace="w")
        result = await mem.recall("what does the user drink?", workspace="w")
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Generator
from datetime import datetime
from types import TracebackType
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

import anyio.to_thread

from episodic.config import Settings
from episodic.embed.base import Embedder
from episodic.model import utcnow
from episodic.service import Episodic
from episodic.service.facade import Forward
from episodic.service.models import UNSET, _Unset

P = ParamSpec("P")
R = TypeVar("R")


async def in_thread(fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
    """``fn(*args, **kwargs)`` in a worker thread, awaited."""
    return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))


class Awaited(Generic[P, R]):
    """An ``AsyncEpisodic`` method that is the wrapped ``Episodic``'s method of the same
    name run in a worker thread: ``recall = Awaited(Episodic.recall)``. Type checkers see
    the sync method's parameters and an awaitable of its result."""

    @overload
    def __init__(self, method: Forward[Any, P, R]) -> None: ...

    @overload
    def __init__(self, method: Callable[Concatenate[Episodic, P], R]) -> None: ...

    def __init__(self, method: Forward[Any, P, R] | Callable[Concatenate[Episodic, P], R]) -> None:
        self.name = method.name if isinstance(method, Forward) else method.__name__
        self.__doc__ = method.__doc__

    @overload
    def __get__(self, obj: None, owner: type) -> Awaited[P, R]: ...

    @overload
    def __get__(self, obj: AsyncEpisodic, owner: type) -> Callable[P, Awaitable[R]]: ...

    def __get__(
        self, obj: AsyncEpisodic | None, owner: type
    ) -> Awaited[P, R] | Callable[P, Awaitable[R]]:
        if obj is None:
            return self
        method: Callable[P, R] = getattr(obj.sync, self.name)

        async def call(*args: P.args, **kwargs: P.kwargs) -> R:
            return await in_thread(method, *args, **kwargs)

        call.__name__ = self.name
        call.__doc__ = self.__doc__
        return call


class Opening:
    """What ``AsyncEpisodic.open`` returns: ``async with`` it (closed on exit), or
    ``await`` it (then ``await mem.aclose()``). The store is opened in a worker thread:
    opening migrates the schema, which is database work."""

    def __init__(self, open_sync: Callable[[], Episodic]) -> None:
        self._open_sync = open_sync
        self._mem: AsyncEpisodic | None = None

    async def _open(self) -> AsyncEpisodic:
        return AsyncEpisodic(await in_thread(self._open_sync))

    def __await__(self) -> Generator[Any, None, AsyncEpisodic]:
        return self._open().__await__()

    async def __aenter__(self) -> AsyncEpisodic:
        self._mem = await self._open()
        return self._mem

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._mem is not None:
            await self._mem.aclose()


class AsyncEpisodic:
    """``Episodic`` with every method awaited (see the module docstring). Wraps an open
    ``Episodic`` (``AsyncEpisodic(mem)``) or opens one (``AsyncEpisodic.open(url)``)."""

    def __init__(self, sync: Episodic) -> None:
        self.sync = sync

    @classmethod
    def open(
        cls,
        db_url: str | None = None,
        *,
        settings: Settings | None = None,
        embedder: Embedder | _Unset | None = UNSET,
        clock: Callable[[], datetime] = utcnow,
    ) -> Opening:
        return Opening(
            lambda: Episodic.open(db_url, settings=settings, embedder=embedder, clock=clock)
        )

    @property
    def settings(self) -> Settings:
        return self.sync.settings

    async def aclose(self) -> None:
        await in_thread(self.sync.close)

    async def close(self) -> None:
        await self.aclose()

    async def __aenter__(self) -> AsyncEpisodic:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    segment = Awaited(Episodic.segment)
    end_session = Awaited(Episodic.end_session)
    end_session_as = Awaited(Episodic.end_session_as)
    may_end_session = Awaited(Episodic.may_end_session)
    stats = Awaited(Episodic.stats)
    doctor = Awaited(Episodic.doctor)

    # -- the models ----------------------------------------------------------------------
    embedder_status = Awaited(Episodic.embedder_status)
    warn_if_sparse_only = Awaited(Episodic.warn_if_sparse_only)
    recall_mode = Awaited(Episodic.recall_mode)
    indexer = Awaited(Episodic.indexer)
    batch_query_embeddings = Awaited(Episodic.batch_query_embeddings)

    # -- writing -------------------------------------------------------------------------
    ingest = Awaited(Episodic.ingest)
    ingest_lines = Awaited(Episodic.ingest_lines)
    add_event = Awaited(Episodic.add_event)
    add_message = Awaited(Episodic.add_message)
    add_messages = Awaited(Episodic.add_messages)
    episode_writer = Awaited(Episodic.episode_writer)
    index_once = Awaited(Episodic.index_once)
    index_one = Awaited(Episodic.index_one)
    index_one_in = Awaited(Episodic.index_one_in)
    start_indexer = Awaited(Episodic.start_indexer)
    reindex = Awaited(Episodic.reindex)
    check_supersessions = Awaited(Episodic.check_supersessions)

    # -- recalling -----------------------------------------------------------------------
    recall = Awaited(Episodic.recall)
    render = Awaited(Episodic.render)
    render_explained = Awaited(Episodic.render_explained)
    mark_shown = Awaited(Episodic.mark_shown)
    recent = Awaited(Episodic.recent)
    recent_in = Awaited(Episodic.recent_in)
    defer_marks = Awaited(Episodic.defer_marks)
    flush_marks = Awaited(Episodic.flush_marks)
    recall_in_processes = Awaited(Episodic.recall_in_processes)

    # -- upkeep --------------------------------------------------------------------------
    decay = Awaited(Episodic.decay)
    review = Awaited(Episodic.review)
    run_reviews = Awaited(Episodic.run_reviews)
    consolidate = Awaited(Episodic.consolidate)
    consolidate_if_due = Awaited(Episodic.consolidate_if_due)
    compact = Awaited(Episodic.compact)
    retire_phase = Awaited(Episodic.retire_phase)
    archived_events = Awaited(Episodic.archived_events)
    health_snapshot = Awaited(Episodic.health_snapshot)
    memory_health = Awaited(Episodic.memory_health)
    memory_nudge = Awaited(Episodic.memory_nudge)
    scheduler = Awaited(Episodic.scheduler)

    # -- operations ----------------------------------------------------------------------
    create_key = Awaited(Episodic.create_key)
    list_keys = Awaited(Episodic.list_keys)
    workspaces = Awaited(Episodic.workspaces)
    revoke_key = Awaited(Episodic.revoke_key)
    authenticate = Awaited(Episodic.authenticate)
    sign_in = Awaited(Episodic.sign_in)
    signed_in_caller = Awaited(Episodic.signed_in_caller)
    sign_out = Awaited(Episodic.sign_out)
    list_memories = Awaited(Episodic.list_memories)
    memory = Awaited(Episodic.memory)
    memories = Awaited(Episodic.memories)
    retire = Awaited(Episodic.retire)
    retire_as = Awaited(Episodic.retire_as)
    remember = Awaited(Episodic.remember)
    forget = Awaited(Episodic.forget)
    forget_memory_as = Awaited(Episodic.forget_memory_as)
    export_markdown = Awaited(Episodic.export_markdown)
    import_markdown = Awaited(Episodic.import_markdown)
    export_teaparty = Awaited(Episodic.export_teaparty)
    import_teaparty = Awaited(Episodic.import_teaparty)

    # -- editing -------------------------------------------------------------------------
    update = Awaited(Episodic.update)
    update_as = Awaited(Episodic.update_as)
    history = Awaited(Episodic.history)
    history_as = Awaited(Episodic.history_as)

    # -- decisions -----------------------------------------------------------------------
    decisions = Awaited(Episodic.decisions)
    decisions_as = Awaited(Episodic.decisions_as)
    restore = Awaited(Episodic.restore)
    restore_as = Awaited(Episodic.restore_as)

    # -- the journal ---------------------------------------------------------------------
    search_journal = Awaited(Episodic.search_journal)
