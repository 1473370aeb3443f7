"""Mem0's REST routes through a real server, behind episodic's keys: under ``/mem0``
always, and at Mem0's own root paths with ``serve --compat mem0``.

The requests are shaped as Mem0's self-hosted server documents them (mem0ai 2.0.18,
docs/open-source/features/rest-api.mdx and server/main.py, read 2026-08): ``POST
/memories`` ``{"messages": [{"role", "content"}], "user_id"}``, ``GET
/memories?user_id=``, ``POST /search`` ``{"query", "filters": {"user_id"}, "top_k"}``,
``PUT /memories/{id}`` ``{"text"}``, ``DELETE /memories?user_id=``, the key in
``X-API-Key``; the answers are the server's: ``{"results": [...]}``, a memory or null,
``{"message": "Memory deleted successfully"}``, ``"All relevant memories deleted"``,
``"All memories reset"``. Mem0's own Python client (``MemoryClient``) speaks the hosted
platform's API instead (``/v1/ping/``, ``/v3/memories/add/``, ``Authorization: Token``),
so it cannot be pointed at these routes."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from episodic import Episodic, Settings
from episodic.embed.fake import FakeEmbedder
from episodic.http import asgi
from episodic.store import open_store
from servers import call, serve
from test_serve import served

# Mem0's item keys (mem0ai 1.0.x, as in tests/test_compat_mem0.py).
ITEM = {"id", "memory", "hash", "metadata", "created_at", "updated_at"}


@pytest.fixture
def server(db_url: str) -> Iterator[tuple[str, dict[str, str]]]:
    mem = Episodic(store=open_store(db_url), embedder=FakeEmbedder(), settings=Settings())
    keys = {
        "admin": mem.create_key("acme", role="admin")[1],
        "agent": mem.create_key("acme", role="agent", agent="helper")[1],
        "orbit": mem.create_key("orbit", role="admin")[1],
    }
    with serve(asgi(mem)) as base:
        yield base, keys
    mem.close()


def test_mem0s_routes_answer_with_mem0s_bodies(server: tuple[str, dict[str, str]]) -> None:
    base, keys = server
    admin = keys["admin"]

    def go(method: str, path: str, body: Any = None, **params: Any) -> Any:
        r = call(base, admin, method, path, body, **params)
        assert r.status_code == 200, r.text
        return r.json()

    added = go(
        "POST",
        "/mem0/memories",
        {
            "messages": [{"role": "user", "content": "I'm vegetarian"}],
            "user_id": "alice",
            "metadata": {"k": "v"},
            "infer": False,
        },
    )
    assert [e["event"] for e in added["results"]] == ["ADD"]
    mid = added["results"][0]["id"]
    listed = go("GET", "/mem0/memories", user_id="alice")["results"]
    assert [i["id"] for i in listed] == [mid] and set(listed[0]) >= ITEM
    assert "score" not in listed[0]
    assert go("GET", f"/mem0/memories/{mid}")["metadata"] == {"k": "v"}
    found = go("POST", "/mem0/search", {"query": "vegetarian", "user_id": "alice"})["results"]
    assert found[0]["id"] == mid and "score" in found[0]
    assert go("PUT", f"/mem0/memories/{mid}", {"text": "I'm vegan"}) == {
        "message": "Memory updated successfully!"
    }
    events = [h["event"] for h in go("GET", f"/mem0/memories/{mid}/history")]
    assert events == ["ADD", "UPDATE"]
    assert go("DELETE", f"/mem0/memories/{mid}") == {"message": "Memory deleted successfully"}
    assert go("GET", f"/mem0/memories/{mid}") is None
    go("POST", "/mem0/memories", {"messages": [{"content": "x"}], "user_id": "b", "infer": False})
    assert call(base, admin, "DELETE", "/mem0/memories").status_code == 422
    assert go("DELETE", "/mem0/memories", user_id="b") == {
        "message": "All relevant memories deleted"
    }
    assert go("GET", "/mem0/memories", user_id="b") == {"results": []}
    assert call(base, admin, "POST", "/mem0/reset").status_code == 422
    assert go("POST", "/mem0/reset", confirm="true") == {"message": "All memories reset"}


def test_the_routes_need_a_key_of_the_workspace(server: tuple[str, dict[str, str]]) -> None:
    base, keys = server
    body = {"messages": [{"content": "secret"}], "user_id": "a", "infer": False}
    assert call(base, "nope", "POST", "/mem0/memories", body).status_code == 401
    # an agent key would see the whole workspace through Mem0's unscoped routes: refused
    assert call(base, keys["agent"], "GET", "/mem0/memories", user_id="a").status_code == 403
    call(base, keys["admin"], "POST", "/mem0/memories", body)
    other = call(base, keys["orbit"], "GET", "/mem0/memories", user_id="a")
    assert other.status_code == 200 and other.json() == {"results": []}


def _mem0(base: str, key: str, method: str, path: str, body: Any = None, **params: Any) -> Any:
    """One request as a program written for Mem0's server sends it: its key in
    X-API-Key."""
    return httpx.request(
        method,
        f"{base}{path}",
        json=body,
        params=params or None,
        headers={"X-API-Key": key},
        timeout=30,
    )


def _mem0_script(base: str, key: str) -> None:
    """Mem0's server's documented calls, at its own paths, with its answers."""

    def ok(method: str, path: str, body: Any = None, **params: Any) -> Any:
        r = _mem0(base, key, method, path, body, **params)
        assert r.status_code == 200, r.text
        return r.json()

    added = ok(
        "POST",
        "/memories",
        {
            "messages": [{"role": "user", "content": "I love fresh vegetable pizza."}],
            "user_id": "alice",
            "infer": False,
        },
    )
    [event] = added["results"]
    assert (event["event"], event["memory"]) == ("ADD", "I love fresh vegetable pizza.")
    mid = event["id"]
    assert [i["id"] for i in ok("GET", "/memories", user_id="alice")["results"]] == [mid]
    assert ok("GET", f"/memories/{mid}")["user_id"] == "alice"
    found = ok(
        "POST", "/search", {"query": "vegetable", "filters": {"user_id": "alice"}, "top_k": 5}
    )
    assert [r["id"] for r in found["results"]] == [mid] and "score" in found["results"][0]
    # the deprecated top-level id is still taken, as Mem0's server takes it
    assert ok("POST", "/search", {"query": "vegetable", "user_id": "alice"})["results"]
    assert ok("PUT", f"/memories/{mid}", {"text": "I love margherita pizza."}) == {
        "message": "Memory updated successfully!"
    }
    assert [h["event"] for h in ok("GET", f"/memories/{mid}/history")] == ["ADD", "UPDATE"]
    assert ok("DELETE", f"/memories/{mid}") == {"message": "Memory deleted successfully"}
    assert ok("GET", f"/memories/{mid}") is None
    ok(
        "POST",
        "/memories",
        {"messages": [{"role": "user", "content": "x y z"}], "run_id": "r", "infer": False},
    )
    assert ok("DELETE", "/memories", run_id="r") == {"message": "All relevant memories deleted"}
    assert ok("GET", "/memories", run_id="r") == {"results": []}


def test_with_compat_mem0_the_routes_answer_at_mem0s_own_paths(db_url: str) -> None:
    mem = Episodic(store=open_store(db_url), embedder=FakeEmbedder(), settings=Settings())
    admin = mem.create_key("acme", role="admin")[1]
    agent = mem.create_key("acme", role="agent", agent="helper")[1]
    with serve(asgi(mem, compat=["mem0"])) as base:
        _mem0_script(base, admin)
        # the same keys and refusals as under /mem0
        assert _mem0(base, "nope", "GET", "/memories", user_id="a").status_code == 401
        assert _mem0(base, agent, "GET", "/memories", user_id="a").status_code == 403
        assert _mem0(base, admin, "POST", "/reset").status_code == 422
        # /v1 is episodic's own and unchanged
        r = call(base, admin, "POST", "/v1/recall", {"query": "pizza"})
        assert r.status_code == 200
    with serve(asgi(mem)) as base:  # without the flag the root paths are not served
        assert _mem0(base, admin, "GET", "/memories", user_id="a").status_code == 404
        assert _mem0(base, admin, "GET", "/mem0/memories", user_id="a").status_code == 200
    mem.close()


def test_mem0_options_episodic_lacks_are_refused_by_name(
    server: tuple[str, dict[str, str]],
) -> None:
    base, keys = server
    admin = keys["admin"]
    msg = [{"role": "user", "content": "I'm vegetarian", "name": "Alice"}]
    body = {"messages": msg, "user_id": "a", "infer": None}
    assert call(base, admin, "POST", "/mem0/memories", body).status_code == 200
    for extra in ({"expiration_date": "2027-01-01"}, {"memory_type": "procedural_memory"}):
        r = call(base, admin, "POST", "/mem0/memories", {**body, **extra})
        assert r.status_code == 422 and next(iter(extra)) in r.text
    r = call(base, admin, "POST", "/mem0/search", {"query": "food", "explain": True})
    assert r.status_code == 422 and "explain" in r.text
    r = call(base, admin, "POST", "/mem0/search", {"query": "food", "show_expired": True})
    assert r.status_code == 200


def test_episodic_serve_compat_mem0(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path}/compat.db"
    with Episodic.open(db, settings=Settings(embedder="none")) as mem:
        _, key = mem.create_key("acme", role="admin")
    env = {"EPISODIC_EMBEDDER": "none"}
    with served(db, "--compat", "mem0", env=env) as base:
        _mem0_script(base, key)
    with served(db, "--workers", "2", "--compat", "mem0", env=env) as base:
        for _ in range(4):  # either worker process answers at Mem0's paths
            assert _mem0(base, key, "GET", "/memories", user_id="a").status_code == 200
    wrong = subprocess.run(
        [str(Path(sys.executable).with_name("episodic")), "--db", db, "serve", "--compat", "zep"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert wrong.returncode == 2 and "--compat" in wrong.stderr and "mem0" in wrong.stderr
