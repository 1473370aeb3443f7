"""Every response carries ``X-Request-ID`` (the caller's when well-formed, else a new
one), error bodies name it, ``Client``/``AsyncClient`` keep it on the errors they raise,
and ``EPISODIC_LOG_FORMAT=json`` writes one JSON object per line naming the request."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from episodic import AsyncClient, Client, Episodic, Settings
from episodic.cli import app as cli_app
from episodic.embed.fake import FakeEmbedder
from episodic.errors import NotFound, Unauthenticated
from episodic.http import asgi, create_app
from episodic.http.limits import MAX_BODY_BYTES
from episodic.logs import JsonFormatter, configure_logging, log_format
from episodic.store import open_store
from servers import serve

WS = "acme"
NOW = datetime(2026, 5, 4, 12, 0, tzinfo=UTC)
NEW_ID = re.compile(r"[0-9a-f]{32}")


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Episodic]:
    m = Episodic(
        store=open_store(f"sqlite:///{tmp_path}/memory.db"),
        embedder=FakeEmbedder(dim=64),
        settings=Settings(),
        clock=lambda: NOW,
    )
    yield m
    m.close()


@pytest.fixture
def access_lines() -> Iterator[io.StringIO]:
    """What the server logs, as JSON lines."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("episodic.access")
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    yield stream
    logger.removeHandler(handler)
    logger.setLevel(level)


def parsed(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]


def test_a_new_id_on_every_response_and_the_callers_kept(mem: Episodic) -> None:
    with TestClient(create_app(mem)) as http:
        first = http.get("/healthz").headers["x-request-id"]
        second = http.get("/healthz").headers["x-request-id"]
        assert NEW_ID.fullmatch(first) and NEW_ID.fullmatch(second) and first != second
        mine = http.get("/healthz", headers={"X-Request-ID": "trace-42.a_b"})
        assert mine.headers["x-request-id"] == "trace-42.a_b"


@pytest.mark.parametrize("sent", ["has space", "x" * 129, "semi;colon", ""])
def test_a_malformed_id_is_replaced(mem: Episodic, sent: str) -> None:
    with TestClient(create_app(mem)) as http:
        got = http.get("/healthz", headers={"X-Request-ID": sent}).headers["x-request-id"]
    assert got != sent and NEW_ID.fullmatch(got)


def test_error_bodies_name_the_request(mem: Episodic) -> None:
    with TestClient(asgi(mem), raise_server_exceptions=False) as http:
        denied = http.get("/v1/memories", headers={"X-Request-ID": "r-1"})
        assert denied.status_code == 401
        assert denied.json()["error"]["request_id"] == "r-1" == denied.headers["x-request-id"]
        # Refused by the size limit, outside the app: the id is there too.
        big = http.post(
            "/v1/events",
            content=b"x" * (MAX_BODY_BYTES + 1),
            headers={"content-type": "application/json"},
        )
        assert big.status_code == 413
        assert big.json()["error"]["request_id"] == big.headers["x-request-id"]
        assert NEW_ID.fullmatch(big.headers["x-request-id"])


def test_an_unexpected_error_names_the_request(
    mem: Episodic, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken() -> str:
        raise RuntimeError("boom")

    monkeypatch.setattr(mem, "recall_mode", broken)
    with TestClient(create_app(mem), raise_server_exceptions=False) as http:
        r = http.get("/healthz", headers={"X-Request-ID": "oops-7"})
    assert r.status_code == 500
    assert r.headers["x-request-id"] == "oops-7"
    assert r.json()["error"]["request_id"] == "oops-7"


def test_both_clients_keep_the_id_the_server_logged(
    mem: Episodic, access_lines: io.StringIO
) -> None:
    secret = mem.create_key(WS, role="admin")[1]
    with serve(asgi(mem)) as base:
        with Client(base, secret) as client, pytest.raises(NotFound) as missing:
            client.memory("m_nope")
        with Client(base, "not-a-key") as client, pytest.raises(Unauthenticated) as denied:
            client.memory("m_nope")

        async def run() -> str | None:
            async with AsyncClient(base, secret) as client:
                try:
                    await client.memory("m_nope")
                except NotFound as exc:
                    return exc.request_id
            return None

        async_id = anyio.run(run)
    ids = [missing.value.request_id, denied.value.request_id, async_id]
    assert all(isinstance(i, str) and NEW_ID.fullmatch(i) for i in ids)
    assert len(set(ids)) == 3
    logged = {line["request_id"]: line for line in parsed(access_lines)}
    for request_id in ids:
        assert logged[str(request_id)]["route"] == "/v1/memories/{memory_id}"
    assert logged[str(missing.value.request_id)]["status"] == 404
    assert logged[str(missing.value.request_id)]["workspace"] == WS
    assert logged[str(denied.value.request_id)]["status"] == 401


def test_json_log_lines_name_the_request(mem: Episodic, access_lines: io.StringIO) -> None:
    secret = mem.create_key(WS, role="admin")[1]
    with TestClient(asgi(mem)) as http:
        ok = http.post(
            "/v1/memories",
            json={"content": "the deploy runs on Fridays"},
            headers={"authorization": f"Bearer {secret}", "X-Request-ID": "w-1"},
        )
        assert ok.status_code < 300, ok.text
        http.get("/nowhere", headers={"X-Request-ID": "w-2"})
    lines = parsed(access_lines)
    assert {"time", "level", "logger", "message", "request_id", "workspace", "route"} <= set(
        lines[0]
    )
    by_id = {line["request_id"]: line for line in lines}
    wrote = by_id["w-1"]
    assert wrote["route"] == "/v1/memories" and wrote["workspace"] == WS
    assert wrote["status"] == ok.status_code and wrote["level"] == "INFO"
    assert isinstance(wrote["duration_ms"], float) and wrote["duration_ms"] > 0
    assert wrote["logger"] == "episodic.access"
    datetime.fromisoformat(str(wrote["time"]))
    # No route matched: no path (which may hold ids) stands in for one.
    assert by_id["w-2"]["route"] is None and by_id["w-2"]["status"] == 404


def test_log_format_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert log_format({}) == "text"
    assert log_format({"EPISODIC_LOG_FORMAT": "JSON"}) == "json"
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    stream = io.StringIO()
    root.handlers[:] = [logging.StreamHandler(stream)]
    try:
        configure_logging(logging.WARNING, {"EPISODIC_LOG_FORMAT": "json"})
        logging.getLogger("episodic.test").warning("disk at %d%%", 91)
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)
    line = json.loads(stream.getvalue().strip().splitlines()[-1])
    assert line["message"] == "disk at 91%" and line["logger"] == "episodic.test"
    assert line["request_id"] is None


def test_the_cli_refuses_an_unknown_log_format(tmp_path: Path) -> None:
    env = {"EPISODIC_DB": f"sqlite:///{tmp_path}/m.db", "EPISODIC_LOG_FORMAT": "xml"}
    result = CliRunner().invoke(cli_app, ["init"], env=env)
    assert result.exit_code == 2
    assert "EPISODIC_LOG_FORMAT" in result.output


def test_serve_writes_json_lines_naming_each_request(tmp_path: Path) -> None:
    import signal
    import subprocess

    import httpx

    from test_serve import start_serving

    db = f"sqlite:///{tmp_path}/logs.db"
    with Episodic.open(db, settings=Settings(embedder="none")) as m:
        m.create_key(WS, role="admin")
    log = tmp_path / "serve.log"
    with log.open("wb") as sink:
        env = {"EPISODIC_EMBEDDER": "none", "EPISODIC_LOG_FORMAT": "json"}
        proc, base = start_serving(db, env=env, stderr=sink, stdout=subprocess.DEVNULL)
        try:
            r = httpx.get(f"{base}/v1/memories", headers={"X-Request-ID": "from-agent-9"})
            assert r.status_code == 401
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(30)
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    mine = [line for line in lines if line["request_id"] == "from-agent-9"]
    assert len(mine) == 1  # ours, and not uvicorn's access line beside it
    assert mine[0]["route"] == "/v1/memories" and mine[0]["status"] == 401
    # Every line parsed as JSON above, the sparse-only warning among them (logged once for
    # the process group, by the server, under episodic.mode: its recall processes keep quiet).
    assert any(line["logger"] == "episodic.mode" and line["level"] == "WARNING" for line in lines)
