"""OpenTelemetry traces: off, nothing of the SDK is loaded and no span is made; on, one
HTTP request is a span with the recall, its stages, the embedder's call and the database
statements below it, continuing the caller's trace; and ``episodic serve`` with a recall
process sends, over OTLP, spans from both processes in one tree across the hop."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from episodic import Episodic, Settings, tracing
from episodic.embed.fake import FakeEmbedder
from episodic.errors import InvalidInput
from episodic.http import create_app
from episodic.store import open_store
from test_serve import served

NOW = datetime(2026, 5, 4, 12, 0, tzinfo=UTC)
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{CALLER_SPAN}-01"


@pytest.mark.parametrize(
    ("environ", "on"),
    [
        ({}, False),
        ({"OTEL_SERVICE_NAME": "x"}, False),  # a name says nothing of where to send
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, True),
        ({"OTEL_TRACES_EXPORTER": "console"}, True),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c"}, False),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c"}, False),
    ],
)
def test_the_otel_variables_decide_whether_traces_are_on(environ: dict[str, str], on: bool) -> None:
    assert tracing.wanted(environ) is on


def test_the_otlp_protocol_is_read_and_a_wrong_one_named() -> None:
    assert tracing.protocol({}) == "http/protobuf"
    assert tracing.protocol({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}) == "grpc"
    both = {
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
    }
    assert tracing.protocol(both) == "http/protobuf"
    with pytest.raises(InvalidInput) as caught:
        tracing.protocol({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"})
    assert caught.value.field == "OTEL_EXPORTER_OTLP_PROTOCOL"


def test_the_exporter_follows_the_variables_and_a_wrong_one_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.grpc")
    monkeypatch.setattr(tracing, "_started", False)
    with pytest.raises(InvalidInput) as caught:
        tracing.start_from_env({"OTEL_TRACES_EXPORTER": "zipkin"})
    assert caught.value.field == "OTEL_TRACES_EXPORTER"
    assert not tracing.ACTIVE
    monkeypatch.setattr(tracing, "_started", False)
    grpc = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
    }
    try:
        assert tracing.start_from_env(grpc) is True
        assert tracing.ACTIVE
        processors = tracing._provider._active_span_processor._span_processors
        # Where the SDK keeps a batch processor's exporter moved between releases.
        batch = processors[0]
        exporter = getattr(batch, "span_exporter", None) or batch._batch_processor._exporter
        assert type(exporter).__module__.endswith("proto.grpc.trace_exporter")
        assert tracing.start_from_env({}) is True  # once a process: the first call decided
    finally:
        provider = tracing._provider
        tracing.use(None)
        provider.shutdown()


OFF_SCRIPT = """
import sys
from fastapi.testclient import TestClient
from episodic import Episodic, tracing
from episodic.embed.fake import FakeEmbedder
from episodic.http import create_app
from episodic.store import open_store

mem = Episodic(store=open_store("sqlite:///" + sys.argv[1]), embedder=FakeEmbedder(dim=16))
_, key = mem.create_key("acme", role="admin")
with TestClient(create_app(mem)) as http:
    auth = {"Authorization": "Bearer " + key, "traceparent": sys.argv[2]}
    made = http.post("/v1/memories", headers=auth, json={"content": "disk is full"})
    assert made.status_code == 201
    mem.index_once()
    r = http.post("/v1/recall", headers=auth, json={"query": "disk full"})
    assert r.status_code == 200 and r.json()["hits"], r.text
mem.close()
sdk = ("opentelemetry.sdk", "opentelemetry.exporter")
loaded = sorted(m for m in sys.modules if m.startswith(sdk))
print("ACTIVE", tracing.ACTIVE)
print("LOADED", ",".join(loaded))
null = tracing._NULL
print("NULL", tracing.span("x") is null and tracing.statement("sqlite", "SELECT 1") is null)
"""


def _run_off(tmp_path: Path, env: dict[str, str], prelude: str = "") -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, "-c", prelude + OFF_SCRIPT, str(tmp_path / "off.db"), TRACEPARENT],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def test_off_a_server_loads_nothing_of_the_sdk_and_makes_no_span(tmp_path: Path) -> None:
    out = _run_off(tmp_path, {})
    assert "ACTIVE False" in out
    assert "LOADED \n" in out, out  # neither the SDK nor an exporter
    assert "NULL True" in out


def test_asked_for_without_the_extra_a_warning_names_it_and_traces_stay_off(
    tmp_path: Path,
) -> None:
    # The SDK made unimportable, as on an install without the [otel] extra.
    prelude = "import sys\nsys.modules['opentelemetry.sdk'] = None\n"
    out = _run_off(tmp_path, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}, prelude)
    assert "ACTIVE False" in out
    assert "[otel]" in out and "no traces are sent" in out


# -- on, in one process ---------------------------------------------------------------
@pytest.fixture
def spans() -> Iterator[Any]:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use(provider)
    try:
        yield exporter
    finally:
        tracing.use(None)
        provider.shutdown()


def _by_name(found: list[Any], name: str) -> list[Any]:
    return [s for s in found if s.name == name]


def _one(found: list[Any], name: str) -> Any:
    named = _by_name(found, name)
    assert len(named) == 1, (name, sorted(s.name for s in found))
    return named[0]


def _parent_of(child: Any) -> int | None:
    return None if child.parent is None else child.parent.span_id


def _under(found: list[Any], child: Any, ancestor: Any) -> bool:
    by_id = {s.context.span_id: s for s in found}
    node = child
    while node is not None and node.parent is not None:
        if node.parent.span_id == ancestor.context.span_id:
            return True
        node = by_id.get(node.parent.span_id)
    return False


def test_one_recall_request_is_a_tree_of_spans(db_url: str, spans: Any) -> None:
    system = "sqlite" if db_url.startswith("sqlite") else "postgresql"
    mem = Episodic(
        store=open_store(db_url),
        embedder=FakeEmbedder(dim=32),
        settings=Settings(),
        clock=lambda: NOW,
    )
    try:
        _, key = mem.create_key("acme", role="admin")
        with TestClient(create_app(mem)) as http:
            auth = {"Authorization": f"Bearer {key}"}
            made = http.post("/v1/memories", headers=auth, json={"content": "disk is full"})
            assert made.status_code == 201
            mem.index_once()
            spans.clear()
            r = http.post(
                "/v1/recall",
                headers={**auth, "traceparent": TRACEPARENT},
                json={"query": "disk full"},
            )
            assert r.status_code == 200 and r.json()["hits"]
            found = list(spans.get_finished_spans())

            request = _one(found, "POST /v1/recall")
            # The caller's trace goes on: same trace, the caller's span as parent.
            assert format(request.context.trace_id, "032x") == TRACE_ID
            assert _parent_of(request) == int(CALLER_SPAN, 16)
            assert request.attributes["http.route"] == "/v1/recall"
            assert request.attributes["http.response.status_code"] == 200
            assert request.attributes["episodic.request_id"] == r.headers["X-Request-ID"]
            recall = _one(found, "recall")
            assert _under(found, recall, request)
            assert recall.attributes["episodic.policy"] == "default"
            assert recall.attributes["episodic.mode"] == "vector"
            legs = _one(found, "recall.legs")
            ranking = _one(found, "recall.ranking")
            assert _parent_of(legs) == recall.context.span_id
            assert _parent_of(ranking) == recall.context.span_id
            for stage in ("recall.query_embedding", "recall.dense", "recall.sparse"):
                assert _parent_of(_one(found, stage)) == legs.context.span_id, stage
            embed = _one(found, "embed")
            assert _parent_of(embed) == _one(found, "recall.query_embedding").context.span_id
            assert embed.attributes["episodic.purpose"] == "query"
            statements = [s for s in found if s.attributes.get("db.system") == system]
            # The sparse leg's statements, run on a helper thread, stay in the tree.
            sparse = _one(found, "recall.sparse")
            assert any(_under(found, s, sparse) for s in statements)
            assert any(_under(found, s, ranking) for s in statements)
            assert all(s.context.trace_id == request.context.trace_id for s in found)
            assert all("disk" not in str(s.attributes.get("db.statement")) for s in statements)

            spans.clear()
            rendered = http.post("/v1/render", headers=auth, json={"query": "disk full"})
            assert rendered.status_code == 200
            found = list(spans.get_finished_spans())
            assert _under(found, _one(found, "recall.render"), _one(found, "POST /v1/render"))
    finally:
        mem.close()


# -- on, across the hop to a recall process ---------------------------------------------
class Collector:
    """An OTLP/HTTP receiver: the spans every process sends, with their process's pid."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
                    ExportTraceServiceRequest,
                )

                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                for rs in request.resource_spans:
                    attrs = {a.key: a.value for a in rs.resource.attributes}
                    pid = attrs["process.pid"].int_value if "process.pid" in attrs else None
                    service = attrs["service.name"].string_value
                    for ss in rs.scope_spans:
                        for s in ss.spans:
                            with collector.lock:
                                collector.spans.append(
                                    {
                                        "name": s.name,
                                        "trace": s.trace_id.hex(),
                                        "id": s.span_id.hex(),
                                        "parent": s.parent_span_id.hex(),
                                        "pid": pid,
                                        "service": service,
                                    }
                                )
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, name: str, timeout: float = 30) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if any(s["name"] == name for s in self.spans):
                    return list(self.spans)
            time.sleep(0.1)
        raise AssertionError(f"no {name} span came: {[s['name'] for s in self.spans]}")


def test_serve_sends_one_trace_across_the_recall_process(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.sdk")
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    db = f"sqlite:///{tmp_path}/hop.db"
    with Episodic.open(db, settings=Settings(embedder="none")) as mem:
        _, admin = mem.create_key("acme", role="admin")
    collector = Collector()
    env = {
        "EPISODIC_EMBEDDER": "none",
        "EPISODIC_RECALL_PROCESSES": "1",
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "OTEL_SERVICE_NAME": "episodic-test",
    }
    try:
        with served(db, env=env) as base, httpx.Client(timeout=60) as http:
            auth = {"Authorization": f"Bearer {admin}"}
            made = http.post(f"{base}/v1/memories", headers=auth, json={"content": "disk is full"})
            assert made.status_code == 201
            r = http.post(
                f"{base}/v1/recall",
                headers={**auth, "traceparent": TRACEPARENT},
                json={"query": "disk full"},
            )
            assert r.status_code == 200 and r.json()["hits"], r.text
            found = collector.wait_for("recall.worker")
            found = collector.wait_for("POST /v1/recall")
    finally:
        collector.server.shutdown()
    mine = [s for s in found if s["trace"] == TRACE_ID]
    by_id = {s["id"]: s for s in mine}

    def one(name: str) -> dict[str, Any]:
        named = [s for s in mine if s["name"] == name]
        assert len(named) == 1, (name, sorted(s["name"] for s in mine))
        return named[0]

    def under(child: dict[str, Any], ancestor: dict[str, Any]) -> bool:
        node: dict[str, Any] | None = child
        while node is not None:
            if node["parent"] == ancestor["id"]:
                return True
            node = by_id.get(node["parent"])
        return False

    request, hop, worker = one("POST /v1/recall"), one("recall.process_hop"), one("recall.worker")
    assert request["parent"] == CALLER_SPAN
    assert under(hop, request)
    assert worker["parent"] == hop["id"]  # the context crossed the process boundary
    assert worker["pid"] != request["pid"]  # ... into another process
    assert {s["service"] for s in mine} == {"episodic-test"}
    recall = one("recall")
    assert recall["parent"] == worker["id"] and recall["pid"] == worker["pid"]
    assert under(one("recall.sparse"), recall) and under(one("recall.ranking"), recall)
    statements = [s for s in mine if s["name"].endswith(" sqlite")]
    assert any(under(s, worker) for s in statements)
    assert any(under(s, request) and s["pid"] == request["pid"] for s in statements)
