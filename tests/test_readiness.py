"""``/healthz`` answers while the process does; ``/readyz`` answers 200 only while the
database answers at the schema this code knows, and reports the embedder's state."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from episodic import Episodic, Settings
from episodic.embed.fake import FakeEmbedder
from episodic.errors import EmbedderUnavailable, StoreUnavailable
from episodic.http import create_app
from episodic.store import open_store
from episodic.store.migrations import LATEST_VERSION


@pytest.fixture
def mem(db_url: str) -> Iterator[Episodic]:
    m = Episodic(store=open_store(db_url), embedder=FakeEmbedder(dim=64), settings=Settings())
    yield m
    m.close()


def test_ready_when_the_database_answers_at_the_latest_schema(mem: Episodic) -> None:
    with TestClient(create_app(mem)) as http:
        live = http.get("/healthz")
        ready = http.get("/readyz")
    assert live.status_code == 200 and live.json()["episodic"] == "vector"
    assert ready.status_code == 200, ready.text
    body = ready.json()
    assert body["status"] == "ready"
    assert body["database"]["ok"] and body["migrations"]["ok"]
    assert f"v{LATEST_VERSION}" in body["migrations"]["detail"]
    assert body["embedder"] == {"ok": True, "detail": "vector"}


def test_not_ready_when_the_database_does_not_answer(
    mem: Episodic, monkeypatch: pytest.MonkeyPatch
) -> None:
    def down() -> int:
        raise StoreUnavailable("cannot reach the database: connection refused")

    with TestClient(create_app(mem)) as http:
        monkeypatch.setattr(mem.store, "schema_version", down)
        r = http.get("/readyz")
    assert r.status_code == 503
    assert r.json()["status"] == "not_ready"
    assert r.json()["database"] == {
        "ok": False,
        "detail": "cannot reach the database: connection refused",
    }


def test_not_ready_when_migrations_are_behind(
    mem: Episodic, monkeypatch: pytest.MonkeyPatch
) -> None:
    with TestClient(create_app(mem)) as http:
        monkeypatch.setattr(mem.store, "schema_version", lambda: LATEST_VERSION - 1)
        r = http.get("/readyz")
    assert r.status_code == 503
    assert r.json()["migrations"]["ok"] is False
    assert r.json()["database"]["ok"] is True


def test_sparse_only_is_reported_but_still_ready(
    mem: Episodic, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(texts: list[str]) -> list[list[float]]:
        raise EmbedderUnavailable("model server down")

    monkeypatch.setattr(mem.embedder, "embed_batch", broken)
    with TestClient(create_app(mem)) as http:
        r = http.get("/readyz")
    assert r.status_code == 200
    assert r.json()["embedder"]["ok"] is False
    assert r.json()["embedder"]["detail"].startswith("sparse-only")
    assert "model server down" in r.json()["embedder"]["detail"]
