"""Per-request timings inside an `episodic serve` process, for bench_load_timings.py.

Python imports ``sitecustomize`` at start-up from the path; bench_load_timings.py puts this
folder on ``PYTHONPATH`` of the load driver, whose server inherits it. Nothing happens
unless the process is a server (``serve`` in its arguments) and ``EPISODIC_TIMINGS_OUT``
names a file. Then every HTTP request appends one JSON line to that file: its path,
status, total milliseconds, and what it spent in each step named below (summed when a step
runs more than once). The wrappers slow every request a little; compare runs that both
have them.

Steps: ``auth`` (``Episodic.authenticate``), ``write_slot_wait`` / ``recall_slot_wait``
(waiting for a lane's slot), ``service`` (the write methods of ``Episodic``), and of a
note: ``embed_ahead`` (its embedding before it takes a slot), ``index_one`` (storing its
vector) and ``supersession`` (checking what it replaces),
``reader_wait`` (SQLite: waiting for a read connection), ``writer_wait`` /
``writer_hold`` (SQLite: taking and holding the writer), ``checkpoint`` (SQLite: ``PRAGMA
wal_checkpoint``). Every 100th heartbeat of the event loop (a callback every 50 ms) also
writes a line ``{"lag": [...]}``: milliseconds from scheduling it to its run.
"""

from __future__ import annotations

import os
import sys

OUT_ENV = "EPISODIC_TIMINGS_OUT"


def _install(out_path: str) -> None:
    import asyncio
    import contextvars
    import json
    import threading
    import time
    from collections.abc import AsyncIterator, Callable, Iterator
    from contextlib import asynccontextmanager, contextmanager
    from typing import Any

    import episodic.http as http_package
    import episodic.http.app as http_app
    from episodic.http.limits import Lane
    from episodic.service import Episodic
    from episodic.service.superseding import Superseding
    from episodic.service.writing import Writing
    from episodic.store.sqlite.connection import SqliteBase

    record: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
        "episodic_timings", default=None
    )
    out = open(out_path, "a", buffering=1)  # noqa: SIM115 - open for the process's life
    write_lock = threading.Lock()

    def emit(line: dict[str, Any]) -> None:
        with write_lock:
            out.write(json.dumps(line) + "\n")

    def add(step: str, seconds: float) -> None:
        current = record.get()
        if current is not None:
            current[step] = current.get(step, 0.0) + seconds * 1000

    def timed(cls: type, name: str, step: str) -> None:
        # The attribute as the class holds it (a function, or the service's forwarding
        # descriptor), bound at call time.
        original = next(k.__dict__[name] for k in cls.__mro__ if name in k.__dict__)

        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return original.__get__(self, cls)(*args, **kwargs)
            finally:
                add(step, time.perf_counter() - start)

        setattr(cls, name, wrapper)

    timed(Episodic, "authenticate", "auth")
    for name in ("ingest", "add_message", "add_messages", "remember", "forget"):
        timed(Episodic, name, "service")
    timed(Writing, "embed_ahead", "embed_ahead")
    timed(Writing, "index_one", "index_one")
    timed(Superseding, "check_memory", "supersession")
    timed(SqliteBase, "_borrow_reader", "reader_wait")

    original_write = SqliteBase._write

    @contextmanager
    def write(self: Any) -> Iterator[None]:
        start = time.perf_counter()
        with original_write(self):
            held = time.perf_counter()
            add("writer_wait", held - start)
            try:
                yield
            finally:
                add("writer_hold", time.perf_counter() - held)

    SqliteBase._write = write  # type: ignore[method-assign]

    original_execute = SqliteBase._execute

    def execute(self: Any, sql: str, params: Any = ()) -> Any:
        if "wal_checkpoint" not in sql:
            return original_execute(self, sql, params)
        start = time.perf_counter()
        try:
            return original_execute(self, sql, params)
        finally:
            add("checkpoint", time.perf_counter() - start)

    SqliteBase._execute = execute  # type: ignore[method-assign]

    original_slot = Lane.slot

    @asynccontextmanager
    async def slot(self: Lane) -> AsyncIterator[None]:
        start = time.perf_counter()
        async with original_slot(self):
            add(f"{self.kind}_slot_wait", time.perf_counter() - start)
            yield

    Lane.slot = slot  # type: ignore[method-assign]

    original_run = Lane.run

    async def run(self: Lane, work: Callable[[], Any]) -> Any:
        start = time.perf_counter()

        def started() -> Any:
            add(f"{self.kind}_slot_wait", time.perf_counter() - start)
            return work()

        return await original_run(self, started)

    Lane.run = run  # type: ignore[method-assign]

    def heartbeat(loop: asyncio.AbstractEventLoop) -> None:
        lags: list[float] = []
        while not loop.is_closed():
            start = time.perf_counter()
            ran = threading.Event()
            try:
                loop.call_soon_threadsafe(ran.set)
            except RuntimeError:
                return  # the loop closed between the check and the call
            if not ran.wait(5):
                continue
            lags.append((time.perf_counter() - start) * 1000)
            if len(lags) == 100:
                emit({"lag": lags})
                lags = []
            time.sleep(0.05)

    original_asgi = http_app.asgi

    def asgi(mem: Episodic, **kwargs: Any) -> Any:
        app = original_asgi(mem, **kwargs)
        beating: list[bool] = []

        async def timed_app(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            if not beating:
                beating.append(True)
                loop = asyncio.get_running_loop()
                threading.Thread(target=heartbeat, args=(loop,), daemon=True).start()
            line: dict[str, Any] = {"path": scope["path"], "method": scope["method"]}
            token = record.set(line)
            start = time.perf_counter()

            async def sent(message: Any) -> None:
                if message["type"] == "http.response.start":
                    line["status"] = message["status"]
                await send(message)

            try:
                await app(scope, receive, sent)
            finally:
                line["total"] = (time.perf_counter() - start) * 1000
                record.reset(token)
                emit(line)

        return timed_app

    http_app.asgi = asgi
    http_package.asgi = asgi  # type: ignore[attr-defined]


if os.environ.get(OUT_ENV) and "serve" in sys.argv:
    _install(os.environ[OUT_ENV])
