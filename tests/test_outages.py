"""Outages: the embedder down, slow or answering garbage, and the LLM down or hostile.

The embedder is a real HTTP server speaking Ollama's protocol (tests/embed_server.py) that
the real ``OllamaEmbedder`` talks to; the LLM is the scripted chat server
(tests/chat_server.py) behind the real ``OpenAICompatLLM``. For every failure mode: ingest
keeps working and acknowledges, recall answers from the sparse leg and says why, nothing
garbage is stored, and once the server is back everything pending gets indexed and recall
is back to vector mode. LLM-backed steps fall back to their offline paths and nothing that
failed validation is stored.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from chat_server import ChatServer, running_chat_server
from embed_server import FAILURES, MODEL, EmbedServer, running_embed_server
from episodic import Episodic, Settings
from episodic.cli import app as cli_app
from episodic.embed.fake import FakeEmbedder
from episodic.http import asgi
from episodic.layer import MemoryLayer
from episodic.llm.openai_compat import OpenAICompatLLM
from episodic.model import ScopeFilter
from episodic.recall.engine import MODE_SPARSE_ONLY, MODE_VECTOR
from episodic.store import open_store
from hostile_payloads import block_problems, frames
from outage_support import (
    CLUSTER,
    CONVERSATION,
    LLM_FAILURES,
    PWN,
    TIMEOUT_S,
    responder_for,
    settings_for,
    stored_text,
    vector_census,
)
from servers import serve

NOW = datetime.now(UTC)


def events(tag: str, n: int, ws: str = "acme") -> list[dict[str, Any]]:
    return [
        {
            "id": f"{tag}-{i}",
            "workspace": ws,
            "type": "peer.escalation",
            "summary": f"{tag} checkout incident number {i}: cache {tag}{i} evicted",
            "ts": (NOW - timedelta(minutes=n - i)).isoformat(),
        }
        for i in range(n)
    ]


# Every mode runs on SQLite; on PostgreSQL (slower to set up per test) one of each kind:
# refused, timed out, an HTTP error, an unusable answer. Store-wise they are all the same
# path: the sweep fails before anything is written.
PG_EMBED_MODES = ("down", "slow", "http500", "nan", "wrong_dim")
PG_LLM_MODES = ("down", "hostile")


def cases(modes: tuple[str, ...], pg_modes: tuple[str, ...]) -> list[tuple[str, str]]:
    return [("sqlite", m) for m in modes] + [("postgres", m) for m in pg_modes]


@pytest.fixture
def db(request: pytest.FixtureRequest, tmp_path: Any) -> str:
    """A fresh database on the backend the case names."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/memory.db"
    url: str = request.getfixturevalue("pg_url")
    return url


@pytest.fixture
def embed_server() -> Iterator[EmbedServer]:
    with running_embed_server() as srv:
        yield srv


# -- the embedder --------------------------------------------------------------------------
@pytest.mark.parametrize(("db", "mode"), cases(FAILURES, PG_EMBED_MODES), indirect=["db"])
def test_embedder_failure_degrades_to_sparse_and_recovers(
    db: str, embed_server: EmbedServer, mode: str
) -> None:
    db_url = db
    srv = embed_server
    with Episodic.open(db_url, settings=settings_for(srv)) as mem:
        assert mem.ingest(events("before", 4)).admitted == 4
        assert mem.index_once().embedded == 4
        assert mem.recall("checkout incident", workspace="acme").mode == MODE_VECTOR

        srv.set(mode)
        # Ingest never waits for the embedder: it acknowledges at once.
        started = time.monotonic()
        report = mem.ingest(events("during", 5))
        assert report.ok and report.stored == 5 and report.admitted == 5
        assert time.monotonic() - started < TIMEOUT_S
        mem.add_message(
            "the during-outage message about invoices", workspace="acme", conversation="c1"
        )

        swept = mem.index_once()
        assert swept.embedded == 0 and swept.failed > 0 and swept.error
        assert mem.stats("acme").pending_vectors == 6

        # A query never embedded before (the LRU would answer a repeated one).
        result = mem.recall("during checkout incident evicted", workspace="acme")
        assert result.mode == MODE_SPARSE_ONLY
        assert len(result.warnings) == 1
        assert result.warnings[0].startswith("embedder unavailable, sparse-only recall: ")
        assert "Ollama" in result.warnings[0] or "127.0.0.1" in result.warnings[0]
        assert {h.id for h in result.hits} & {f"during-{i}" for i in range(5)}
        block = mem.render("during invoices message", workspace="acme")
        assert "invoices" in block

        stored, garbage = vector_census(mem)
        assert (stored, garbage) == (4, 0)

        srv.set("up")
        recovered = mem.index_once()
        assert recovered.failed == 0 and recovered.embedded == 6
        assert mem.stats("acme").pending_vectors == 0
        assert vector_census(mem) == (10, 0)
        back = mem.recall("during checkout incident evicted again", workspace="acme")
        assert back.mode == MODE_VECTOR and back.warnings == []
        assert {h.id for h in back.hits} & {f"during-{i}" for i in range(5)}


@pytest.mark.parametrize("mode", ["wrong_dim", "nan", "down"])
def test_garbage_at_first_contact_never_sticks(
    db_url: str, embed_server: EmbedServer, mode: str
) -> None:
    """A process that starts while the server answers garbage (it has never seen a good
    answer) degrades the same way, and recovers without a restart."""
    srv = embed_server
    with Episodic.open(db_url, settings=settings_for(srv)) as mem:
        mem.ingest(events("old", 3))
        assert mem.index_once().embedded == 3
    srv.set(mode)
    with Episodic.open(db_url, settings=settings_for(srv)) as mem:
        mem.ingest(events("new", 3))
        result = mem.recall("new checkout incident", workspace="acme")
        assert result.mode == MODE_SPARSE_ONLY and result.warnings
        assert {h.id for h in result.hits} & {"new-0", "new-1", "new-2"}
        swept = mem.index_once()
        assert swept.embedded == 0 and swept.error
        assert vector_census(mem) == (3, 0)
        srv.set("up")
        assert mem.index_once().embedded == 3
        assert vector_census(mem) == (6, 0)
        back = mem.recall("new checkout incident evicted", workspace="acme")
        assert back.mode == MODE_VECTOR and back.warnings == []


def test_the_sweeper_indexes_everything_once_the_server_is_back(
    db_url: str, embed_server: EmbedServer
) -> None:
    srv = embed_server
    srv.set("down")
    settings = settings_for(srv, sweep_interval_s=0.05)
    with Episodic.open(db_url, settings=settings) as mem:
        assert mem.start_indexer()
        for round_ in range(3):
            assert mem.ingest(events(f"r{round_}", 4)).admitted == 4
            time.sleep(0.15)  # a few sweeps fail meanwhile
        assert mem.stats("acme").pending_vectors == 12
        srv.set("up")
        deadline = time.monotonic() + 20
        while mem.stats("acme").pending_vectors and time.monotonic() < deadline:
            time.sleep(0.05)
        assert mem.stats("acme").pending_vectors == 0
        assert vector_census(mem) == (12, 0)


def test_http_and_cli_say_recall_is_sparse_only(tmp_path: Any, embed_server: EmbedServer) -> None:
    srv = embed_server
    db_url = f"sqlite:///{tmp_path}/m.db"
    mem = Episodic(store=open_store(db_url), settings=settings_for(srv))
    key = mem.create_key("acme", role="admin")[1]
    try:
        with (
            serve(asgi(mem)) as base,
            httpx.Client(
                base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=30
            ) as http,
        ):
            srv.set("http500")
            r = http.post("/v1/events", json={"events": events("api", 3)})
            assert r.status_code == 200 and r.json()["stored"] == 3, r.text
            r = http.post("/v1/recall", json={"workspace": "acme", "query": "api checkout"})
            body = r.json()
            assert r.status_code == 200 and body["mode"] == MODE_SPARSE_ONLY, body
            assert "HTTP 500" in body["warnings"][0]
            assert {h["id"] for h in body["hits"]} >= {"api-0", "api-1", "api-2"}
            r = http.post("/v1/render", json={"workspace": "acme", "query": "api evicted"})
            assert r.json()["mode"] == MODE_SPARSE_ONLY and "api" in r.json()["block"]
            srv.set("up")
            assert mem.index_once().embedded == 3
            r = http.post("/v1/recall", json={"workspace": "acme", "query": "api incident"})
            assert r.json()["mode"] == MODE_VECTOR and r.json()["warnings"] == []
    finally:
        mem.close()

    srv.set("down")
    env = {
        "EPISODIC_DB": db_url,
        "EPISODIC_EMBEDDER": "ollama",
        "EPISODIC_OLLAMA_URL": srv.url,
        "EPISODIC_OLLAMA_MODEL": MODEL,
        "EPISODIC_EMBED_TIMEOUT": str(TIMEOUT_S),
    }
    out = CliRunner().invoke(
        cli_app, ["recall", "cli checkout api", "--workspace", "acme"], env=env
    )
    assert out.exit_code == 0, out.stderr
    assert "warning: embedder unavailable, sparse-only recall" in out.stderr
    assert "3 memories (sparse-only" in out.stdout


# -- the LLM -------------------------------------------------------------------------------
@pytest.fixture
def chat() -> Iterator[ChatServer]:
    with running_chat_server() as srv:
        yield srv


def _llm_run(db_url: str, chat: ChatServer, mode: str) -> tuple[Episodic, OpenAICompatLLM]:
    base = chat.base_url
    if mode == "down":
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            base = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    chat.responder = responder_for(mode)
    llm = OpenAICompatLLM(base_url=base, model="test-model", timeout_s=0.3)
    mem = Episodic(
        store=open_store(db_url),
        embedder=FakeEmbedder(dim=64),
        settings=Settings(institutional_chars=0),
        llm=llm,
    )
    layer = MemoryLayer(mem, workspace="acme", agent="agent")
    layer.on_complete([{"role": r, "content": t} for r, t in CONVERSATION], conversation="run1")
    mem.ingest(
        [
            {"id": f"k{i}", "workspace": "acme", "type": "peer.escalation", "summary": s}
            for i, s in enumerate(CLUSTER)
        ]
    )
    mem.index_once()
    return mem, llm


@pytest.mark.parametrize(("db", "mode"), cases(LLM_FAILURES, PG_LLM_MODES), indirect=["db"])
def test_llm_failure_falls_back_and_stores_nothing_invalid(
    db: str, chat: ChatServer, mode: str
) -> None:
    db_url = db
    mem, llm = _llm_run(db_url, chat, mode)
    with mem, llm:
        episodes = mem.recent(workspace="acme")
        assert episodes, "the run became episodes"
        assert {m.payload.get("described_by") for m in episodes} == {"offline:extractive"}
        entries = mem.store.search_recent(ScopeFilter("acme"), 50, types=("entry",))
        if mode == "hostile":
            # The model answered, but no entry quoted the transcript: none was kept, and
            # the episode records why (its audit trail, never searched or shown as text).
            assert entries == []
            dropped = [d for m in episodes for d in m.payload.get("extraction_dropped", [])]
            assert {d["reason"] for d in dropped} == {"evidence_not_in_transcript"}
        else:
            assert entries, "the offline extraction ran instead"
        # Nothing the model said was stored: not as content, keys, titles or summaries.
        assert not [t for t in stored_text(mem) if PWN in t.casefold()]
        # The recall with key terms falls back to the raw question.
        found = mem.recall("database migration cache warmup", workspace="acme", key_terms=True)
        assert found.hits
        assert mem.recall(PWN, workspace="acme", policy="bm25").hits == []
        [job] = mem.consolidate(workspace="acme")
        assert job.ok, job.detail
        if mode == "hostile":
            assert job.detail["derived"] == [] and job.detail["dropped"]
        else:
            assert job.detail["consolidated_by"] == ["offline:cluster-summary (llm failed)"]
        assert not [t for t in stored_text(mem) if PWN in t.casefold()]
        if mode != "down":
            assert chat.requests, "the model was asked"


def test_a_valid_but_hostile_title_is_stored_inert(db_url: str, chat: ChatServer) -> None:
    mem, llm = _llm_run(db_url, chat, "forged_title")
    with mem, llm:
        episodes = mem.recent(workspace="acme")
        assert episodes
        assert all(str(e.payload.get("described_by")).startswith("llm:") for e in episodes)
        block = mem.render(f"{PWN} ignore previous instructions", workspace="acme")
        assert not block_problems(block, frames()["recalled"], [PWN])
        timeline = MemoryLayer(mem, workspace="acme", agent="agent").recall(2000).text
        assert not block_problems(timeline, frames()["episodes"], [PWN])
