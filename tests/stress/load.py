"""Load on ``episodic serve``: many concurrent clients mixing writes and recalls.

    .venv/bin/python tests/stress/load.py --db URL [--clients 64] [--seconds 600]
        [--workspaces 4] [--sweep-interval S] [--workers N] [--json]

1. seeds the database (in-process, before the server starts): a few workspaces, each with
   an admin key, and per client an agent key and a lead key bound to the client's agent
   and crew; plus a backlog of journal events for the indexer;
2. starts the real ``episodic serve`` (the CLI, uvicorn, one process) on a free loopback
   port with the real local MiniLM embedder and the background sweeper and upkeep
   scheduler it always runs, its log captured to a file;
3. runs ``clients`` closed-loop clients (asyncio + httpx, one keep-alive connection each,
   no think time) for ``seconds``. Each owns one workspace and loops over a mix of ~30%
   writes (journal event batches, conversation messages - some live, some backfilled
   hours ago so the sweeper segments them into episodes under load - and remembered
   notes), each carrying an id the client keeps once the server acknowledged it, ~68%
   reads (recall and render with random policies, keys, scopes, k and explain; the
   newest episodes) and ~2% forgets of the client's latest finished conversation (which
   the sweeper may be segmenting at that moment). Every request's latency and status is
   recorded (a shed request is retried, see below);
4. samples the server process's RSS (with its workers') and the number of memories
   waiting for a vector every ``rss_every_s`` seconds;
5. afterwards: waits for the indexer to embed everything, reads a sample of the
   acknowledged writes back through the API, stops the server with Ctrl-C (it must exit
   0), then reads every acknowledged write back from the store directly and compares its
   text, and checks that nothing of a forgotten conversation is left.

What counts as an error (all requests are valid, so any status other than the expected
2xx): a 4xx or 5xx, a connection error, a timeout (``timeout_s``), a response that does
not parse or acknowledges less than was sent, a recall hit from another workspace, an
exception in the server's log, a server that exits on its own or not cleanly.

RSS is flat when the median of the last quarter of the run is at most the median of the
second quarter (the first quarter is warm-up: model sessions, dense matrices, caches)
plus ``max(10%, 50 MB)`` (``RSS_TOLERANCE_FRACTION``, ``RSS_TOLERANCE_BYTES``). The
database grows during the run, and a part of it is meant to be held in memory (the dense
matrix of every workspace: 1.5 KB per vector), which the absolute floor covers.

A 503 with ``Retry-After`` is the server shedding load, not an error: the client waits
what the header says and sends the same request again (as ``episodic.Client`` does), and
the request's latency is the whole of it, retries included; the sheds are counted per
kind. Past ``timeout_s`` in all, it is an error.

Latencies are measured by the driver, which shares the machine's cores with the server:
they include its own scheduling delay under load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from episodic import Episodic, Settings
from episodic.model import ScopeFilter
from episodic.store import open_store
from episodic.write.episodes import EPISODE_TYPE

RSS_TOLERANCE_FRACTION = 0.10
RSS_TOLERANCE_BYTES = 50 * 1024 * 1024
# What a write should take under the full mix (retries after a shed included): its p95,
# and the time no write should pass. Reported, not asserted: on the shared 2-core machine
# the driver's 64 clients, four recalls and the writes compete for the same cores.
WRITE_P95_BUDGET_MS = 150.0
SLOW_WRITE_S = 1.0
POLICIES = ("default", "crewship", "teaparty", "plastmem", "n8n", "bm25", "dense")
WRITE_KINDS = ("event", "message", "memory")
READ_KINDS = ("recall", "render", "recent")
OTHER_KINDS = ("forget",)
# The request mix (kind, weight): 30% writes, 68% reads, 2% forgets.
MIX = (
    ("event", 14),
    ("message", 13),
    ("memory", 3),
    ("recall", 54),
    ("forget", 2),
    ("render", 8),
    ("recent", 6),
)
SEED_EVENTS_PER_WORKSPACE = 200
MESSAGES_PER_CONVERSATION = 6
# fmt: off
WORDS = (
    "checkout", "payment", "cart", "invoice", "refund", "ledger", "billing", "deploy",
    "rollout", "canary", "release", "rollback", "migration", "schema", "index", "replica",
    "failover", "primary", "latency", "timeout", "retry", "queue", "worker", "backlog",
    "cache", "eviction", "memory", "leak", "heap", "container", "restart", "crashloop",
    "config", "secret", "rotation", "certificate", "expired", "tls", "ingress", "budget",
    "cost", "spike", "alert", "pager", "oncall", "runbook", "incident", "review", "customer",
    "escalation", "approval", "denied", "regression", "dashboard", "postgres", "sqlite",
    "kafka", "redis", "nginx", "kubernetes", "node", "disk", "full", "cpu", "throttle",
    "network", "dns", "outage", "partial", "degraded", "recovered", "mitigated", "owner",
    "team", "handoff", "decision", "plan",
)
# fmt: on
TIME_HINTS = ("", "", "", "yesterday", "last week", "this morning", "two days ago")
ADMITTED = (("peer.escalation", "info"), ("keeper.decision", "warn"), ("summary.generated", ""))
NOT_ADMITTED = (("tool.call", "info"), ("exec.output_chunk", "info"), ("container.metrics", ""))
SERVER_FAULT = re.compile(r"Traceback|\bERROR\b|Exception in|unexpected error", re.IGNORECASE)


@dataclass
class Sample:
    kind: str
    start: float  # seconds since the load began
    latency: float
    status: int  # 0 when no response came back
    error: str | None = None
    sheds: int = 0  # 503 + Retry-After answers waited out and retried before this one


@dataclass
class Written:
    """An acknowledged write: what the store must hold afterwards."""

    kind: str
    workspace: str
    id: str
    text: str


@dataclass
class Forgotten:
    """A conversation forgotten during the load: none of it may be left afterwards."""

    workspace: str
    conversation: str
    ids: list[str]


@dataclass
class Client:
    index: int
    workspace: str
    agent: str
    crew: str
    agent_key: str
    lead_key: str
    admin_key: str


@dataclass
class LoadConfig:
    db: str
    clients: int = 64
    seconds: float = 600.0
    # Past ``seconds``, keep going until this many writes and reads were answered, for at
    # most ``max_seconds`` in all: on a loaded machine a short run still does enough to
    # judge (a run that reaches neither within the cap is reported, not stretched).
    min_writes: int = 0
    min_reads: int = 0
    max_seconds: float | None = None
    workspaces: int = 4
    sweep_interval_s: float | None = None  # None: the server's default
    workers: int = 1  # serve --workers
    messages_per_conversation: int = MESSAGES_PER_CONVERSATION
    seed_events: int = SEED_EVENTS_PER_WORKSPACE  # per workspace, before the server starts
    timeout_s: float = 30.0
    rss_every_s: float = 2.0
    stall_s: float = 120.0  # the indexer's longest pause after the load (its poll is 30 s)
    api_readback: int = 300
    seed: int = 8
    log_dir: Path | None = None


@dataclass
class LoadReport:
    config: LoadConfig
    duration_s: float = 0.0
    samples: list[Sample] = field(default_factory=list)
    written: list[Written] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    forgotten: list[Forgotten] = field(default_factory=list)
    resurfaced: list[str] = field(default_factory=list)  # forgotten, yet still stored
    altered: list[str] = field(default_factory=list)
    api_missing: list[str] = field(default_factory=list)
    rss: list[tuple[float, int]] = field(default_factory=list)  # (seconds, bytes)
    backlog: list[tuple[float, int]] = field(default_factory=list)  # (seconds, unindexed)
    server_faults: list[str] = field(default_factory=list)
    server_exit: int | None = None
    exited_during_load: bool = False
    pending_after_drain: int = -1
    drain_s: float = 0.0
    load_average: tuple[float, float, float] = (0.0, 0.0, 0.0)
    episodes: int = 0
    server_log: str = ""

    # -- verdicts -------------------------------------------------------------------
    @property
    def errors(self) -> list[Sample]:
        return [s for s in self.samples if s.error is not None]

    def rss_quarters(self) -> tuple[int, int, int]:
        """(first sample, median of the second quarter, median of the last quarter)."""
        if not self.rss:
            return 0, 0, 0
        span = self.duration_s
        second = [b for t, b in self.rss if span / 4 <= t < span / 2] or [self.rss[0][1]]
        last = [b for t, b in self.rss if t >= 3 * span / 4] or [self.rss[-1][1]]
        return self.rss[0][1], int(statistics.median(second)), int(statistics.median(last))

    def rss_tenths(self) -> list[int]:
        """The RSS sample closest after each tenth of the run: the shape of any growth."""
        out: list[int] = []
        for tenth in range(11):
            after = [b for t, b in self.rss if t >= tenth * self.duration_s / 10]
            if after:
                out.append(after[0])
        return out

    def rss_limit(self) -> int:
        _, second, _ = self.rss_quarters()
        return second + max(int(second * RSS_TOLERANCE_FRACTION), RSS_TOLERANCE_BYTES)

    def rss_flat(self) -> bool:
        _, _, last = self.rss_quarters()
        return last <= self.rss_limit()

    def problems(self, *, check_rss: bool = True) -> list[str]:
        """What a user would notice, one line each; empty when the run was clean."""
        found: list[str] = []
        errors = self.errors
        if errors:
            shown = "; ".join(f"{s.kind} {s.status} {s.error}" for s in errors[:5])
            found.append(f"{len(errors)} failed requests, e.g. {shown}")
        if self.lost:
            found.append(f"{len(self.lost)} acknowledged writes lost, e.g. {self.lost[:5]}")
        if self.altered:
            found.append(f"{len(self.altered)} writes stored with other text: {self.altered[:5]}")
        if self.resurfaced:
            found.append(f"forgotten data still stored: {self.resurfaced[:5]}")
        if self.api_missing:
            found.append(f"{len(self.api_missing)} writes not readable through the API")
        if self.server_faults:
            found.append(f"server log reports faults: {self.server_faults[:5]}")
        if self.exited_during_load:
            found.append("the server exited during the load")
        if self.server_exit != 0:
            found.append(f"the server did not shut down cleanly (exit {self.server_exit})")
        if self.pending_after_drain != 0:
            found.append(f"{self.pending_after_drain} memories still unindexed after the drain")
        if not self.written:
            found.append("no write was acknowledged")
        if check_rss and not self.rss_flat():
            start, second, last = (b // 2**20 for b in self.rss_quarters())
            found.append(
                f"RSS grew: {start} MB at start, {second} MB median of the second quarter, "
                f"{last} MB of the last (limit {self.rss_limit() // 2**20} MB)"
            )
        return found

    # -- figures --------------------------------------------------------------------
    def count(self, kinds: Sequence[str]) -> int:
        return sum(1 for s in self.samples if s.kind in kinds)

    def percentiles(self, kinds: Sequence[str]) -> tuple[float, float, float]:
        """p50/p95/p99 latency in ms of the successful requests of ``kinds``."""
        values = sorted(s.latency for s in self.samples if s.kind in kinds and s.error is None)
        if not values:
            return 0.0, 0.0, 0.0

        def pct(q: float) -> float:
            return 1000 * values[min(len(values) - 1, round(q / 100 * (len(values) - 1)))]

        return pct(50), pct(95), pct(99)

    def sheds(self, kinds: Sequence[str]) -> int:
        """503 + Retry-After answers the requests of ``kinds`` were given and retried."""
        return sum(s.sheds for s in self.samples if s.kind in kinds)

    def slow(self, kinds: Sequence[str], over_s: float) -> int:
        """Successful requests of ``kinds`` that took longer than ``over_s``, retries in."""
        return sum(
            1 for s in self.samples if s.kind in kinds and s.error is None and s.latency > over_s
        )

    def figures(self) -> dict[str, object]:
        d = max(self.duration_s, 1e-9)
        start, second, last = (b / 2**20 for b in self.rss_quarters())
        out: dict[str, object] = {
            "duration": f"{self.duration_s:.0f} s",
            "clients": self.config.clients,
            "workspaces": self.config.workspaces,
            "requests": len(self.samples),
            "throughput": f"{len(self.samples) / d:.1f} requests/s",
            "writes/s": f"{self.count(WRITE_KINDS) / d:.1f}",
            "reads/s (recall, render, recent)": f"{self.count(READ_KINDS) / d:.1f}",
        }
        for label, kinds in (
            ("writes", WRITE_KINDS),
            ("reads", READ_KINDS),
            *((k, (k,)) for k in WRITE_KINDS + READ_KINDS + OTHER_KINDS),
        ):
            p50, p95, p99 = self.percentiles(kinds)
            out[f"{label}: requests, p50 / p95 / p99"] = (
                f"{self.count(kinds)}, {p50:.0f} / {p95:.0f} / {p99:.0f} ms"
            )
        out.update(
            {
                "sheds (503 + Retry-After, waited out and retried): writes / reads / forgets": (
                    f"{self.sheds(WRITE_KINDS)} / {self.sheds(READ_KINDS)} / "
                    f"{self.sheds(OTHER_KINDS)}"
                ),
                f"writes' p95 within {WRITE_P95_BUDGET_MS:g} ms / writes over {SLOW_WRITE_S:g} s": (
                    f"{'yes' if self.percentiles(WRITE_KINDS)[1] <= WRITE_P95_BUDGET_MS else 'no'}"
                    f" / {self.slow(WRITE_KINDS, SLOW_WRITE_S)}"
                ),
                "errors": len(self.errors),
                "writes acknowledged (events, messages, notes)": (
                    f"{len(self.written)} ("
                    + ", ".join(str(sum(w.kind == k for w in self.written)) for k in WRITE_KINDS)
                    + ")"
                ),
                "writes lost": len(self.lost),
                "conversations forgotten under load / found afterwards": (
                    f"{len(self.forgotten)} / {len(self.resurfaced)}"
                ),
                "episodes segmented during the run": self.episodes,
                "unindexed memories: most during the run / at its end": (
                    f"{max((n for _, n in self.backlog), default=0)} / "
                    f"{self.backlog[-1][1] if self.backlog else 0}"
                ),
                "indexer drain after the run / unindexed left": (
                    f"{self.drain_s:.1f} s / {self.pending_after_drain}"
                ),
                "server RSS start / 2nd-quarter median / last-quarter median": (
                    f"{start:.0f} / {second:.0f} / {last:.0f} MB "
                    f"(limit {self.rss_limit() / 2**20:.0f} MB)"
                ),
                "server RSS at each tenth of the run (MB)": " ".join(
                    str(b // 2**20) for b in self.rss_tenths()
                ),
                "load average (1/5/15 min) at the end": " / ".join(
                    f"{v:.2f}" for v in self.load_average
                ),
            }
        )
        return out


# -- the server ---------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_bytes(pid: int) -> int:
    """Resident set size of ``pid`` and its children (``--workers``): psutil when
    installed, else Linux's /proc."""
    try:
        import psutil
    except ImportError:
        return sum(_proc_rss(p) for p in _proc_tree(pid))
    proc = psutil.Process(pid)
    return sum(int(p.memory_info().rss) for p in (proc, *proc.children(recursive=True)))


def _proc_tree(pid: int) -> list[int]:
    found = [pid]
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            found.extend(_proc_tree(int(child)))
    return found


def _proc_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


@contextmanager
def served(config: LoadConfig, log_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``episodic serve`` as a user runs it; yields (process, base URL). Stopped with
    Ctrl-C afterwards; the exit code is left on the process."""
    port = free_port()
    env = {**os.environ, "EPISODIC_EMBEDDER": "local"}
    if config.sweep_interval_s is not None:
        env["EPISODIC_SWEEP_INTERVAL"] = str(config.sweep_interval_s)
    command = [
        str(Path(sys.executable).with_name("episodic")),
        "--db",
        config.db,
        "serve",
        "--port",
        str(port),
        "--log-level",
        "warning",
        "--workers",
        str(config.workers),
    ]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"serve did not start:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.2)
        yield proc, base
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


def seed(config: LoadConfig) -> list[Client]:
    """Keys for every client and a backlog of journal events in every workspace."""
    rnd = random.Random(config.seed)
    workspaces = [f"load-ws{j}" for j in range(config.workspaces)]
    clients: list[Client] = []
    with Episodic.open(config.db, settings=Settings(embedder="none")) as mem:
        admins = {ws: mem.create_key(ws, role="admin", label="load")[1] for ws in workspaces}
        for i in range(config.clients):
            ws = workspaces[i % len(workspaces)]
            agent, crew = f"agent{i}", f"crew{i % 3}"
            _, agent_key = mem.create_key(ws, role="agent", agent=agent, crew=crew)
            _, lead_key = mem.create_key(ws, role="lead", agent=agent, crew=crew)
            clients.append(Client(i, ws, agent, crew, agent_key, lead_key, admins[ws]))
        now = datetime.now(UTC)
        for ws in workspaces:
            events = []
            for n in range(config.seed_events):
                kind, severity = rnd.choice(ADMITTED + NOT_ADMITTED)
                events.append(
                    {
                        "id": f"seed-{ws}-{n}",
                        "workspace": ws,
                        "agent": f"agent{rnd.randrange(config.clients)}",
                        "crew": f"crew{rnd.randrange(3)}",
                        "type": kind,
                        "severity": severity or "info",
                        "summary": words(rnd, 12),
                        "ts": (now - timedelta(hours=n)).isoformat(),
                    }
                )
            report = mem.ingest(events)
            assert not report.errors, report.errors
    return clients


def words(rnd: random.Random, n: int) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(n))


# -- the clients --------------------------------------------------------------------------
@dataclass
class ClientState:
    n: int = 0  # requests sent
    conversation: int = 0  # the one being written
    in_conversation: int = 0  # its messages so far
    backfill: bool = False
    finished: list[str] = field(default_factory=list)  # conversations not forgotten yet


class Driver:
    def __init__(self, config: LoadConfig, base: str, clients: list[Client]) -> None:
        self.config = config
        self.base = base
        self.clients = clients
        self.samples: list[Sample] = []
        self.written: list[Written] = []
        self.by_conversation: dict[str, list[Written]] = {}
        self.forgotten: list[Forgotten] = []
        self.t0 = 0.0
        self.kinds = [k for k, _ in MIX]
        self.weights = [w for _, w in MIX]

    async def run(self) -> None:
        # Every client's connection pool is made before the clock starts: each costs
        # ~20 ms of the driver's CPU (httpx builds an SSL context even for plain HTTP),
        # and made inside the run they held the first requests up by ~1.4 s, counted as
        # the server's latency.
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        timeout = httpx.Timeout(self.config.timeout_s)
        async with AsyncExitStack() as stack:
            pools = [
                await stack.enter_async_context(
                    httpx.AsyncClient(base_url=self.base, limits=limits, timeout=timeout)
                )
                for _ in self.clients
            ]
            self.t0 = time.perf_counter()
            await asyncio.gather(
                *(self.client_loop(c, http) for c, http in zip(self.clients, pools, strict=True))
            )

    def counted(self, kinds: Sequence[str]) -> int:
        return sum(1 for s in self.samples if s.kind in kinds)

    def running(self) -> bool:
        """Whether clients go on: until ``seconds``, then until the minimum traffic is
        answered or ``max_seconds`` is up."""
        elapsed = time.perf_counter() - self.t0
        if elapsed < self.config.seconds:
            return True
        cap = self.config.max_seconds
        if cap is None or elapsed >= cap:
            return False
        return (
            self.counted(WRITE_KINDS) < self.config.min_writes
            or self.counted(READ_KINDS) < self.config.min_reads
        )

    def kept(self) -> list[Written]:
        """The acknowledged writes, less those a later forget removed."""
        gone = {i for f in self.forgotten for i in f.ids}
        return [w for w in self.written if w.id not in gone]

    async def client_loop(self, me: Client, http: httpx.AsyncClient) -> None:
        rnd = random.Random(self.config.seed * 1000 + me.index)
        state = ClientState()
        while self.running():
            kind = rnd.choices(self.kinds, self.weights)[0]
            if kind == "forget" and not state.finished:
                kind = "recall"
            state.n += 1
            await self.one(http, me, rnd, kind, state)

    async def one(
        self, http: httpx.AsyncClient, me: Client, rnd: random.Random, kind: str, state: ClientState
    ) -> None:
        n = state.n
        key = me.agent_key
        pending: list[Written] = []
        conversation = ""
        method, path = "POST", ""
        body: dict[str, Any] | None = None
        params: dict[str, Any] | None = None
        if kind == "event":
            path = "/v1/events"
            events = []
            for j in range(rnd.randint(1, 5)):
                kind_, severity = rnd.choice(ADMITTED + NOT_ADMITTED)
                eid = f"ev-{me.index}-{n}-{j}"
                text = f"{words(rnd, rnd.randint(6, 20))} c{me.index}n{n}e{j}"
                event: dict[str, Any] = {"id": eid, "type": kind_, "summary": text}
                if severity:
                    event["severity"] = severity
                if rnd.random() < 0.3:
                    event["resource"] = f"svc{rnd.randrange(5)}"
                events.append(event)
                pending.append(Written("event", me.workspace, eid, text))
            body = {"events": events}
        elif kind == "message":
            path = "/v1/messages"
            if state.in_conversation >= self.config.messages_per_conversation:
                state.finished.append(f"conv-{me.index}-{state.conversation}")
                state.conversation += 1
                state.in_conversation = 0
                # Half the conversations are transcripts imported from hours ago: idle past
                # the hard gap, so the sweeper segments them into episodes mid-load.
                state.backfill = rnd.random() < 0.5
            state.in_conversation += 1
            mid = f"msg-{me.index}-{n}"
            text = words(rnd, rnd.randint(4, 30))
            conversation = f"conv-{me.index}-{state.conversation}"
            body = {
                "conversation": conversation,
                "text": text,
                "role": "user" if state.in_conversation % 2 else "assistant",
                "id": mid,
            }
            if state.backfill:
                ts = datetime.now(UTC) - timedelta(hours=6, minutes=-state.in_conversation)
                body["ts"] = ts.isoformat()
            pending.append(Written("message", me.workspace, mid, text))
        elif kind == "memory":
            path = "/v1/memories"
            mid = f"note-{me.index}-{n}"
            text = f"{words(rnd, rnd.randint(5, 15))} note{me.index}x{n}"
            body = {"content": text, "id": mid, "importance": round(rnd.random(), 2)}
            pending.append(Written("memory", me.workspace, mid, text))
        elif kind == "forget":
            # The latest finished conversation: the sweeper may be segmenting it now.
            path, key = "/v1/forget", me.admin_key
            conversation = state.finished.pop()
            body = {"conversation": conversation}
        elif kind in ("recall", "render"):
            path = f"/v1/{kind}"
            body = {
                "query": (words(rnd, rnd.randint(2, 7)) + " " + rnd.choice(TIME_HINTS)).strip(),
                "k": rnd.randint(1, 12),
                "policy": rnd.choice(POLICIES),
                "explain": rnd.random() < 0.2,
            }
            who = rnd.random()
            if who < 0.4:
                key = me.agent_key  # scope own
            elif who < 0.7:
                key = me.lead_key  # scope crew_shared
            else:
                key = me.admin_key
                scope = rnd.choice((None, "own", "crew_shared"))
                if scope is not None:
                    body.update(scope=scope, agent=me.agent, crew=me.crew)
            if rnd.random() < 0.1:
                body["walk"] = 1
            if kind == "render":
                body["max_chars"] = rnd.choice((500, 2000, 8000))
        else:  # recent
            method, path = "GET", "/v1/recent"
            key = rnd.choice((me.agent_key, me.admin_key))
            params = {"limit": rnd.randint(1, 20)}
        headers = {"Authorization": f"Bearer {key}"}
        start = time.perf_counter()
        status, error, sheds = 0, None, 0
        while True:
            try:
                response = await http.request(
                    method, path, json=body, params=params, headers=headers
                )
            except httpx.HTTPError as exc:
                error = f"{type(exc).__name__}: {exc}"
                break
            status = response.status_code
            wait = shed_wait(response)
            if wait is None:
                error = check(kind, response, me.workspace, len(pending))
                break
            # Load shedding, not an error: wait what the server said and send it again,
            # as episodic.Client does; past the request timeout it is a failure.
            if time.perf_counter() - start + wait > self.config.timeout_s:
                error = f"shed {sheds + 1} times, for longer than {self.config.timeout_s:g} s"
                break
            sheds += 1
            await asyncio.sleep(wait)
        latency = time.perf_counter() - start
        self.samples.append(Sample(kind, start - self.t0, latency, status, error, sheds))
        if kind == "forget":
            # Even a failed forget may have removed them: only a clean one is checked.
            writes = self.by_conversation.pop(conversation, [])
            if error is None:
                self.forgotten.append(Forgotten(me.workspace, conversation, [w.id for w in writes]))
            else:
                self.written = [w for w in self.written if w not in writes]
        elif error is None:
            self.written.extend(pending)
            if conversation:
                self.by_conversation.setdefault(conversation, []).extend(pending)


def shed_wait(response: httpx.Response) -> float | None:
    """Seconds to wait before sending the request again when the server shed it (503
    with Retry-After in seconds), else None."""
    if response.status_code != 503:
        return None
    raw = response.headers.get("retry-after", "")
    return float(raw) if raw.strip().isdigit() else None


def check(kind: str, response: httpx.Response, workspace: str, sent: int) -> str | None:
    """Why this response is not what a valid request gets, or None."""
    expected = 201 if kind in ("message", "memory") else 200
    if response.status_code != expected:
        return response.text[:300]
    try:
        data = response.json()
    except ValueError:
        return "response is not JSON"
    if kind == "event":
        if data.get("stored") != sent or data.get("errors"):
            return f"acknowledged {data.get('stored')} of {sent}: {data}"
    elif kind in ("recall", "render"):
        hits = data.get("hits", [])
        if any(h.get("workspace") != workspace for h in hits):
            return "a hit from another workspace"
    return None


# -- afterwards ---------------------------------------------------------------------------
def sample(
    config: LoadConfig, pid: int, t0: list[float], report: LoadReport, stop: threading.Event
) -> None:
    """Every ``rss_every_s``: the server's RSS, and how many memories wait for a vector."""
    with open_store(config.db) as store:
        while not stop.is_set():
            t = time.perf_counter() - t0[0]
            try:
                report.rss.append((t, rss_bytes(pid)))
            except (OSError, RuntimeError):
                return  # the process is gone; the report says so
            report.backlog.append((t, store.stats().pending_vectors))
            stop.wait(config.rss_every_s)


def drain(config: LoadConfig, report: LoadReport) -> None:
    """Wait for the indexer to embed everything written (it keeps sweeping on its own).
    Under full load it may fall behind, so the wait is as long as it keeps making
    progress: it gives up after ``stall_s`` without one more memory indexed."""
    start = last_progress = time.monotonic()
    with open_store(config.db) as store:
        pending = fewest = store.stats().pending_vectors
        while pending > 0 and time.monotonic() - last_progress < config.stall_s:
            time.sleep(1.0)
            pending = store.stats().pending_vectors
            if pending < fewest:
                fewest, last_progress = pending, time.monotonic()
    report.pending_after_drain = pending
    report.drain_s = time.monotonic() - start


def api_readback(base: str, clients: list[Client], report: LoadReport, rnd: random.Random) -> None:
    """A sample of the acknowledged writes that became memories, through GET
    /v1/memories/{id} with the workspace's admin key."""
    admin = {c.workspace: c.admin_key for c in clients}
    with open_store(report.config.db) as store:
        memories = {
            m.id
            for ws in admin
            for m in store.get_memories(ws, [w.id for w in report.written if w.workspace == ws])
        }
    chosen = [w for w in report.written if w.id in memories]
    chosen = rnd.sample(chosen, min(len(chosen), report.config.api_readback))
    with httpx.Client(base_url=base, timeout=30) as http:
        for w in chosen:
            r = http.get(
                f"/v1/memories/{w.id}", headers={"Authorization": f"Bearer {admin[w.workspace]}"}
            )
            if r.status_code != 200 or r.json().get("id") != w.id:
                report.api_missing.append(f"{w.id}: {r.status_code}")


def store_readback(report: LoadReport) -> None:
    """Every acknowledged write, from the store directly, with the text it was sent."""
    by_ws: dict[str, list[Written]] = {}
    for w in report.written:
        by_ws.setdefault(w.workspace, []).append(w)
    with open_store(report.config.db) as store:
        for ws, writes in by_ws.items():
            events = {e.id: e for e in store.get_events(ws, [w.id for w in writes])}
            notes = {
                m.id: m
                for m in store.get_memories(ws, [w.id for w in writes if w.kind == "memory"])
            }
            for w in writes:
                if w.kind == "memory":
                    note = notes.get(w.id)
                    if note is None:
                        report.lost.append(w.id)
                    elif note.content != w.text:
                        report.altered.append(w.id)
                    continue
                event = events.get(w.id)
                if event is None:
                    report.lost.append(w.id)
                elif event.summary != w.text:
                    report.altered.append(w.id)
        for gone in report.forgotten:
            left = [e.id for e in store.get_events(gone.workspace, gone.ids)]
            flt = ScopeFilter(workspace_id=gone.workspace, conversation_id=gone.conversation)
            left += [c.memory_id for c in store.search_recent(flt, 1000)]
            report.resurfaced += [f"{gone.conversation}: {i}" for i in left]
        report.episodes = sum(
            len(store.search_recent(ScopeFilter(workspace_id=ws), 100_000, types=(EPISODE_TYPE,)))
            for ws in by_ws
        )


def faults(log: str) -> list[str]:
    return [line.strip()[:300] for line in log.splitlines() if SERVER_FAULT.search(line)]


def run_load(config: LoadConfig) -> LoadReport:
    """Seed, serve, load, verify; the report says what happened (nothing is asserted)."""
    report = LoadReport(config)
    log_dir = config.log_dir or Path(tempfile.mkdtemp(prefix="episodic-load-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / "serve.log"
    clients = seed(config)
    with served(config, log_path) as (proc, base):
        driver = Driver(config, base, clients)
        t0 = [time.perf_counter()]
        stop = threading.Event()
        sampler = threading.Thread(
            target=sample, args=(config, proc.pid, t0, report, stop), daemon=True
        )
        sampler.start()
        try:
            t0[0] = time.perf_counter()
            asyncio.run(driver.run())
            report.duration_s = time.perf_counter() - driver.t0
        finally:
            stop.set()
            sampler.join(10)
        report.samples, report.written = driver.samples, driver.kept()
        report.forgotten = driver.forgotten
        report.load_average = os.getloadavg()
        report.exited_during_load = proc.poll() is not None
        if not report.exited_during_load:
            drain(config, report)
            api_readback(base, clients, report, random.Random(config.seed))
    report.server_exit = proc.returncode
    report.server_log = log_path.read_text(errors="replace")
    report.server_faults = faults(report.server_log)
    store_readback(report)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--db", required=True, help="sqlite:///path.db or postgresql://...")
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--workspaces", type=int, default=4)
    parser.add_argument(
        "--sweep-interval", type=float, default=None, help="seconds; default: the server's"
    )
    parser.add_argument("--workers", type=int, default=1, help="serve --workers")
    parser.add_argument("--timeout", type=float, default=30.0, help="per request, seconds")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    config = LoadConfig(
        db=args.db,
        clients=args.clients,
        seconds=args.seconds,
        workspaces=args.workspaces,
        sweep_interval_s=args.sweep_interval,
        workers=args.workers,
        timeout_s=args.timeout,
    )
    report = run_load(config)
    problems = report.problems()
    if args.json:
        print(json.dumps({"figures": report.figures(), "problems": problems}, indent=2))
    else:
        for name, value in report.figures().items():
            print(f"{name:>62}: {value}")
        print("\n".join(["", "PROBLEMS:", *problems]) if problems else "\nno problems")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
