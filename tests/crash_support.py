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
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

from typer.testing import CliRunner

from episodic import Episodic
from episodic.cli import app
from episodic.config import Settings
from episodic.embed import FakeEmbedder
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
        "workspace_id": WORKSPACES[k % len(WORKSPACES)],
        "agent_id": f"agent-{k % 3}",
        "crew_id": "platform",
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
    "orphans.archive",
    "orphans.vectors",
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


def start_worker(*args: str, stdout: IO[str] | int = subprocess.PIPE) -> subprocess.Popen[str]:
    env = {**os.environ, "EPISODIC_EMBEDDER": "none", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def wait_for_line(path: Path, needle: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and needle in path.read_text(encoding="utf-8"):
            return
        time.sleep(0.02)
    raise AssertionError(f"{needle!r} never appeared in {path}")
