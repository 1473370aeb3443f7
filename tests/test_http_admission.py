"""Load on one server, as a caller sees it (real uvicorn on a free port): a write is
answered at once while every recall slot is busy and a long line of recalls waits; the
server stays responsive meanwhile; queued recalls run in the order they came; a recall
the line would keep too long is refused with 503, ``Retry-After`` and the ``overloaded``
JSON error, which ``episodic.Client`` waits out and retries; a flood of writes waits in
its own line, then is shed the same way, while recalls go on. Recalls are made slow by an
embedder that holds each query until the test lets it go, writes by a store that holds
them, not by sleeps."""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import httpx
import pytest

from episodic import Client, Episodic, Settings
from episodic.embed.base import Matrix
from episodic.embed.fake import FakeEmbedder
from episodic.errors import InvalidInput
from episodic.http import Lane, asgi
from episodic.http.limits import GIL_SWITCH_INTERVAL_S, env_number, expected_wait, retry_after
from episodic.priority import MAX_NICE
from episodic.service.models import MODE_PROBE_WAIT_S
from episodic.store import Store, open_store
from servers import serve

WS = "acme"
# More recalls than Starlette's shared thread pool has threads (40): were a waiting recall
# to hold one, the write below would wait behind them.
LINE = 48


class HeldEmbedder:
    """The fake embedder, except that while ``held`` each query waits until ``release``;
    it records the texts in the order they reached it."""

    def __init__(self) -> None:
        self.inner = FakeEmbedder(dim=32)
        self.open = threading.Event()
        self.open.set()
        self.seen: list[str] = []
        self.priority: dict[str, int] = {}  # text -> the nice of the thread that embedded it

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def hold(self) -> None:
        self.open.clear()

    def release(self) -> None:
        self.open.set()

    def embed_batch(self, texts: Sequence[str]) -> Matrix:
        self.seen.extend(texts)
        nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        self.priority.update(dict.fromkeys(texts, nice))
        assert self.open.wait(60), "the test never released the embedder"
        return self.inner.embed_batch(texts)


class HeldStore:
    """A store whose ``append`` (every write of events, messages and notes) waits while
    ``held``; everything else goes straight to the real store."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.open = threading.Event()
        self.open.set()

    def append(self, *args: Any, **kwargs: Any) -> Any:
        assert self.open.wait(60), "the test never released the store"
        return self.inner.append(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@dataclass(frozen=True)
class Served:
    base: str  # the server's URL
    key: str  # an admin key of the workspace
    recalls: Lane
    writes: Lane
    store: HeldStore


@contextmanager
def server(db_url: str, embedder: HeldEmbedder, **limits: Any) -> Iterator[Served]:
    """A server over a workspace with a few indexed memories."""
    store = HeldStore(open_store(db_url))
    mem = Episodic(store=cast(Store, store), embedder=embedder, settings=Settings())
    try:
        secret = mem.create_key(WS, role="admin")[1]
        mem.ingest(
            [
                {
                    "id": f"seed-{i}",
                    "workspace": WS,
                    "type": "peer.escalation",
                    "summary": f"the payments rollout number {i} needed a second approval",
                }
                for i in range(5)
            ]
        )
        mem.index_once()
        app = asgi(mem, **limits)
        state = app.app.state
        with serve(app) as base:
            yield Served(base, secret, state.recalls, state.writes, store)
    finally:
        embedder.release()
        store.open.set()
        mem.close()


def sqlite(folder: Path) -> str:
    return f"sqlite:///{folder}/m.db"


def post(base: str, secret: str, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(
        f"{base}{path}", json=body, headers={"Authorization": f"Bearer {secret}"}, timeout=60
    )


def recall(base: str, secret: str, query: str) -> httpx.Response:
    return post(base, secret, "/v1/recall", {"query": query, "k": 3})


def wait_until(what: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, "the server never got there"
        time.sleep(0.01)


def line_of(queue: Lane, running: int, waiting: int) -> Callable[[], bool]:
    def there() -> bool:
        stats = queue.limiter().statistics()
        return stats.borrowed_tokens == running and stats.tasks_waiting == waiting

    return there


def test_a_write_is_answered_at_once_while_recalls_fill_every_slot_and_a_line_waits(
    db_url: str,
) -> None:
    embedder = HeldEmbedder()
    with (
        server(db_url, embedder, recall_slots=2, recall_max_wait_s=600) as srv,
        ThreadPoolExecutor(LINE) as pool,
    ):
        embedder.hold()
        recalls = [
            pool.submit(recall, srv.base, srv.key, f"rollout question {i}") for i in range(LINE)
        ]
        wait_until(line_of(srv.recalls, 2, LINE - 2))
        start = time.perf_counter()
        written = post(
            srv.base,
            srv.key,
            "/v1/events",
            {"events": [{"id": "w-1", "type": "peer.escalation", "summary": "a new fact"}]},
        )
        write_s = time.perf_counter() - start
        start = time.perf_counter()
        alive = httpx.get(f"{srv.base}/healthz", timeout=10)
        health_s = time.perf_counter() - start
        embedder.release()
        answers = [f.result(60) for f in recalls]
    assert written.status_code == 200 and written.json()["stored"] == 1
    assert write_s < 1.0, f"the write waited {write_s:.2f} s behind the recalls"
    # /healthz probes the embedder (held here, like the recalls) and waits for the probe
    # MODE_PROBE_WAIT_S at most before answering the last state: never behind the line.
    assert alive.status_code == 200 and health_s < MODE_PROBE_WAIT_S + 0.5
    assert [a.status_code for a in answers] == [200] * LINE


def test_queued_recalls_run_in_the_order_they_came(tmp_path: Path) -> None:
    embedder = HeldEmbedder()
    with (
        server(
            f"sqlite:///{tmp_path}/m.db", embedder, recall_slots=1, recall_max_wait_s=600
        ) as srv,
        ThreadPoolExecutor(8) as pool,
    ):
        embedder.hold()
        embedder.seen.clear()
        answers: list[Future[httpx.Response]] = []
        for i in range(8):
            answers.append(pool.submit(recall, srv.base, srv.key, f"approval order{i}"))
            # The next one is sent only once this one is running or in line.
            wait_until(line_of(srv.recalls, 1, i))
        embedder.release()
        statuses = [f.result(60).status_code for f in answers]
    order = [int(m.group(1)) for t in embedder.seen if (m := re.search(r"order(\d+)", t))]
    assert statuses == [200] * 8
    assert order == list(range(8))


def test_a_recall_the_line_would_keep_too_long_gets_503_and_retry_after(tmp_path: Path) -> None:
    embedder = HeldEmbedder()
    with (
        server(
            f"sqlite:///{tmp_path}/m.db", embedder, recall_slots=1, recall_max_wait_s=1.0
        ) as srv,
        ThreadPoolExecutor(6) as pool,
    ):
        srv.recalls.service_s = 0.2  # so the line may hold five: (5 + 1) x 0.2 s is over 1 s
        embedder.hold()
        admitted = [pool.submit(recall, srv.base, srv.key, f"rollout {i}") for i in range(6)]
        wait_until(line_of(srv.recalls, 1, 5))
        refused = recall(srv.base, srv.key, "one too many")
        embedder.release()
        statuses = [f.result(60).status_code for f in admitted]
    assert refused.status_code == 503
    assert int(refused.headers["Retry-After"]) >= 1
    error = refused.json()["error"]
    assert error["code"] == "overloaded" and "recalls waiting" in error["message"]
    assert statuses == [200] * 6
    assert srv.recalls.shed == 1


def test_the_client_waits_out_a_503_and_its_retry_succeeds(db_url: str) -> None:
    embedder = HeldEmbedder()
    with (
        server(db_url, embedder, recall_slots=1, recall_max_wait_s=0.05) as srv,
        ThreadPoolExecutor(2) as pool,
        Client(srv.base, srv.key) as client,
    ):
        srv.recalls.service_s = 0.2
        embedder.hold()
        first = pool.submit(recall, srv.base, srv.key, "rollout first")
        wait_until(line_of(srv.recalls, 1, 0))
        second = pool.submit(client.recall, "rollout second")
        wait_until(lambda: srv.recalls.shed >= 1)
        embedder.release()  # the slot frees before the Retry-After second is over
        result = second.result(60)
        assert first.result(60).status_code == 200
    assert any(h.id.startswith("seed-") for h in result.hits)


def note(i: int) -> dict[str, Any]:
    return {"content": f"the rollout of service {i} is done", "id": f"note-{i}"}


def test_a_flood_of_writes_waits_in_line_then_is_shed_and_reads_still_pass(
    tmp_path: Path,
) -> None:
    embedder = HeldEmbedder()
    with (
        server(sqlite(tmp_path), embedder, write_slots=1, write_max_wait_s=1.0) as srv,
        ThreadPoolExecutor(6) as pool,
    ):
        srv.writes.service_s = 0.2  # so the line may hold five: (5 + 1) x 0.2 s is over 1 s
        srv.store.open.clear()  # the store takes no write until the test says so
        writes = [pool.submit(post, srv.base, srv.key, "/v1/memories", note(i)) for i in range(6)]
        wait_until(line_of(srv.writes, 1, 5))
        refused = post(srv.base, srv.key, "/v1/memories", note(6))
        start = time.perf_counter()
        read = recall(srv.base, srv.key, "payments rollout")
        read_s = time.perf_counter() - start
        srv.store.open.set()
        statuses = [f.result(60).status_code for f in writes]
        retried = post(srv.base, srv.key, "/v1/memories", note(6))
    assert refused.status_code == 503 and int(refused.headers["Retry-After"]) >= 1
    error = refused.json()["error"]
    assert error["code"] == "overloaded" and "writes waiting" in error["message"]
    assert read.status_code == 200 and read.json()["hits"] and read_s < 1.0
    assert statuses == [201] * 6
    assert retried.status_code == 201


def test_a_note_is_embedded_before_it_takes_a_write_slot(db_url: str) -> None:
    # One write slot; the note's embedding is held. An event written meanwhile must be
    # answered before the embedding is let go: before, the note held the only slot
    # while it embedded, and every write waited behind it.
    embedder = HeldEmbedder()
    text = "the payments rollout now needs a second approval on fridays"
    with (
        server(db_url, embedder, write_slots=1, write_max_wait_s=600) as srv,
        ThreadPoolExecutor(1) as pool,
    ):
        embedder.hold()
        noted = pool.submit(post, srv.base, srv.key, "/v1/memories", {"content": text})
        wait_until(lambda: text in embedder.seen)
        watchdog = threading.Timer(5.0, embedder.release)
        watchdog.start()
        written = post(
            srv.base,
            srv.key,
            "/v1/events",
            {"events": [{"id": "w-1", "type": "peer.escalation", "summary": "a new fact"}]},
        )
        held = not embedder.open.is_set()
        watchdog.cancel()
        embedder.release()
        note = noted.result(60)
    assert written.status_code == 200 and written.json()["stored"] == 1
    assert held, "the event waited for the note's embedding"
    assert note.status_code == 201 and note.json()["content"] == text
    # Embedded once: the write found the vector its embedding ahead had cached.
    assert embedder.seen.count(text) == 1


def test_a_note_embedded_ahead_is_not_embedded_again_and_a_failure_is_left_to_the_write(
    tmp_path: Path,
) -> None:
    embedder = HeldEmbedder()
    mem = Episodic(store=open_store(sqlite(tmp_path)), embedder=embedder, settings=Settings())
    try:
        mem.embed_ahead("rotate the signing keys every quarter")
        mem.embed_ahead("   ")  # nothing to embed: the write will say what is wrong
        mem.embed_ahead(42)
        memory = mem.remember("rotate the signing keys every quarter", workspace=WS)
        assert embedder.seen == ["rotate the signing keys every quarter"]
        hits = mem.recall("signing keys", workspace=WS, mark=False).hits
        assert [h.id for h in hits] == [memory.id] and hits[0].cosine is not None
    finally:
        mem.close()


@pytest.mark.parametrize(
    ("waiting", "busy", "slots", "service_s", "expected"),
    [
        (0, 0, 4, 0.5, 0.0),  # a free slot: no wait
        (0, 3, 4, 0.5, 0.0),
        (0, 4, 4, 0.5, 0.125),  # all busy: a quarter of a recall, on average
        (7, 4, 4, 0.5, 1.0),  # eight ahead over four slots: two rounds
        (3, 1, 1, 0.2, 0.8),
    ],
)
def test_the_expected_wait_is_the_line_over_the_slots_times_a_recall(
    waiting: int, busy: int, slots: int, service_s: float, expected: float
) -> None:
    assert expected_wait(waiting, busy, slots, service_s) == pytest.approx(expected)


@pytest.mark.parametrize(("wait_s", "seconds"), [(0.0, 1), (0.2, 1), (1.0, 1), (1.01, 2), (7.5, 8)])
def test_retry_after_is_whole_seconds_and_at_least_one(wait_s: float, seconds: int) -> None:
    assert retry_after(wait_s) == seconds


def test_a_lane_without_slots_is_refused_naming_the_field() -> None:
    with pytest.raises(InvalidInput, match="slots"):
        Lane("recall", 0, 1.0, 0.1)


@pytest.mark.parametrize("raw", ["many", "0", "-2"])
def test_a_bad_bound_in_the_environment_is_named(raw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EPISODIC_RECALL_SLOTS", raw)
    with pytest.raises(InvalidInput, match="EPISODIC_RECALL_SLOTS"):
        env_number("EPISODIC_RECALL_SLOTS", 4)
    monkeypatch.setenv("EPISODIC_RECALL_SLOTS", "6")
    assert env_number("EPISODIC_RECALL_SLOTS", 4) == 6


def test_recalls_run_at_a_lower_cpu_priority_than_writes(db_url: str) -> None:
    # Two cores shared by recalls and writes: the scheduler must run a write's thread
    # before the recalls' threads, so a write does not wait out their time slices.
    embedder = HeldEmbedder()
    own = os.getpriority(os.PRIO_PROCESS, 0)
    with server(db_url, embedder, recall_nice=10) as srv:
        assert recall(srv.base, srv.key, "who approved the payments rollout").status_code == 200
        note = {"workspace": WS, "content": "the rollout moved to Thursday"}
        assert post(srv.base, srv.key, "/v1/memories", note).status_code == 201
    assert embedder.priority["who approved the payments rollout"] == min(MAX_NICE, own + 10)
    assert embedder.priority["the rollout moved to Thursday"] == own


def test_a_server_started_again_runs_recalls_on_new_threads(db_url: str) -> None:
    embedder = HeldEmbedder()
    for query in ("first run", "second run"):
        with server(db_url, embedder, recall_nice=10) as srv:
            assert recall(srv.base, srv.key, query).status_code == 200
            assert srv.recalls.nice == 10
    assert embedder.seen.count("second run") == 1


def test_while_serving_threads_take_the_gil_from_one_another_every_millisecond(
    db_url: str,
) -> None:
    # A write's handler takes the GIL back after each store call: with Python's 5 ms, it
    # waited that long each time behind a thread running Python without pause.
    before = sys.getswitchinterval()
    assert before != pytest.approx(GIL_SWITCH_INTERVAL_S)
    with server(db_url, HeldEmbedder()) as srv:
        assert sys.getswitchinterval() == pytest.approx(GIL_SWITCH_INTERVAL_S) == 0.001
        written = post(
            srv.base,
            srv.key,
            "/v1/events",
            {"events": [{"id": "w-1", "type": "peer.escalation", "summary": "a new fact"}]},
        )
        assert written.status_code == 200
    assert sys.getswitchinterval() == before  # the process's own again once it stops
