"""Load, CI-sized: 16 clients for ~15 s against the real ``episodic serve`` on each
backend, mixing writes and recalls while the background indexer embeds and segments.
Nothing may fail and every acknowledged write must be stored. Latencies are reported,
never asserted (numbers come from benchmarks and `make stress`, not timed tests); the
ten-minute, 64-client run is tests/stress/test_load.py."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from episodic import Episodic, Settings
from stress.load import (
    READ_KINDS,
    WRITE_KINDS,
    Client,
    Driver,
    LoadConfig,
    LoadReport,
    Sample,
    Written,
    check,
    run_load,
    store_readback,
)


@pytest.mark.model
def test_concurrent_writes_and_recalls_lose_nothing_and_never_fail(
    db_url: str, tmp_path: Path
) -> None:
    # A short sweep interval, so the indexer embeds and segments during the 15 s, not after.
    # Short conversations, so that clients finish some and forget them within the 15 s.
    config = LoadConfig(
        db=db_url,
        clients=16,
        seconds=15,
        sweep_interval_s=2,
        messages_per_conversation=3,
        seed_events=40,  # a small backlog: the indexer then catches up within the run
        log_dir=tmp_path,
        api_readback=100,
        # On a loaded CI machine 15 s can fall short of the traffic below: the run then goes
        # on until it is reached (at most 60 s), so the floor judges starvation, not speed.
        min_writes=101,
        min_reads=201,
        max_seconds=60,
    )
    report = run_load(config)
    print(report.figures())
    # RSS over 15 s is mostly warm-up: flatness is judged on the long run only.
    assert report.problems(check_rss=False) == []
    assert report.count(WRITE_KINDS) > 100 and report.count(READ_KINDS) > 200
    kinds = {w.kind for w in report.written}
    assert kinds == {"event", "message", "memory"}
    assert report.episodes > 0  # backfilled conversations were segmented under load


# -- the verdicts can fail: what the driver calls a lost write, an error, a leak ------------
def test_a_write_missing_or_changed_in_the_store_is_reported(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/m.db"
    with Episodic.open(db, settings=Settings(embedder="none")) as mem:
        mem.ingest([{"id": "e1", "workspace": "w", "type": "tool.call", "summary": "kept"}])
        mem.ingest([{"id": "e2", "workspace": "w", "type": "tool.call", "summary": "real"}])
    report = LoadReport(LoadConfig(db=db))
    report.written = [
        Written("event", "w", "e1", "kept"),
        Written("event", "w", "e2", "what was sent"),
        Written("event", "w", "never-stored", "x"),
        Written("event", "other", "e1", "kept"),  # in another workspace it is not there
    ]
    store_readback(report)
    assert report.lost == ["never-stored", "e1"] and report.altered == ["e2"]
    assert any("2 acknowledged writes lost" in p for p in report.problems(check_rss=False))


def test_a_failed_or_foreign_response_is_an_error() -> None:
    def response(status: int, body: object) -> httpx.Response:
        return httpx.Response(status, json=body)

    assert check("recall", response(200, {"hits": [{"workspace": "w"}]}), "w", 0) is None
    assert check("recall", response(200, {"hits": [{"workspace": "x"}]}), "w", 0)
    assert check("recall", response(500, {"error": {}}), "w", 0)
    assert check("recall", response(422, {"error": {}}), "w", 0)  # every request is valid
    assert check("message", response(201, {"id": "m"}), "w", 0) is None
    assert check("message", response(200, {"id": "m"}), "w", 0)
    assert check("event", response(200, {"stored": 3, "errors": []}), "w", 3) is None
    assert check("event", response(200, {"stored": 2, "errors": []}), "w", 3)


def test_the_clock_starts_once_every_client_is_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    # Making a client costs the driver ~20 ms of CPU; made inside the run, 64 of them held
    # the first requests up by ~1.4 s, which the report counted as the server's latency.
    made: list[float] = []
    real_init = httpx.AsyncClient.__init__

    def slow_init(self: httpx.AsyncClient, *args: Any, **kwargs: Any) -> None:
        time.sleep(0.01)
        made.append(time.perf_counter())
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(httpx.AsyncClient, "__init__", slow_init)
    clients = [Client(i, "w", f"a{i}", "c", "k", "k", "k") for i in range(8)]
    driver = Driver(LoadConfig(db="sqlite:///unused.db", seconds=0), "http://127.0.0.1:9", clients)
    asyncio.run(driver.run())
    assert len(made) == len(clients)
    assert max(made) < driver.t0


def test_a_short_run_goes_on_until_its_minimum_traffic_within_its_cap() -> None:
    config = LoadConfig(db="sqlite:///unused.db", seconds=15, min_writes=2, min_reads=1)
    driver = Driver(config, "http://127.0.0.1:9", [])
    driver.t0 = time.perf_counter() - 20  # 20 s in, past ``seconds``
    assert not driver.running()  # no cap: the run ends at ``seconds``, as before
    driver.t0 = time.perf_counter() - 5
    assert driver.running()
    config.max_seconds = 60
    driver.t0 = time.perf_counter() - 20
    assert driver.running()  # no write or read yet
    driver.samples += [
        Sample("event", 1, 0.01, 200, None, 0),
        Sample("recall", 1, 0.01, 200, None, 0),
    ]
    assert driver.running()  # one write short
    driver.samples.append(Sample("message", 2, 0.01, 200, None, 0))
    assert not driver.running()
    driver.samples.clear()
    driver.t0 = time.perf_counter() - 61
    assert not driver.running()  # past the cap, short or not


def test_rss_is_flat_within_the_tolerance_and_growth_past_it_is_reported() -> None:
    mb = 2**20
    report = LoadReport(LoadConfig(db="sqlite:///unused.db"), duration_s=100)
    report.rss = [(t, (300 + (40 if t < 25 else 0)) * mb) for t in range(0, 100, 2)]
    assert report.rss_flat()  # only warm-up grew
    report.rss = [(t, (300 + 2 * t) * mb) for t in range(0, 100, 2)]  # +2 MB/s: a leak
    assert not report.rss_flat()
    assert any(p.startswith("RSS grew") for p in report.problems())
    # The tolerance is the larger of 10% and 50 MB.
    report.rss = [(t, (1000 if t < 75 else 1090) * mb) for t in range(0, 100, 2)]
    assert report.rss_flat()
    report.rss = [(t, (1000 if t < 75 else 1110) * mb) for t in range(0, 100, 2)]
    assert not report.rss_flat()
