"""``episodic.Client`` and ``episodic.AsyncClient`` against a real server (uvicorn on a
free port) over a real database, on SQLite and on PostgreSQL: the same calls give the
same results as the in-process ``Episodic``, error bodies come back as the exceptions
``Episodic`` raises, and a 503 with ``Retry-After`` is retried as the header says."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest

from episodic import AsyncClient, Client, Episodic, Settings
from episodic.client import Episode
from episodic.embed.fake import FakeEmbedder
from episodic.errors import (
    Forbidden,
    InvalidInput,
    NotFound,
    StoreBusy,
    Unauthenticated,
    UnknownPolicy,
)
from episodic.http import asgi
from episodic.model import Event, Memory, ScopeFilter
from episodic.recall.engine import RecallResult
from episodic.service import memory_json, version_json
from episodic.service.decisions import Decision
from episodic.service.editing import Version
from episodic.service.writing import IngestReport, MessagesReport
from episodic.store import open_store
from episodic.store.service import ForgetCounts
from episodic.store.supersession import Supersession
from episodic.upkeep.health import HealthView
from episodic.write.indexer import SweepResult
from servers import serve

WS = "acme"
NOW = datetime(2026, 5, 4, 12, 0, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def mem(db_url: str) -> Iterator[Episodic]:
    m = Episodic(
        store=open_store(db_url),
        embedder=FakeEmbedder(dim=64),
        settings=Settings(),
        clock=lambda: NOW,
    )
    yield m
    m.close()


@pytest.fixture
def server(mem: Episodic) -> Iterator[tuple[str, str]]:
    """The server's URL and an admin key of ``WS``."""
    secret = mem.create_key(WS, role="admin")[1]
    with serve(asgi(mem)) as base:
        yield base, secret


# -- parity: one script, three ways to run it ------------------------------------------
@dataclass(frozen=True)
class Step:
    """One call of the script: ``method(*args, **kwargs)``; ``python_only`` is what only
    the in-process API takes (its workspace, which a key decides over HTTP)."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    python_only: dict[str, Any] = field(default_factory=dict)


EVENTS = [
    {
        "id": "ev-1",
        "workspace": WS,
        "ts": "2026-05-01T09:00:00+00:00",
        "type": "approval.denied",
        "summary": "rollback of the payments service was denied without a ticket",
    },
    {"id": "ev-2", "workspace": WS, "ts": "not a time", "type": "approval.denied"},
    {
        "id": "ev-3",
        "workspace": WS,
        "ts": "2026-05-01T10:00:00+00:00",
        "type": "network.flow",
        "summary": "bytes went out",
    },
]
ONE = {"workspace": WS}
SCRIPT = [
    Step("ingest", (EVENTS,)),
    Step(
        "add_message",
        ("the deploy of payments needs the VPN up",),
        {
            "conversation": "c-1",
            "role": "user",
            "agent": "ops",
            "id": "msg-1",
            "ts": "2026-05-02T08:00:00+00:00",
            **ONE,
        },
    ),
    Step(
        "add_messages",
        (
            [
                {
                    "content": "noted, VPN first",
                    "role": "assistant",
                    "ts": "2026-05-02T08:01:00Z",
                    "id": "msg-2",
                },
                {"content": "", "role": "user"},
                {
                    "content": "then the payments deploy",
                    "id": "msg-3",
                    "ts": "2026-05-02T08:02:00Z",
                },
            ],
        ),
        {"conversation": "c-1", "agent": "ops", **ONE},
    ),
    Step(
        "remember",
        ("payments deploys need a change ticket and the VPN",),
        {"id": "m-1", "agent": "ops", "type": "note", "importance": 0.8, **ONE},
    ),
    Step("index_once"),
    Step("recall", ("payments deploy VPN",), {"mark": False, "k": 5, **ONE}),
    Step("render", ("payments deploy VPN",), {"mark": False, "max_chars": 2000, **ONE}),
    Step(
        "update",
        ("m-1",),
        {"content": "payments deploys need a change ticket, the VPN and a token"},
        python_only=ONE,
    ),
    Step("update", ("m-1",), {"importance": 0.3}, python_only=ONE),
    Step("history", ("m-1",), python_only=ONE),
    Step(
        "recall", ("change ticket token",), {"mark": False, "agent": "ops", "explain": True, **ONE}
    ),
    # Another agent's note (so the check on write leaves m-1 alone), then named as m-1's
    # replacement: m-1 leaves default recall and comes back with include_superseded.
    Step("remember", ("payments deploys now need a hardware token",), {"id": "m-2", **ONE}),
    Step("supersede", ("m-1", "m-2"), {"reason": "tokens are hardware now"}, python_only=ONE),
    Step("supersessions", ("m-2",), python_only=ONE),
    Step("recall", ("change ticket token",), {"mark": False, **ONE}),
    Step("recall", ("change ticket token",), {"mark": False, "include_superseded": True, **ONE}),
    Step("recall", ("change ticket token",), {"mark": False, "as_of": NOW, **ONE}),
    # The replacement undone: m-1 is back in default recall, and its decisions say so.
    Step("restore", ("m-1",), python_only=ONE),
    Step("decisions", ("m-1",), python_only=ONE),
    Step("recall", ("change ticket token",), {"mark": False, **ONE}),
    Step("forget", (), {"memory": "m-1", **ONE}),
    Step("recall", ("change ticket token",), {"mark": False, **ONE}),
]


def view(result: Any) -> Any:
    """A result as plain data, to compare across the three ways."""
    if isinstance(result, IngestReport | MessagesReport | ForgetCounts):
        return result.to_json()
    if isinstance(result, Memory):
        return memory_json(result)
    if isinstance(result, Event):
        return (
            result.id,
            result.workspace,
            result.ts,
            result.type,
            result.summary,
            dict(result.payload),
            result.conversation,
            result.agent,
        )
    if isinstance(result, RecallResult):
        trace = None if result.trace is None else result.trace.to_json()
        hits = [h.to_json() for h in result.hits]
        return (hits, result.mode, result.policy, result.warnings, trace)
    if isinstance(result, list) and all(isinstance(v, Version) for v in result):
        # Who wrote a version: "python" in process, the key's id over HTTP.
        return [
            {
                **version_json(v),
                "written_by": v.written_by is not None,
                "replaced_by": v.replaced_by is not None,
            }
            for v in result
        ]
    if isinstance(result, list) and all(isinstance(v, Supersession) for v in result):
        # Who decided: "explicit" in process, "explicit:<key id>" over HTTP.
        return [
            {**link.to_json(), "decided_by": link.decided_by.startswith("explicit")}
            for link in result
        ]
    if isinstance(result, list) and all(isinstance(v, Decision) for v in result):
        # Who restored: "python" in process, the key's id over HTTP.
        return [
            {
                **d.to_json(),
                "decided_by": "explicit" if d.decided_by.startswith("explicit") else d.decided_by,
                "reverted_by": d.reverted_by is not None,
            }
            for d in result
        ]
    if isinstance(result, SweepResult):
        return result.embedded
    if isinstance(result, str | type(None)):
        return result
    raise AssertionError(f"no view of {type(result)}")


def step_call(
    target: Any, mem: Episodic, step: Step, in_process: bool
) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    if step.method == "index_once":  # the indexer runs in the server, not in a client
        return mem.index_once, (), {}
    kwargs = {**step.kwargs, **(step.python_only if in_process else {})}
    return getattr(target, step.method), step.args, kwargs


def run_sync(target: Any, mem: Episodic, in_process: bool) -> list[Any]:
    out = []
    for step in SCRIPT:
        fn, args, kwargs = step_call(target, mem, step, in_process)
        out.append(view(fn(*args, **kwargs)))
    fresh(mem)
    return out


def fresh(mem: Episodic) -> None:
    """Empty the workspace for the next run, and drop the document counts the sparse leg
    caches for a few seconds: the next run's scores must not depend on how soon it
    starts after this one."""
    mem.forget(workspace=WS, all=True)
    mem.store._sparse_counts = None  # type: ignore[attr-defined]


def run_async(base: str, key: str, mem: Episodic) -> list[Any]:
    async def script() -> list[Any]:
        out = []
        async with AsyncClient(base, key) as client:
            for step in SCRIPT:
                fn, args, kwargs = step_call(client, mem, step, False)
                result = fn(*args, **kwargs)
                if step.method != "index_once":
                    result = await result
                out.append(view(result))
        return out

    try:
        return anyio.run(script)
    finally:
        fresh(mem)


def test_the_clients_give_what_episodic_gives(mem: Episodic, server: tuple[str, str]) -> None:
    base, key = server
    in_process = run_sync(mem, mem, True)
    with Client(base, key) as client:
        over_http = run_sync(client, mem, False)
    awaited = run_async(base, key, mem)

    # The script does something worth comparing: events stored and refused, a message
    # batch with a bad item, hits before and after the edit, the edit's history, a
    # replacement and the replaced memory shown again only when asked for.
    ingest, _, batch, remembered, _, first, block, _, edited, versions, second = in_process[:11]
    _, replacing, links, current, both, _, restored, decided, back, gone, after = in_process[11:]
    assert (ingest["stored"], ingest["admitted"], ingest["errors"][0]["line"]) == (2, 1, 2)
    [refused] = ingest["not_admitted"]  # says which event, by which rule, and what to do
    assert (refused["line"], refused["id"], refused["rule"]) == (3, "ev-3", "never-admitted-type")
    assert [c["count"] for c in ingest["not_admitted_by_reason"]] == [1]
    assert batch["ids"][1] is None and batch["errors"][0]["field"] == "content"
    assert remembered["importance"] == 0.8 and first[0] and "VPN" in block
    assert edited["importance"] == 0.3 and [v["version"] for v in versions] == [3, 2, 1]
    assert second[0][0]["id"] == "m-1" and "token" in second[0][0]["content"]
    assert second[4]["stages"] and second[4]["query"] == "change ticket token"
    assert replacing["id"] == "m-2" and [(lk["old"], lk["new"]) for lk in links] == [("m-1", "m-2")]
    assert "m-2" in [h["id"] for h in current[0]] and "m-1" not in [h["id"] for h in current[0]]
    replaced = {h["id"]: h for h in both[0]}["m-1"]
    assert (replaced["status"], replaced["superseded_by"]) == ("superseded", "m-2")
    assert (restored["status"], restored["superseded_by"]) == ("active", None)
    [undone] = [d for d in decided if d["kind"] == "superseded"]
    assert (undone["other"], undone["reverted"], undone["reason"]) == (
        "m-2",
        True,
        "tokens are hardware now",
    )
    assert "m-1" in [h["id"] for h in back[0]]
    assert gone["memories"] == 1 and all(h["id"] != "m-1" for h in after[0])

    for n, step in enumerate(SCRIPT):
        assert over_http[n] == in_process[n], step
        assert awaited[n] == in_process[n], step


def test_recent_lists_the_episodes_of_a_conversation(
    mem: Episodic, server: tuple[str, str]
) -> None:
    base, key = server
    with Client(base, key) as client:
        client.add_messages(
            [
                {"content": "the payments deploy failed twice", "ts": "2026-05-02T08:00:00Z"},
                {
                    "content": "roll back and page ops",
                    "role": "assistant",
                    "ts": "2026-05-02T08:01:00Z",
                },
            ],
            conversation="c-9",
        )
        mem.segment(flush=True, workspace=WS)
        episodes = client.recent(conversation="c-9", limit=5)
    expected = mem.recent(workspace=WS, conversation="c-9", limit=5)
    assert expected and [e.id for e in episodes] == [m.id for m in expected]
    assert isinstance(episodes[0], Episode) and episodes[0].message_count == 2
    assert episodes[0].workspace == WS and episodes[0].conversation == "c-9"


# -- errors ------------------------------------------------------------------------------
def test_error_bodies_come_back_as_the_in_process_exceptions(
    mem: Episodic, server: tuple[str, str]
) -> None:
    base, admin = server
    agent_key = mem.create_key(WS, role="agent", agent="ops")[1]
    with Client(base, admin) as client:
        with pytest.raises(InvalidInput) as bad:
            client.remember("a note", importance=2.0)
        assert bad.value.field == "importance"
        with pytest.raises(InvalidInput) as bad_k:
            client.recall("deploys", k=True)
        assert bad_k.value.field == "k"
        with pytest.raises(NotFound) as missing:
            client.update("no-such-memory", content="new text")
        assert missing.value.id == "no-such-memory"
        with pytest.raises(NotFound):
            client.history("no-such-memory")
        with pytest.raises(UnknownPolicy) as policy:
            client.recall("deploys", policy="no-such-policy")
        assert "no-such-policy" in str(policy.value)
        with pytest.raises(InvalidInput) as nothing:
            client.forget()
        assert nothing.value.field == "all"
        assert client.health().status == "ok"
    with Client(base, agent_key) as client, pytest.raises(Forbidden):
        client.recall("deploys", agent="someone-else")
    with Client(base, "not-a-key") as client, pytest.raises(Unauthenticated):
        client.recall("deploys")


def test_a_missing_server_is_an_episodic_error() -> None:
    from episodic.client import ServerError

    with (
        Client("http://127.0.0.1:9", "k", attempts=1) as client,
        pytest.raises(ServerError) as down,
    ):
        client.health()
    assert down.value.status == 0 and "cannot reach" in str(down.value)


# -- retries -----------------------------------------------------------------------------
class Flaky:
    """An ASGI app that answers 503 + ``Retry-After`` ``failures`` times, then 200 as
    ``/healthz`` does; it counts the attempts and when each came."""

    def __init__(self, failures: int, retry_after: str = "1") -> None:
        self.failures = failures
        self.retry_after = retry_after
        self.times: list[float] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        self.times.append(time.monotonic())
        if len(self.times) <= self.failures:
            status = 503
            headers = [
                (b"retry-after", self.retry_after.encode()),
                (b"content-type", b"application/json"),
            ]
            body = (
                b'{"error": {"code": "store_busy", "field": null, '
                b'"message": "every database connection is in use"}}'
            )
        else:
            status, headers = 200, [(b"content-type", b"application/json")]
            body = b'{"status": "ok", "episodic": "vector", "version": "0", "schema_version": 1}'
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in itertools.pairwise(times)]


def test_a_503_is_retried_after_what_retry_after_says() -> None:
    app = Flaky(failures=2)
    with serve(app) as base, Client(base, "k") as client:
        assert client.health().status == "ok"
    assert len(app.times) == 3
    assert all(gap >= 0.95 for gap in gaps(app.times))


def test_the_async_client_retries_the_same_way() -> None:
    app = Flaky(failures=2)

    async def call() -> str:
        async with AsyncClient(base, "k") as client:
            return (await client.health()).status

    with serve(app) as base:
        assert anyio.run(call) == "ok"
    assert len(app.times) == 3
    assert all(gap >= 0.95 for gap in gaps(app.times))


def test_retries_are_bounded_and_the_last_answer_is_raised() -> None:
    app = Flaky(failures=10, retry_after="0")
    with serve(app) as base, Client(base, "k", attempts=4) as client, pytest.raises(StoreBusy):
        client.health()
    assert len(app.times) == 4


def test_a_retry_after_too_long_to_wait_is_not_waited_for() -> None:
    app = Flaky(failures=1, retry_after="3600")
    with serve(app) as base, Client(base, "k") as client, pytest.raises(StoreBusy):
        client.health()
    assert len(app.times) == 1


# -- the example and the install ---------------------------------------------------------
@pytest.mark.parametrize("script", ["client.py", "async_client.py"])
def test_the_example_runs_against_a_server(
    mem: Episodic, server: tuple[str, str], script: str
) -> None:
    base, key = server
    env = {**os.environ, "EPISODIC_URL": base, "EPISODIC_KEY": key}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "VPN" in done.stdout


def test_the_client_imports_without_the_server_extra() -> None:
    # fastapi, starlette and uvicorn made unimportable: the client still imports.
    code = (
        "import sys\n"
        "for name in ('fastapi', 'starlette', 'uvicorn'):\n"
        "    sys.modules[name] = None\n"
        "from episodic import Client, AsyncClient\n"
        "import episodic.client\n"
        "assert not any(m.startswith(('fastapi', 'starlette')) and sys.modules[m] is not None"
        " for m in list(sys.modules))\n"
        "print('ok')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_retry_after_reads_seconds_and_http_dates() -> None:
    from episodic.client.calls import BACKOFF_S, retry_after

    now = datetime(2026, 5, 4, 12, 0, 0, tzinfo=UTC)
    assert retry_after("2", 0, now=now) == 2.0
    assert retry_after("Mon, 04 May 2026 12:00:05 GMT", 0, now=now) == 5.0
    assert retry_after("Mon, 04 May 2026 11:00:00 GMT", 0, now=now) == 0.0  # already past
    # Nothing said, or nothing readable: a doubling backoff.
    assert [retry_after(None, n) for n in range(3)] == [BACKOFF_S, 2 * BACKOFF_S, 4 * BACKOFF_S]
    assert retry_after("soon", 1) == 2 * BACKOFF_S


def test_bad_client_settings_name_the_field() -> None:
    for attempts in (0, True, 1.5):
        with pytest.raises(InvalidInput) as bad:
            Client("http://127.0.0.1:9", "k", attempts=attempts)  # type: ignore[arg-type]
        assert bad.value.field == "attempts"
    with pytest.raises(InvalidInput) as nothing:
        Client("http://127.0.0.1:9", "k").update("m-1")
    assert nothing.value.field == "content"


def test_memory_health_is_none_before_a_snapshot_and_the_same_view_after(
    mem: Episodic, server: tuple[str, str]
) -> None:
    base, key = server

    async def awaited() -> HealthView | None:
        async with AsyncClient(base, key) as client:
            return await client.memory_health(history=5)

    with Client(base, key) as client:
        assert mem.memory_health(WS) is None
        assert client.memory_health() is None and anyio.run(awaited) is None
        mem.remember("payments deploys need the VPN", workspace=WS)
        mem.health_snapshot(workspace=WS)
        expected = mem.memory_health(WS, history=5)
        assert expected is not None
        for got in (client.memory_health(history=5), anyio.run(awaited)):
            assert got is not None and got.to_json() == expected.to_json()
        with pytest.raises(InvalidInput) as bad:
            client.memory_health(history=-1)
        assert bad.value.field == "history"


def test_batches_longer_than_one_request_are_sent_in_parts(
    mem: Episodic, server: tuple[str, str]
) -> None:
    base, key = server
    events: list[dict[str, Any]] = [
        {"id": f"big-{n}", "type": "build.finished", "summary": f"build {n} finished"}
        for n in range(2100)
    ]
    events[1500]["ts"] = "not a time"  # line 1501 is refused; the others are stored
    messages: list[dict[str, Any]] = [{"content": f"message {n}"} for n in range(1200)]
    messages[1100]["content"] = ""
    with Client(base, key) as client:
        assert client.ingest([]).to_json() == mem.ingest([]).to_json()
        report = client.ingest(events)
        batch = client.add_messages(messages, conversation="c-long")
    assert (report.received, report.stored) == (2100, 2099)
    assert [(e.line, e.field) for e in report.errors] == [(1501, "ts")]
    assert (batch.ingest.received, batch.ingest.stored, len(batch.ids)) == (1200, 1199, 1200)
    assert [(e.line, e.field) for e in batch.ingest.errors] == [(1100, "content")]
    assert batch.ids[1100] is None and batch.ids[1199] is not None
    assert mem.stats(WS).events == 2099 + 1199


def test_listing_getting_and_retiring_match_the_in_process_api(
    mem: Episodic, server: tuple[str, str]
) -> None:
    base, key = server
    for n in range(5):
        mem.remember(f"deploy note {n} about payments", workspace=WS, agent="ops", id=f"n-{n}")
    mem.remember("lunch is at noon", workspace=WS, agent="ops", type="fact", id="f-1")
    mem.remember("another agent's note", workspace=WS, agent="qa", id="q-1")
    own = ScopeFilter(workspace_id=WS, agent_id="ops", types=("note",))

    def pages(list_page: Callable[[str | None], Any]) -> list[list[str]]:
        out, cursor = [], None
        while True:
            page = list_page(cursor)
            out.append([m.id for m in page.items])
            if page.next_cursor is None:
                return out
            cursor = page.next_cursor

    expected = pages(lambda c: mem.list_memories(own, limit=2, cursor=c))
    assert expected == [["n-4", "n-3"], ["n-2", "n-1"], ["n-0"]]

    async def awaited() -> tuple[list[list[str]], Memory, list[str]]:
        async with AsyncClient(base, key) as client:
            got: list[list[str]] = []
            cursor = None
            while True:
                page = await client.list_memories(agent="ops", types="note", limit=2, cursor=cursor)
                got.append([m.id for m in page.items])
                if page.next_cursor is None:
                    break
                cursor = page.next_cursor
            one = await client.memory("n-2")
            found = await client.list_memories(q="lunch")
            return got, one, [m.id for m in found.items]

    with Client(base, key) as client:
        listed = pages(
            lambda c: client.list_memories(agent="ops", types=["note"], limit=2, cursor=c)
        )
        assert listed == expected
        assert view(client.memory("f-1")) == view(mem.memory(ScopeFilter(workspace_id=WS), "f-1"))
        retired = client.retire("n-0")
        assert retired.status.value == "retired"
        assert [m.id for m in client.list_memories(status="retired").items] == ["n-0"]
        with pytest.raises(NotFound):
            client.memory("no-such-memory")
        with pytest.raises(InvalidInput) as bad:
            client.list_memories(limit=0)
        assert bad.value.field == "limit"
    got, one, found = anyio.run(awaited)
    assert got == expected  # with no status asked, retired memories are listed too
    assert view(one) == view(mem.memory(own, "n-2")) and found == ["f-1"]


def test_a_replaced_memory_reads_the_same_over_http_and_bad_fields_are_named(
    mem: Episodic, server: tuple[str, str]
) -> None:
    base, key = server
    mem.remember("the VPN endpoint is vpn1.acme", workspace=WS, agent="ops", id="vpn-1")
    with Client(base, key) as client:
        new = client.supersede("vpn-1", "the VPN endpoint is vpn2.acme", reason="moved")
        [replaced] = client.list_memories(status="superseded").items
        assert view(replaced) == view(mem.memory(ScopeFilter(workspace_id=WS), "vpn-1"))
        assert (replaced.superseded_by, replaced.valid_to) == (new.id, new.ts)
        assert view(client.memory(new.id)) == view(mem.memory(ScopeFilter(WS), new.id))
        for old, field in (("vpn-1", "old_id"), (" ", "old_id")):
            with pytest.raises(InvalidInput) as bad:
                client.supersede(old, "the VPN endpoint is vpn3.acme")
            assert bad.value.field == field
        with pytest.raises(InvalidInput) as gone:
            client.remember("vpn3", replaces="vpn-1")
        assert gone.value.field == "replaces"
        with pytest.raises(InvalidInput) as when:
            client.recall("vpn", as_of="the day before")
        assert when.value.field == "as_of"

    async def awaited() -> list[Any]:
        async with AsyncClient(base, key) as client:
            return [link.to_json() for link in await client.supersessions("vpn-1")]

    [link] = anyio.run(awaited)
    assert (link["old"], link["new"]) == ("vpn-1", new.id)
