"""Crash safety, full size (tests/test_crash.py is the CI run): per backend, 50 SIGKILLs of
a writer ingesting under load (an indexer sweeping beside it), 50 of an indexer mid-sweep
with the real local model, and 50 across upkeep jobs (compaction, consolidation, decay,
health). After every kill `episodic doctor --deep` must find nothing out of step, no
acknowledged event may be missing, and each killed job must run again at once and
complete. The figures go to RESULTS.md's "crash" section."""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))

from results import record

from crash_support import Tally, indexer_kills, upkeep_kills, writer_kills

# Per kind and backend; EPISODIC_CRASH_KILLS sets a shorter run (RESULTS.md shows the size).
KILLS = int(os.environ.get("EPISODIC_CRASH_KILLS", "50"))
COMMAND = "make stress (pytest tests/stress/test_crash.py)" + (
    f" with EPISODIC_CRASH_KILLS={KILLS}" if KILLS != 50 else ""
)
_seen: dict[tuple[str, str], Tally] = {}


@pytest.fixture(scope="module", autouse=True)
def figures() -> Iterator[None]:
    yield
    rows: dict[str, object] = {}
    for (kind, backend), t in sorted(_seen.items()):
        rows[f"{kind} kills survived, {backend}"] = t.kills
        if kind == "writer":
            rows[f"acknowledged events checked, {backend}"] = f"{t.acknowledged:,}"
            rows[f"acknowledged events lost, {backend}"] = t.lost
        if kind == "indexer":
            rows[f"indexer finished before its kill, {backend}"] = t.finished_before_kill
            rows[f"vectors committed by the killed indexers, {backend}"] = f"{t.acknowledged:,}"
        if kind == "upkeep":
            rows[f"upkeep job finished before its kill, {backend}"] = t.finished_before_kill
            rows[f"killed jobs re-run at once and ok, {backend}"] = t.reruns_ok
            rows[f"dead runners' leases taken over, {backend}"] = t.leases_recovered
        rows[f"doctor --deep mismatches after {kind} kills, {backend}"] = len(t.mismatches)
    if rows:
        record(
            "crash",
            "Crash safety: SIGKILLed writers, indexers and upkeep jobs",
            COMMAND,
            rows,
            "Writer: journal events in batches of 5, each batch's ids printed once `ingest` "
            "returned; an indexer (fake embedder) sweeps the same database meanwhile. "
            "Indexer: the real local MiniLM model, batches of 8, 120 new memories before "
            "each kill. Upkeep: compact, consolidate, decay and health in turn, each run "
            "again in-process right after its kill. doctor --deep runs after every kill "
            "and after the final sweep; afterwards every active memory has exactly one "
            "vector.",
        )


def _backend(url: str) -> str:
    return "SQLite" if url.startswith("sqlite") else "PostgreSQL"


def test_writer_kills(db_url: str, tmp_path: Path) -> None:
    tally = writer_kills(db_url, KILLS, random.Random(11), tmp_path)
    _seen[("writer", _backend(db_url))] = tally
    assert tally.lost == 0 and tally.mismatches == [], tally.mismatches[:5]


def test_indexer_kills(db_url: str, tmp_path: Path) -> None:
    tally = indexer_kills(db_url, KILLS, random.Random(12), tmp_path, embedder="local")
    _seen[("indexer", _backend(db_url))] = tally
    assert tally.mismatches == [], tally.mismatches[:5]


def test_upkeep_kills(db_url: str, tmp_path: Path) -> None:
    tally = upkeep_kills(db_url, KILLS, random.Random(13), tmp_path)
    _seen[("upkeep", _backend(db_url))] = tally
    assert tally.mismatches == [] and tally.reruns_ok == KILLS, tally.mismatches[:5]
