"""Crash safety, CI size (tests/stress/test_crash.py is the long run): processes are
SIGKILLed at random points, on both backends, and after every kill `episodic doctor
--deep` must find the derived data in step with the base tables.

- writer: a process ingests journal events in batches and prints each batch's ids once
  ``ingest`` returned (an acknowledged write); an indexer sweeps the same database
  meanwhile. Every acknowledged event must be stored after the kill, and after a sweep
  every active memory has exactly one vector.
- indexer: killed mid-sweep (the fake embedder: the test is about the atomicity of a
  batch's vectors, flags and `similar` edges, not about the model); a sweep afterwards
  finishes the rest, one vector each.
- upkeep: compaction, consolidation and decay killed mid-run (health too in the stress
  run); the same
  job run again at once must run (the dead runner's lease is recovered, not waited out)
  and complete.
"""

from __future__ import annotations

import os
import random
from datetime import datetime, timedelta
from pathlib import Path

from crash_support import NOW, indexer_kills, memory, upkeep_kills, writer_kills
from episodic.embed import FakeEmbedder
from episodic.upkeep.lease import holder_is_dead, run_exclusive

KILLS = 2


def test_killed_writers_lose_no_acknowledged_event(db_url: str, tmp_path: Path) -> None:
    tally = writer_kills(db_url, KILLS, random.Random(1), tmp_path)
    assert tally.kills == KILLS and tally.acknowledged > 0
    assert tally.lost == 0
    assert tally.mismatches == []


def test_killed_indexers_leave_no_half_indexed_batch(db_url: str, tmp_path: Path) -> None:
    tally = indexer_kills(db_url, KILLS, random.Random(2), tmp_path)
    assert tally.kills + tally.finished_before_kill == KILLS and tally.kills >= 1
    assert tally.mismatches == []


def test_killed_upkeep_jobs_recover_their_lease_and_complete(db_url: str, tmp_path: Path) -> None:
    # compaction, consolidation, decay (UPKEEP_JOBS' order)
    tally = upkeep_kills(db_url, 3, random.Random(3), tmp_path, fresh=40)
    assert tally.reruns_ok == 3
    assert tally.mismatches == []


def _an_hour_later() -> datetime:
    return NOW + timedelta(hours=1)


def test_a_lease_of_a_dead_process_is_taken_over_a_live_ones_is_not(db_url: str) -> None:
    with memory(db_url, FakeEmbedder()) as mem:
        store = mem.store
        node = os.uname().nodename
        dead = f"{node}:{2**22 + 12345}:1:deadbeef"  # above pid_max: no such process
        assert holder_is_dead(dead)
        assert store.acquire_lease("decay", "", dead, NOW, 1800)
        ran = run_exclusive(store, "decay", "", lambda: {"n": 1}, clock=lambda: NOW)
        assert ran.status == "ok" and store.lease_holder("decay", "") is None
        # Alive (this very test's parent process), or on another machine: only the TTL frees it.
        for holder in (f"{node}:{os.getppid()}:1:x", f"not-{node}:1:1:x"):
            assert not holder_is_dead(holder)
            assert store.acquire_lease("decay", "", holder, NOW, 1800)
            skipped = run_exclusive(store, "decay", "", lambda: {"n": 1}, clock=lambda: NOW)
            assert skipped.status == "skipped"
            assert run_exclusive(store, "decay", "", lambda: {}, clock=_an_hour_later).ok
