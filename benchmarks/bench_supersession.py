"""What supersession detection costs on the write path, and whether recall notices.

    .venv/bin/python benchmarks/bench_supersession.py              # 2,000 events, 2,000 messages
    .venv/bin/python benchmarks/bench_supersession.py --n 500 --db postgresql://...

Side by side in one run, with detection ``off`` and ``auto`` (the offline rule; no LLM),
on fresh SQLite files (or fresh workspaces of one PostgreSQL database):

- ingest: ``ingest`` of journal events in batches of 100, then the check pass that
  detection adds (``check_supersessions``), each timed alone, in events/s;
- messages: ``add_messages`` in batches of 20 turns, then ``segment(flush=True)`` (which
  runs the check), in messages/s;
- recall: p50/p95 of ``recall(mark=False)`` over 200 queries on the finished database.

Sparse-only (no embedder): embedding is the same work with detection on or off, and
would hide what detection adds. The texts are journal- and chat-like, with a change of
some fact now and then, so the rule has something to decide.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from episodic import Episodic, ScopeFilter, Settings

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
SUBJECTS = ["billing-api", "auth-gateway", "search-indexer", "reports-exporter", "ledger"]
HOSTS = ["core-amber", "edge-07", "svc-north", "api-west", "node-3", "db-blue"]
PEOPLE = ["Ana", "Bo", "Chidi", "Dana", "Emil", "Farah", "Goran", "Hana"]
FILLER = [
    "the nightly build finished in {m} minutes",
    "{p} reviewed the change to the {s} retry policy",
    "disk usage on {h} reached {m} percent",
    "{p} asked for the {s} runbook",
    "a rollback of the {s} was approved after the incident",
]
CHANGES = [
    "The {s} endpoint changed from {h} to {h2}.",
    "From now on the {s} owner is {p}.",
    "The {s} now runs on {h2}; {h} is retired.",
]


@dataclass
class Clock:
    now: datetime = T0

    def __call__(self) -> datetime:
        return self.now


def text(rng: random.Random, change: bool) -> str:
    pattern = rng.choice(CHANGES if change else FILLER)
    h, h2 = rng.sample(HOSTS, 2)
    return pattern.format(
        s=rng.choice(SUBJECTS), h=h, h2=h2, p=rng.choice(PEOPLE), m=rng.randint(2, 90)
    )


def events(n: int, rng: random.Random) -> list[dict[str, Any]]:
    return [
        {
            "id": f"ev-{i}",
            "ts": (T0 + timedelta(minutes=i)).isoformat(),
            "type": "note",
            "summary": text(rng, change=i % 10 == 9),
            "refs": {"episodic": True},
        }
        for i in range(n)
    ]


def messages(n: int, rng: random.Random) -> list[dict[str, Any]]:
    return [
        {
            "id": f"msg-{i}",
            "ts": (T0 + timedelta(minutes=i)).isoformat(),
            "role": "user" if i % 2 == 0 else "assistant",
            "content": text(rng, change=i % 10 == 8),
        }
        for i in range(n)
    ]


def run(db: str, mode: str, n: int, seed: int, suffix: str = "") -> dict[str, float]:
    rng = random.Random(seed)
    clock = Clock()
    ws = f"bench-{mode}{suffix}"
    out: dict[str, float] = {}
    settings = Settings(supersession=mode)
    with Episodic.open(db, settings=settings, embedder=None, clock=clock) as mem:
        # Ids are unique per database: each run's carry its workspace.
        evs = [dict(e, workspace=ws, id=f"{ws}-{e['id']}") for e in events(n, rng)]
        started = time.perf_counter()
        for i in range(0, n, 100):
            mem.ingest(evs[i : i + 100])
        out["ingest events/s"] = n / (time.perf_counter() - started)
        clock.now = T0 + timedelta(days=3)
        started = time.perf_counter()
        checked = mem.check_supersessions().checked
        took = time.perf_counter() - started
        out["check events/s"] = checked / took if checked else 0.0

        turns = [dict(t, id=f"{ws}-{t['id']}") for t in messages(n, rng)]
        started = time.perf_counter()
        for i in range(0, n, 20):
            mem.add_messages(turns[i : i + 20], conversation=f"c-{i // 200}", workspace=ws)
        out["add messages/s"] = n / (time.perf_counter() - started)
        clock.now = T0 + timedelta(days=6)
        started = time.perf_counter()
        mem.segment(flush=True, workspace=ws)
        out["segment+check messages/s"] = n / (time.perf_counter() - started)
        counts = mem.count_memories(ScopeFilter(workspace_id=ws))
        out["superseded"] = float(sum(c for (_, s), c in counts.items() if s == "superseded"))

        queries = [text(rng, change=False) for _ in range(200)]
        times = []
        for q in queries:
            started = time.perf_counter()
            mem.recall(q, workspace=ws, mark=False)
            times.append((time.perf_counter() - started) * 1000)
        cuts = statistics.quantiles(times, n=20)
        out["recall p50 ms"] = statistics.median(times)
        out["recall p95 ms"] = cuts[18]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="events, and messages")
    parser.add_argument("--db", default=None, help="a postgresql:// URL (default: SQLite)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=3, help="runs of each mode, in turn")
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"off": [], "auto": []}
    with tempfile.TemporaryDirectory() as folder:
        for round_ in range(args.rounds):
            # In turn, off then auto, so that both see the same drift of a shared machine.
            for mode in ("off", "auto"):
                db = args.db or f"sqlite:///{Path(folder) / f'{mode}-{round_}'}.db"
                if db.startswith("sqlite"):
                    Episodic.open(db, embedder=None).close()  # episodic init
                runs[mode].append(run(db, mode, args.n, args.seed, suffix=str(round_)))
    print(f"medians of {args.rounds} rounds, {args.n} events and {args.n} messages")
    print(f"{'':28} {'off':>12} {'auto':>12} {'auto/off':>9}")
    for name in runs["off"][0]:
        off = statistics.median(r[name] for r in runs["off"])
        on = statistics.median(r[name] for r in runs["auto"])
        ratio = on / off if off else float("nan")
        print(f"{name:28} {off:12.1f} {on:12.1f} {ratio:9.2f}")


if __name__ == "__main__":
    main()
