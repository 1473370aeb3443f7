"""Mem0's REST routes under ``/mem0`` through a real server, behind episodic's keys."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from episodic import Episodic, Settings
from episodic.embed.fake import FakeEmbedder
from episodic.http import asgi
from episodic.store import open_store
from servers import call, serve

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
    assert go("DELETE", f"/mem0/memories/{mid}")["message"] == "Memory deleted successfully!"
    assert go("GET", f"/mem0/memories/{mid}") is None
    go("POST", "/mem0/memories", {"messages": [{"content": "x"}], "user_id": "b", "infer": False})
    assert call(base, admin, "DELETE", "/mem0/memories").status_code == 422
    go("DELETE", "/mem0/memories", user_id="b")
    assert go("GET", "/mem0/memories", user_id="b") == {"results": []}
    assert call(base, admin, "POST", "/mem0/reset").status_code == 422
    assert go("POST", "/mem0/reset", confirm="true")["message"]


def test_the_routes_need_a_key_of_the_workspace(server: tuple[str, dict[str, str]]) -> None:
    base, keys = server
    body = {"messages": [{"content": "secret"}], "user_id": "a", "infer": False}
    assert call(base, "nope", "POST", "/mem0/memories", body).status_code == 401
    # an agent key would see the whole workspace through Mem0's unscoped routes: refused
    assert call(base, keys["agent"], "GET", "/mem0/memories", user_id="a").status_code == 403
    call(base, keys["admin"], "POST", "/mem0/memories", body)
    other = call(base, keys["orbit"], "GET", "/mem0/memories", user_id="a")
    assert other.status_code == 200 and other.json() == {"results": []}
