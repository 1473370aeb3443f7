"""``GET /metrics`` as a scraper sees it: ``episodic serve`` with a recall process runs a
scripted workload, and the page, parsed with ``prometheus_client``'s own parser, shows
the requests, the recalls (timed in the worker process), the supersession and the refused
calls it was given. The page needs an admin key or ``EPISODIC_METRICS_TOKEN``; with
``--metrics-port`` it is served on a port of its own with none."""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from episodic import Episodic, Settings, metrics
from episodic.cli import app
from episodic.http import asgi
from servers import serve
from test_serve import free_port, served

TOKEN = "scrape-secret-1"
runner = CliRunner()


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(
    found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str
) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


def test_a_scrape_after_a_workload(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/metrics.db"
    with Episodic.open(db, settings=Settings(embedder="none")) as mem:
        _, admin = mem.create_key("acme", role="admin")
        _, agent = mem.create_key("acme", role="agent", agent="bot")
    port = free_port()
    env = {
        "EPISODIC_EMBEDDER": "none",
        "EPISODIC_RECALL_PROCESSES": "1",
        "EPISODIC_METRICS_TOKEN": TOKEN,
    }
    with served(db, "--metrics-port", str(port), env=env) as base, httpx.Client(timeout=60) as http:
        auth = {"Authorization": f"Bearer {admin}"}
        old = http.post(f"{base}/v1/memories", headers=auth, json={"content": "disk is full"})
        assert old.status_code == 201, old.text
        for _ in range(3):
            r = http.post(f"{base}/v1/recall", headers=auth, json={"query": "disk full"})
            assert r.status_code == 200
        swap = http.post(
            f"{base}/v1/memories/{old.json()['id']}/supersede",
            headers=auth,
            json={"new": "disk has room again"},
        )
        assert swap.status_code < 300, swap.text
        assert http.get(f"{base}/v1/memories").status_code == 401

        assert http.get(f"{base}/metrics").status_code == 401
        bot = {"Authorization": f"Bearer {agent}"}
        assert http.get(f"{base}/metrics", headers=bot).status_code == 403
        by_token = http.get(f"{base}/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        assert by_token.status_code == 200
        page = http.get(f"{base}/metrics", headers=auth)
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/plain")
        alone = http.get(f"http://127.0.0.1:{port}/metrics")
        assert alone.status_code == 200

    found = samples(page.text)
    requests = "episodic_http_requests_total"
    assert value(found, requests, route="/v1/recall", method="POST", status="200") == 3
    assert value(found, requests, route="/v1/memories", method="POST", status="201") == 1
    assert value(found, requests, route="/v1/memories", method="GET", status="401") == 1
    assert value(found, requests, route="/metrics", method="GET", status="401") == 1
    latency = "episodic_http_request_duration_seconds"
    assert value(found, f"{latency}_count", route="/v1/recall", method="POST") == 3
    assert value(found, f"{latency}_sum", route="/v1/recall", method="POST") > 0
    # Recalls ran in the recall process: its figures reach the server's page.
    recall = "episodic_recall_duration_seconds"
    assert value(found, f"{recall}_count", policy="default", mode="sparse-only") == 3
    assert value(found, f"{recall}_bucket", policy="default", mode="sparse-only", le="+Inf") == 3
    assert value(found, "episodic_recalls_total", policy="default", mode="sparse-only") == 3
    assert value(found, "episodic_supersessions_total", decided_by="explicit") == 1
    stage = "episodic_recall_stage_duration_seconds_count"
    assert value(found, stage, stage="sparse") == 3 and value(found, stage, stage="ranking") == 3
    assert value(found, stage, stage="dense") == 0  # no embedder: no dense leg
    assert value(found, "episodic_memories_active") == 1  # the other was superseded
    assert value(found, "episodic_vectors_pending") == 1  # no embedder: it waits
    assert value(found, "episodic_database_size_bytes") > 4096
    # No label holds a workspace, a memory id or a path.
    labels = {v for (_, pairs) in found for _, v in pairs}
    assert "acme" not in labels and old.json()["id"] not in labels
    assert not any(v.startswith("/v1/memories/m") for v in labels)
    # The port of its own shows the same figures.
    assert value(samples(alone.text), f"{recall}_count", policy="default", mode="sparse-only") == 3


@pytest.mark.parametrize(
    ("decided_by", "kind"),
    [
        ("offline:negation", "offline"),
        ("llm:gpt-4o-mini", "llm"),
        ("explicit:corrective", "explicit"),
        ("inherited", "inherited"),
        ("someone's own words", "other"),
    ],
)
def test_who_decided_is_a_fixed_kind(decided_by: str, kind: str) -> None:
    assert metrics.decider_kind(decided_by) == kind


def scrape_now() -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return samples(metrics.exposition().decode())


def test_embedder_calls_and_failures_are_counted(tmp_path: Path) -> None:
    from episodic.embed.fake import FakeEmbedder
    from episodic.errors import EmbedderUnavailable
    from episodic.store import open_store

    before = scrape_now()
    embedder = FakeEmbedder(dim=16)
    mem = Episodic(store=open_store(f"sqlite:///{tmp_path}/e.db"), embedder=embedder)
    try:
        mem.recall("disk full", workspace="acme")

        def down(texts: list[str]) -> list[list[float]]:
            raise EmbedderUnavailable("model server down")

        embedder.embed_batch = down  # type: ignore[method-assign,assignment]
        mem.recall("disk full again", workspace="acme")
    finally:
        mem.close()
    after = scrape_now()

    def moved(name: str) -> float:
        return value(after, name) - value(before, name)

    def moved_for(name: str, purpose: str) -> float:
        return value(after, name, purpose=purpose) - value(before, name, purpose=purpose)

    # A recall's query embedding is timed apart from the indexer's batches.
    assert moved_for("episodic_embedder_errors_total", "query") >= 1
    assert moved_for("episodic_embedder_call_duration_seconds_count", "query") >= 2
    assert moved_for("episodic_embedder_call_duration_seconds_count", "index") == 0
    mem = Episodic(store=open_store(f"sqlite:///{tmp_path}/e.db"), embedder=FakeEmbedder(dim=16))
    try:
        mem.remember("the disk is full", workspace="acme")
        mem.index_once()
    finally:
        mem.close()
    indexed = scrape_now()
    count = "episodic_embedder_call_duration_seconds_count"
    assert value(indexed, count, purpose="index") > value(after, count, purpose="index")
    assert value(indexed, count, purpose="query") == value(after, count, purpose="query")
    stage = "episodic_recall_stage_duration_seconds_count"
    for name in ("query_embedding", "dense", "sparse", "ranking"):
        assert value(after, stage, stage=name) > value(before, stage, stage=name), name


def test_upkeep_runs_and_failures_are_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from episodic.embed.fake import FakeEmbedder
    from episodic.store import open_store

    before = scrape_now()
    mem = Episodic(store=open_store(f"sqlite:///{tmp_path}/u.db"), embedder=FakeEmbedder(dim=16))
    try:
        sched = mem.scheduler()

        def broken() -> None:
            raise RuntimeError("decay broke")

        monkeypatch.setattr(sched.jobs, "decay", broken)
        sched.run_pending()
    finally:
        mem.close()
    after = scrape_now()
    runs = value(after, "episodic_upkeep_runs_total", job="decay") - value(
        before, "episodic_upkeep_runs_total", job="decay"
    )
    fails = value(after, "episodic_upkeep_failures_total", job="decay") - value(
        before, "episodic_upkeep_failures_total", job="decay"
    )
    reviews = value(after, "episodic_upkeep_runs_total", job="reviews") - value(
        before, "episodic_upkeep_runs_total", job="reviews"
    )
    assert (runs, fails, reviews) == (1, 1, 1)
    assert value(after, "episodic_upkeep_duration_seconds_count", job="reviews") >= 1


def test_a_request_shed_by_admission_control_is_counted() -> None:
    import anyio

    from episodic.http.limits import Lane, Overloaded

    lane = Lane("recall", 1, 0.5, 2.0)
    before = value(scrape_now(), "episodic_http_shed_total", lane="recall")

    async def run() -> None:
        async with lane.limiter():  # the one slot taken: the next would wait ~2 s
            with pytest.raises(Overloaded):
                lane.admit()

    anyio.run(run)
    assert value(scrape_now(), "episodic_http_shed_total", lane="recall") == before + 1


@contextmanager
def writes_held(store: Any) -> Iterator[None]:
    """Every write connection busy (SQLite's writer, or each of PostgreSQL's write pool's)
    for the block, as under a burst of writes."""
    if hasattr(store, "_write_pool"):
        pool = store._write_pool
        held = [pool.getconn() for _ in range(pool.max_size)]
        try:
            yield
        finally:
            for conn in held:
                pool.putconn(conn)
        return
    with store._lock:
        yield


def test_admissions_drops_waits_lag_and_size_after_a_workload(db_url: str) -> None:
    """A scripted workload over HTTP, then a scrape of /metrics: memories admitted, events
    refused by rule and sent twice, an entry extraction dropped, a write that waited for
    the writer, the vectors waiting and for how long, and the database's size."""
    from fastapi.testclient import TestClient

    from episodic.http import create_app
    from episodic.store import open_store

    clock = [datetime(2026, 5, 4, 12, 0, tzinfo=UTC)]
    mem = Episodic(
        store=open_store(db_url),
        embedder=None,
        settings=Settings(embedder="none"),
        clock=lambda: clock[0],
    )
    before = scrape_now()
    try:
        _, admin = mem.create_key("acme", role="admin")
        auth = {"Authorization": f"Bearer {admin}"}
        with TestClient(create_app(mem)) as http:
            events = [
                {
                    "id": "e1",
                    "ts": "2026-05-04T09:00:00+00:00",
                    "type": "approval.denied",
                    "summary": "rollback denied without a ticket",
                },
                {
                    "id": "e2",
                    "ts": "2026-05-04T09:01:00+00:00",
                    "type": "network.flow",
                    "summary": "bytes went out",
                },
                {
                    "id": "e3",
                    "ts": "2026-05-04T09:02:00+00:00",
                    "type": "tool.called",
                    "summary": "ls ran",
                },
            ]
            first = http.post("/v1/events", headers=auth, json={"events": events})
            assert first.status_code == 200, first.text
            again = http.post("/v1/events", headers=auth, json={"events": events[:1]})
            assert again.json()["duplicates"] == 1
            said = "The payment gateway returns 409 on partial refunds."
            transcript = [{"role": "user", "content": said, "ts": clock[0].isoformat()}]
            done = http.post("/v1/layer/complete", headers=auth, json={"transcript": transcript})
            assert done.status_code == 200, done.text
            clock[0] += timedelta(days=7)
            repeat = "The payment gateway still returns 409 on partial refunds."
            transcript = [{"role": "user", "content": repeat, "ts": clock[0].isoformat()}]
            done = http.post("/v1/layer/complete", headers=auth, json={"transcript": transcript})
            assert done.status_code == 200, done.text

            waiting: list[int] = []

            def write() -> None:
                r = http.post("/v1/memories", headers=auth, json={"content": "disk is full"})
                waiting.append(r.status_code)

            with writes_held(mem.store):
                writer = threading.Thread(target=write)
                writer.start()
                time.sleep(0.3)
            writer.join(30)
            assert waiting == [201]
            page = http.get("/metrics", headers=auth)
            assert page.status_code == 200
    finally:
        mem.close()
    after = samples(page.text)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("episodic_memories_admitted_total") >= 1
    assert moved("episodic_events_not_admitted_total", rule="never-admitted-type") == 1
    assert moved("episodic_events_not_admitted_total", rule="unlisted-type") == 1
    assert moved("episodic_events_duplicate_total") == 1
    assert moved("episodic_entries_dropped_total", reason="restates_known") == 1
    wait = "episodic_db_pool_wait_seconds"
    assert moved(f"{wait}_count", pool="write") >= 1
    assert moved(f"{wait}_sum", pool="write") >= 0.2
    # No embedder: every memory waits for its vector, the oldest since the first write.
    assert value(after, "episodic_vectors_pending") >= 3
    assert value(after, "episodic_index_lag_seconds") > 0
    assert value(after, "episodic_database_size_bytes") > 4096
    labels = {v for (_, pairs) in after for _, v in pairs}
    assert "acme" not in labels


@pytest.fixture
def without_prometheus(monkeypatch: pytest.MonkeyPatch) -> None:
    """prometheus-client as if not installed (a server installed piecemeal): importing it
    fails. What this process already recorded is put back afterwards."""
    monkeypatch.setattr(metrics, "_absent", metrics._absent)
    for name in [n for n in sys.modules if n.split(".")[0] == "prometheus_client"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "prometheus_client", None)


@pytest.mark.usefixtures("without_prometheus")
def test_without_prometheus_client_metrics_answer_501_naming_the_install(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Not a 500 with a traceback at every scrape: a 501 whose body names the extra to
    install, said once in the server's log; the key is still checked first."""
    with Episodic.open(f"sqlite:///{tmp_path}/m.db", settings=Settings(embedder="none")) as mem:
        _, admin = mem.create_key("acme", role="admin")
        with serve(asgi(mem)) as base, httpx.Client(timeout=60) as http:
            assert http.get(f"{base}/metrics").status_code == 401
            caplog.clear()
            with caplog.at_level(logging.WARNING, logger="episodic"):
                answers = [
                    http.get(f"{base}/metrics", headers={"Authorization": f"Bearer {admin}"})
                    for _ in range(3)
                ]
    assert {r.status_code for r in answers} == {501}
    error = answers[0].json()["error"]
    assert error["code"] == "metrics_unavailable"
    assert "prometheus-client" in error["message"]
    assert "pip install 'episodic-agent-memory[server]'" in error["message"]
    said = [r for r in caplog.records if "/metrics" in r.getMessage()]
    assert len(said) == 1 and said[0].exc_info is None, [r.getMessage() for r in said]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def cli_env(tmp_path: Path) -> dict[str, str]:
    env = {"EPISODIC_DB": f"sqlite:///{tmp_path}/m.db", "EPISODIC_EMBEDDER": "none"}
    assert runner.invoke(app, ["init"], env=env).exit_code == 0
    return env


@pytest.mark.usefixtures("without_prometheus")
def test_without_prometheus_client_serve_metrics_port_and_doctor_say_so(tmp_path: Path) -> None:
    env = cli_env(tmp_path)
    port = str(free_port())
    refused = runner.invoke(app, ["serve", "--metrics-port", port], env=env)
    assert refused.exit_code == 2, refused.output
    assert "--metrics-port" in refused.stderr and "[server]" in refused.stderr
    assert "Traceback" not in refused.output
    report = runner.invoke(app, ["doctor", "--json"], env=env)
    check = next(c for c in json.loads(report.stdout)["checks"] if c["name"] == "metrics")
    assert check["status"] == "warn" and "501" in check["detail"]
    assert check["fix"] == "pip install 'episodic-agent-memory[server]'"


def test_doctor_says_metrics_are_served(tmp_path: Path) -> None:
    report = runner.invoke(app, ["doctor", "--json"], env=cli_env(tmp_path))
    check = next(c for c in json.loads(report.stdout)["checks"] if c["name"] == "metrics")
    assert check["status"] == "ok" and check["fix"] is None


@pytest.mark.usefixtures("without_prometheus")
def test_doctor_prints_the_install_to_run_whole(tmp_path: Path) -> None:
    """The text report shows brackets as written: rich markup would eat ``[server]``."""
    report = runner.invoke(app, ["doctor"], env=cli_env(tmp_path))
    assert "fix: pip install 'episodic-agent-memory[server]'" in report.stdout, report.stdout
