"""Load, CI-sized: 16 clients for ~15 s against the real ``episodic serve`` on each
backend, mixing writes and recalls while the background indexer embeds and segments.
Nothing may fail and every acknowledged write must be stored. Latencies are reported,
never asserted (numbers come from benchmarks and `make stress`, not timed tests); the
ten-minute, 64-client run is tests/stress/test_load.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from stress.load import READ_KINDS, WRITE_KINDS, LoadConfig, run_load


@pytest.mark.model
def test_concurrent_writes_and_recalls_lose_nothing_and_never_fail(
    db_url: str, tmp_path: Path
) -> None:
    # A short sweep interval, so the indexer embeds and segments during the 15 s, not after.
    config = LoadConfig(
        db=db_url, clients=16, seconds=15, sweep_interval_s=2, log_dir=tmp_path, api_readback=100
    )
    report = run_load(config)
    print(report.figures())
    # RSS over 15 s is mostly warm-up: flatness is judged on the long run only.
    assert report.problems(check_rss=False) == []
    assert report.count(WRITE_KINDS) > 100 and report.count(READ_KINDS) > 200
    kinds = {w.kind for w in report.written}
    assert kinds == {"event", "message", "memory"}
    assert report.episodes > 0  # backfilled conversations were segmented under load
