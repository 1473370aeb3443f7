"""Shared by the doctor --deep and crash tests (tests/test_doctor_deep.py,
tests/test_crash.py, tests/stress/test_crash.py): a journal workload, a populated memory,
and `episodic doctor --deep` run the way a user runs it."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from episodic import Episodic
from episodic.cli import app
from episodic.config import Settings
from episodic.embed import FakeEmbedder
from episodic.embed.base import Embedder
from episodic.store import open_store

WORKER = Path(__file__).with_name("workers") / "crash_worker.py"
NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
WORKSPACES = ("acme", "orbit")
_WORDS = [
    "checkout",
    "deploy",
    "cache",
    "ttl",
    "oom",
    "rollback",
    "keeper",
    "denied",
    "production",
    "staging",
    "ranking",
    "model",
    "ndcg",
    "feature",
    "regression",
    "refund",
    "card",
    "expired",
    "invoice",
    "latency",
    "p99",
    "queue",
    "retry",
    "backoff",
    "migration",
    "schema",
    "index",
    "vacuum",
    "replica",
    "failover",
    "canary",
    "budget",
    "alert",
    "pager",
    "incident",
]
_TYPES = ("peer.escalation", "approval.denied", "eval.regression_detected", "task.completed")


def journal_event(tag: str, i: int, rng: random.Random) -> dict[str, Any]:
    """One journal event; every fourth repeats an earlier one's words (compaction merges
    those), and the times span 200 days (compaction archives the old ones)."""
    words = random.Random(f"{tag}-{i}").sample(_WORDS, 12)
    k = i  # whose scope (workspace, agent, type) the event has
    if i % 4 == 3:
        k = i - 3
        words = [*random.Random(f"{tag}-{k}").sample(_WORDS, 12)[:11], rng.choice(_WORDS)]
    return {
        "id": f"{tag}-{i}",
        "workspace": WORKSPACES[k % len(WORKSPACES)],
        "agent": f"agent-{k % 3}",
        "crew": "platform",
        "type": _TYPES[k % len(_TYPES)],
        "severity": "info",
        "summary": " ".join(words),
        "payload": {"n": i, "service": words[0]},
        "ts": (NOW - timedelta(days=200 * rng.random())).isoformat(),
    }


def fake_settings() -> Settings:
    return Settings.from_env(embedder="none")


def populate(url: str, n: int, *, seed: int = 7, tag: str = "p") -> Episodic:
    """A memory of ``n`` journal events on two workspaces, indexed by the fake embedder
    (with its `similar` edges), decayed, compacted (merges and archive) and consolidated,
    with one memory forgotten: every table the deep check reads holds rows."""
    rng = random.Random(seed)
    mem = Episodic(
        store=open_store(url),
        embedder=FakeEmbedder(),
        clock=lambda: NOW,
        llm=None,
        settings=fake_settings(),
    )
    mem.ingest([journal_event(tag, i, rng) for i in range(n)])
    mem.index_once()
    mem.decay()
    mem.compact()
    mem.consolidate()
    mem.index_once()
    mem.forget(workspace="acme", memory=f"{tag}-2")
    return mem


runner = CliRunner()


def raw_rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    """tests/conftest.py's ``raw_rows`` (not importable from tests/stress, whose own
    conftest takes the name)."""
    if url.startswith("sqlite:///"):
        import sqlite3

        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        try:
            return [tuple(r) for r in conn.execute(sql).fetchall()]
        finally:
            conn.close()
    import psycopg

    with psycopg.connect(url) as pg:
        return [tuple(r) for r in pg.execute(sql).fetchall()]


def doctor_deep(url: str) -> tuple[int, dict[str, Any]]:
    """`episodic --db URL doctor --deep --json`: exit code and report."""
    result = runner.invoke(
        app, ["--db", url, "doctor", "--deep", "--json"], env={"EPISODIC_EMBEDDER": "none"}
    )
    assert result.stdout.strip(), result.stderr
    return result.exit_code, json.loads(result.stdout)


DEEP_NAMES = {
    "orphans.sources",
    "orphans.relations",
    "orphans.compactions",
    "orphans.supersessions",
    "orphans.archive",
    "orphans.vectors",
    "orphans.passages",
    "passages.missing",
    "passages.text",
    "vectors.flag",
    "vectors.pending",
    "vectors.shape",
}


def mismatches(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The deep checks that found something wrong (pending vectors are not: the sweeper
    embeds them)."""
    return [
        c
        for c in report["checks"]
        if c["status"] != "ok" and c["name"] not in {"vectors.pending", "embedder", "indexer"}
    ]


def start_worker(log: Path, *args: str) -> subprocess.Popen[bytes]:
    """A crash worker writing its stdout to ``log`` and its stderr beside it."""
    env = {**os.environ, "EPISODIC_EMBEDDER": "none", "PYTHONUNBUFFERED": "1"}
    with log.open("wb") as out, log.with_suffix(".err").open("wb") as err:
        return subprocess.Popen(
            [sys.executable, str(WORKER), *args], stdout=out, stderr=err, env=env
        )


def wait_for_line(
    proc: subprocess.Popen[bytes], log: Path, needle: str, timeout_s: float = 120.0
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if needle in lines(log):
            return
        if proc.poll() is not None:
            raise AssertionError(
                f"worker exited {proc.returncode} before {needle!r}: "
                + log.with_suffix(".err").read_text(encoding="utf-8", errors="replace")[-2000:]
            )
        time.sleep(0.02)
    raise AssertionError(f"{needle!r} never appeared in {log}")


def lines(log: Path) -> list[str]:
    """The complete lines of a worker's output (a line cut by the kill is not one)."""
    text = log.read_text(encoding="utf-8") if log.exists() else ""
    return text.split("\n")[:-1]


def kill(proc: subprocess.Popen[bytes]) -> bool:
    """SIGKILL; True if it was still running (reaped either way, so its pid is gone)."""
    running = proc.poll() is None
    if running:
        proc.kill()
    proc.wait()
    return running


@dataclass
class Tally:
    """What a series of kills of one kind observed."""

    kills: int = 0
    acknowledged: int = 0
    lost: int = 0
    mismatches: list[str] = field(default_factory=list)
    reruns_ok: int = 0
    leases_recovered: int = 0
    finished_before_kill: int = 0

    def note(self, url: str, when: str) -> None:
        """Run `doctor --deep` and keep every mismatch it reports."""
        code, report = doctor_deep(url)
        bad = mismatches(report)
        self.mismatches += [f"{when}: {c['name']}: {c['detail']}" for c in bad]
        if code != 0 and not bad:
            self.mismatches.append(f"{when}: exit {code}: {report}")


def _in_list(ids: list[str]) -> str:
    return ", ".join("'" + i.replace("'", "''") + "'" for i in ids)


def missing(url: str, table: str, ids: list[str]) -> int:
    found: set[str] = set()
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        found.update(
            str(r[0])
            for r in raw_rows(url, f"SELECT id FROM {table} WHERE id IN ({_in_list(chunk)})")
        )
    return len(set(ids) - found)


def memory(url: str, embedder: Embedder | None = None) -> Episodic:
    return Episodic(
        store=open_store(url),
        embedder=embedder,
        clock=lambda: NOW,
        llm=None,
        settings=fake_settings(),
    )


def sweep_and_check(url: str, embedder: Embedder) -> int:
    """The sweeper finishes what the killed processes left: afterwards every active memory
    has exactly one vector. Returns the memories that were left to embed."""
    with memory(url, embedder) as mem:
        left = mem.index_once().embedded
    wrong = raw_rows(
        url,
        "SELECT count(*) FROM memories m WHERE m.status = 'active' AND "
        "(SELECT count(*) FROM memory_vectors v WHERE v.memory_id = m.id) <> 1",
    )[0][0]
    assert wrong == 0, f"{wrong} active memories without exactly one vector after a sweep"
    return left


def writer_kills(url: str, kills: int, rng: random.Random, tmp: Path, *, batch: int = 5) -> Tally:
    """Kill a writer at random points while an indexer sweeps the same database."""
    tally = Tally()
    load = start_worker(tmp / "load.out", "index", url, "fake", "16", "forever")
    try:
        for r in range(kills):
            log = tmp / f"writer-{r}.out"
            proc = start_worker(log, "write", url, f"w{r}", str(batch))
            wait_for_line(proc, log, "started")
            time.sleep(rng.uniform(0.0, 0.8))
            assert kill(proc), "the writer ended by itself"
            acked = [line for line in lines(log) if line != "started"]
            tally.kills += 1
            tally.acknowledged += len(acked)
            tally.lost += missing(url, "events", acked)
            tally.note(url, f"writer kill {r}")
    finally:
        kill(load)
    # A journal event admitted as a memory shares its id with the memory.
    orphans = raw_rows(
        url,
        "SELECT count(*) FROM events e WHERE e.admitted = 1 "
        "AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = e.id)",
    )[0][0]
    tally.lost += int(orphans)
    sweep_and_check(url, FakeEmbedder())
    tally.note(url, "after the writer kills and a sweep")
    return tally


def indexer_kills(
    url: str, kills: int, rng: random.Random, tmp: Path, *, embedder: str = "fake", fresh: int = 120
) -> Tally:
    """Kill an indexer at random points of its sweep; new memories arrive between kills."""
    tally = Tally()
    for r in range(kills):
        with memory(url) as mem:
            mem.ingest([journal_event(f"i{r}", i, rng) for i in range(fresh)])
        log = tmp / f"indexer-{r}.out"
        proc = start_worker(log, "index", url, embedder, "8")
        wait_for_line(proc, log, "started")
        # The real model needs seconds for the whole backlog: kills land early and late.
        time.sleep(rng.uniform(0.0, 0.5 if embedder == "fake" else 4.0))
        if kill(proc):
            tally.kills += 1
        else:
            tally.finished_before_kill += 1
        tally.acknowledged += sum(int(x.split()[1]) for x in lines(log) if x.startswith("swept"))
        tally.note(url, f"indexer kill {r}")
    sweep_and_check(url, FakeEmbedder() if embedder == "fake" else embedder_for(embedder))
    tally.note(url, "after the indexer kills and a sweep")
    return tally


def embedder_for(name: str) -> Embedder:
    from episodic.embed import make_embedder

    made = make_embedder(Settings.from_env(embedder=name))
    assert made is not None
    return made


UPKEEP_JOBS = ("compact", "consolidate", "decay", "health")


def upkeep_kills(url: str, kills: int, rng: random.Random, tmp: Path, *, fresh: int = 80) -> Tally:
    """Kill upkeep jobs mid-run; the same job run again right after must run (its dead
    runner's lease recovered) and complete, and leave nothing half-applied."""
    tally = Tally()
    for r in range(kills):
        job = UPKEEP_JOBS[r % len(UPKEEP_JOBS)]
        with memory(url, FakeEmbedder()) as mem:
            mem.ingest([journal_event(f"u{r}", i, rng) for i in range(fresh)])
            mem.index_once()
        log = tmp / f"upkeep-{r}.out"
        proc = start_worker(log, "upkeep", url, job)
        wait_for_line(proc, log, "start")
        time.sleep(rng.uniform(0.0, 0.25))
        if kill(proc) and not any(x.startswith("done") for x in lines(log)):
            tally.kills += 1
        else:
            tally.finished_before_kill += 1
        held = raw_rows(url, "SELECT count(*) FROM upkeep_leases")[0][0]
        tally.note(url, f"{job} kill {r}")
        with memory(url, FakeEmbedder()) as mem:
            results = rerun(mem, job)
        statuses = [res.status for res in results]
        if statuses and all(s == "ok" for s in statuses):
            tally.reruns_ok += 1
            tally.leases_recovered += int(held)
        else:
            tally.mismatches.append(f"{job} re-run after kill {r}: {statuses}")
        left = raw_rows(url, "SELECT count(*) FROM upkeep_leases")[0][0]
        if left:
            tally.mismatches.append(f"{job} re-run after kill {r} left {left} leases held")
        tally.note(url, f"{job} re-run {r}")
    return tally


def rerun(mem: Episodic, job: str) -> list[Any]:
    if job == "decay":
        return [mem.decay()]
    if job == "compact":
        return list(mem.compact())
    if job == "consolidate":
        return list(mem.consolidate())
    return list(mem.health_snapshot())
